#!/usr/bin/env bash
# Times status, push and clone of N records that each hold one small asset (512 random
# bytes beside the record file), for each N given (default 2000): what grows with the
# number of assets. Uses $RECSYNC, by default the release build
# (swift build -c release --product recsync).
#
#   Benchmarks/assets.sh [N...]
set -euo pipefail
cd "$(dirname "$0")/.."
bench_name=assets
. Benchmarks/small-bench.sh

printf '%-8s %10s %8s %10s %10s %8s %12s\n' records status-new push status-1 status-2 clone clone-status
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(2000)
for n in "${sizes[@]}"; do
    rm -rf "$work/store.git" "$work/ws" "$work/ws2"
    "$RECSYNC" -q store init "$work/store.git" > /dev/null
    "$RECSYNC" -q clone "$work/store.git" "$work/ws" > /dev/null
    "$RECSYNC" -q -C "$work/ws" zone create photos > /dev/null
    python3 - "$work/ws/private/photos" "$n" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    os.makedirs(f"{d}/r{i:06d}.assets", exist_ok=True)
    with open(f"{d}/r{i:06d}.assets/photo", "wb") as f: f.write(os.urandom(512))
    with open(f"{d}/r{i:06d}.json", "w") as f: f.write('{"n": %d, "photo": {"$asset": "photo"}}\n' % i)
PY
    s0=$(seconds "$RECSYNC" -q -C "$work/ws" status)
    p=$(seconds "$RECSYNC" -q -C "$work/ws" push)
    s1=$(seconds "$RECSYNC" -q -C "$work/ws" status)
    s2=$(seconds "$RECSYNC" -q -C "$work/ws" status)
    c=$(seconds "$RECSYNC" -q clone "$work/store.git" "$work/ws2")
    s3=$(seconds "$RECSYNC" -q -C "$work/ws2" status)
    printf '%-8s %10s %8s %10s %10s %8s %12s\n' "$n" "$s0" "$p" "$s1" "$s2" "$c" "$s3"
done

#!/usr/bin/env bash
# Times `recsync import` of N JSON lines (then `recsync push`) against writing the same N
# record files by hand (a python loop) and `recsync push`, for each N given (default
# 10000 100000). Uses the release build: swift build -c release --product recsync.
#
#   Benchmarks/import.sh [N...]
set -euo pipefail
cd "$(dirname "$0")/.."
bench_name=import
. Benchmarks/small-bench.sh

printf '%-8s %-28s %8s %8s %8s\n' records method write push total
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000)
for n in "${sizes[@]}"; do
    python3 - "$n" > "$work/data.jsonl" <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"id": f"r{i:06d}", "title": f"item {i}", "n": i, "done": i % 2 == 0}))
PY
    for method in import by-hand; do
        rm -rf "$work/store.git" "$work/ws"
        "$RECSYNC" store init "$work/store.git" > /dev/null 2>&1
        "$RECSYNC" clone "$work/store.git" "$work/ws" > /dev/null 2>&1
        if [ "$method" = import ]; then
            w=$(seconds "$RECSYNC" -C "$work/ws" import items "$work/data.jsonl" --id id)
        else
            w=$(seconds python3 - "$work/data.jsonl" "$work/ws/private/items" <<'PY'
import json, os, sys
out = sys.argv[2]
os.makedirs(out, exist_ok=True)
for line in open(sys.argv[1]):
    o = json.loads(line)
    name = o.pop("id")
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(o, f, indent=2, sort_keys=True)
        f.write("\n")
PY
)
        fi
        p=$(seconds "$RECSYNC" -C "$work/ws" push)
        printf '%-8s %-28s %8s %8s %8s\n' "$n" "$method" "$w" "$p" "$(python3 -c "print(f'{$w+$p:.2f}')")"
    done
done

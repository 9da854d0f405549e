#!/usr/bin/env bash
# A pull of N valid new records that landed in one commit (plain git, say an import on another
# machine), against a clone of the same store: the pull should cost about what the clone does,
# since both write N records.
#
# usage: Benchmarks/bulk-pull.sh [N ...]        (default: 10000 40000)
#   RECSYNC=path/to/recsync  RECSYNC_BENCH=path/to/recsync-bench
#   default: the debug build in .build/debug (`swift build` first); for a release build,
#   `swift build -c release --product recsync --product recsync-bench` and
#   RECSYNC=.build/release/recsync RECSYNC_BENCH=.build/release/recsync-bench.
# Prints one line per N: the pull, the clone, and their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${*:-10000 40000}
recsync=$(realpath "${RECSYNC:-.build/debug/recsync}")
bench=$(realpath "${RECSYNC_BENCH:-.build/debug/recsync-bench}")
work="$(mktemp -d "${TMPDIR:-/tmp}/recsync-bulk-pull.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export RECSYNC_USER=bench NO_COLOR=1 GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

# secs CMD...: the command's wall time in seconds (after a sync, so earlier writes do not count).
secs() {
  local s e
  sync
  s=$(date +%s%N)
  "$@" >/dev/null 2>"$work/err" || { echo "bulk-pull: failed: $*" >&2; tail -5 "$work/err" >&2; exit 1; }
  e=$(date +%s%N)
  awk -v a="$s" -v b="$e" 'BEGIN{printf "%.2f", (b-a)/1e9}'
}

# add STORE N: one commit adding N valid records to zone0, each at the path its name belongs at
# (StoreLayout.fanout: FNV-1a 32, low byte in hex).
add() {
  python3 - "$2" <<'EOF' | git -C "$1" fast-import --quiet
import sys
n = int(sys.argv[1])
out = sys.stdout
out.write("commit refs/heads/main\ncommitter importer <importer@example.org> 1700000000 +0000\n")
msg = "import records\n"
out.write(f"data {len(msg)}\n{msg}from refs/heads/main^0\n")
for i in range(n):
    name = f"new{i:07d}"
    h = 0x811C9DC5
    for b in name.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    body = '{"fields": {"v": {"type": "STRING", "value": "item %d"}}, "recordName": "%s", "recordType": "Item"}\n' % (i, name)
    out.write(f"M 100644 inline zones/bench/zone0/records/{h & 0xFF:02x}/{name}\ndata {len(body.encode())}\n{body}")
out.write("\n")
EOF
}

echo "recsync: $recsync ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources || echo ', modified'))"
for n in $sizes; do
  store="$work/store-$n.git"
  "$bench" --make-store "$store" --records 1000 --zones 2 >/dev/null
  "$recsync" clone "$store" "$work/pulled-$n" >/dev/null 2>&1
  add "$store" "$n"
  pull=$(secs "$recsync" -C "$work/pulled-$n" pull)
  written=$(find "$work/pulled-$n/private/zone0" -maxdepth 1 -name 'new*.json' | wc -l)
  [ "$written" = "$n" ] || { echo "bulk-pull: the pull wrote $written of $n records" >&2; exit 1; }
  clone=$(secs "$recsync" clone "$store" "$work/cloned-$n")
  awk -v n="$n" -v p="$pull" -v c="$clone" 'BEGIN{printf "N=%d: pull %.2f s, clone %.2f s, pull/clone %.2f\n", n, p, c, p/c}'
  rm -rf "$work/pulled-$n" "$work/cloned-$n" "$store"
done

#!/usr/bin/env bash
# Pulls of a zone in which someone planted N entries that are not records (plain git, one
# commit): the first pull, a second one with nothing changed, and a third after one of the
# entries was fixed on the store. The first should grow with N, the others should not.
#
# usage: Benchmarks/unreadable.sh [N ...]        (default: 10000 20000 40000)
#   RECSYNC=path/to/recsync  RECSYNC_BENCH=path/to/recsync-bench
#   default: the debug build in .build/debug (`swift build` first); a release build is
#   `swift build -c release --product recsync --product recsync-bench` and
#   RECSYNC=.build/release/recsync RECSYNC_BENCH=.build/release/recsync-bench.
# Prints one line per N: the three pull times and the size of the zone's retry list.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${*:-10000 20000 40000}
recsync=$(realpath "${RECSYNC:-.build/debug/recsync}")
bench=$(realpath "${RECSYNC_BENCH:-.build/debug/recsync-bench}")
work="$(mktemp -d "${TMPDIR:-/tmp}/recsync-unreadable.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export RECSYNC_USER=bench NO_COLOR=1 GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=mallory GIT_AUTHOR_EMAIL=mallory@example.org GIT_COMMITTER_NAME=mallory GIT_COMMITTER_EMAIL=mallory@example.org

# t CMD...: the command's wall time in seconds (after a sync, so earlier writes do not count).
# A pull that reports unreadable records still succeeds; any other failure stops the script.
t() {
  local s e
  sync
  s=$(date +%s%N)
  "$@" >/dev/null 2>"$work/err" || { echo "unreadable: failed: $*" >&2; tail -5 "$work/err" >&2; exit 1; }
  e=$(date +%s%N)
  awk -v a="$s" -v b="$e" 'BEGIN{printf "%.2f s", (b-a)/1e9}'
}

# plant STORE N: one commit adding N blobs that are not record JSON to zone0's records, each
# at the path its name belongs at (StoreLayout.fanout: FNV-1a 32, low byte in hex).
plant() {
  python3 - "$2" <<'EOF' | git -C "$1" fast-import --quiet
import sys
n = int(sys.argv[1])
out = sys.stdout
out.write("commit refs/heads/main\ncommitter mallory <mallory@example.org> 1700000000 +0000\n")
msg = b"plant unreadable entries\n"
out.write(f"data {len(msg)}\n{msg.decode()}from refs/heads/main^0\n")
for i in range(n):
    name = f"bad{i:07d}"
    h = 0x811C9DC5
    for b in name.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    body = f"not a record {i}\n"
    out.write(f"M 100644 inline zones/bench/zone0/records/{h & 0xFF:02x}/{name}\ndata {len(body)}\n{body}")
out.write("\n")
EOF
}

# fix STORE: one more commit that turns bad0000000 into a valid record.
fix() {
  python3 - <<'EOF' | git -C "$1" fast-import --quiet
import sys
name = "bad0000000"
h = 0x811C9DC5
for b in name.encode():
    h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
body = '{"fields": {"v": {"type": "STRING", "value": "fixed"}}, "recordName": "bad0000000", "recordType": "Item"}\n'
sys.stdout.write("commit refs/heads/main\ncommitter mallory <mallory@example.org> 1700000001 +0000\n")
msg = "fix one entry\n"
sys.stdout.write(f"data {len(msg)}\n{msg}from refs/heads/main^0\n")
sys.stdout.write(f"M 100644 inline zones/bench/zone0/records/{h & 0xFF:02x}/{name}\ndata {len(body.encode())}\n{body}\n")
EOF
}

echo "recsync: $recsync ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources || echo ', modified'))"
for n in $sizes; do
  store="$work/store-$n.git" ws="$work/ws-$n"
  "$bench" --make-store "$store" --records 1000 --zones 2 >/dev/null
  "$recsync" clone "$store" "$ws" >/dev/null 2>&1
  plant "$store" "$n"
  first=$(t "$recsync" -C "$ws" pull)
  warned=$(grep -c "bad0" "$work/err" || true)
  second=$(t "$recsync" -C "$ws" pull)
  fix "$store"
  third=$(t "$recsync" -C "$ws" pull)
  got=$(test -f "$ws/private/zone0/bad0000000.json" && echo arrived || echo MISSING)
  list=$(find "$ws/.recsync/tokens" -name '*.retry' -exec wc -l {} + | awk 'END{print $1}')
  echo "N=$n: first pull $first ($warned warnings), second pull $second, pull after fixing one $third (fixed record $got), retry list ${list:-0} lines"
  rm -rf "$store" "$ws"
done

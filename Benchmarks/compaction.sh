#!/usr/bin/env bash
# `recsync store compact` on a store with a long history: size on disk, clone time and
# incremental pull time, before and after.
#
# usage: Benchmarks/compaction.sh [RECORDS] [COMMITS] [KEEP]
#   defaults: 1000000 records, 10000 one-record commits after them, --keep-last 100
# The store is made by recsync-bench --make-store; the changes pulled are 100 commits of
# recsync-store-writer. git gc --prune=now runs before the first measure and after compacting
# (space comes back only then). At a million records expect ~10 min to make the store and
# ~2-3 min per recsync clone (two million files written durably), plus the time ext4 takes
# to delete them at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
records=${1:-1000000}
commits=${2:-10000}
keep=${3:-100}

swift build -c release --product recsync >&2
swift build -c release --product recsync-bench >&2
swift build -c release --product recsync-store-writer >&2
bin="$(swift build -c release --show-bin-path)"
recsync="$bin/recsync"
work="$(mktemp -d "${TMPDIR:-/tmp}/recsync-compaction.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export RECSYNC_USER=bench NO_COLOR=1 GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
store="$work/store.git"

# t CMD...: the command's wall time in seconds (after a sync, so earlier writes do not count)
t() {
  local s e
  sync
  s=$(date +%s%N)
  "$@" >/dev/null 2>"$work/err" || { echo "compaction: failed: $*" >&2; cat "$work/err" >&2; exit 1; }
  e=$(date +%s%N)
  awk -v a="$s" -v b="$e" 'BEGIN{printf "%.2f s", (b-a)/1e9}'
}
# hundred SEED: 100 more commits in the store (one record each, by a second writer)
hundred() { "$bin/recsync-store-writer" "$store" bench bench zone0 100 50 "$1" >/dev/null; }
size() { du -sb "$store" | cut -f1 | awk '{printf "%.1f MB", $1/1e6}'; }

echo "== making the store: $records records, then $commits one-record commits" >&2
echo "make store: $(t "$bin/recsync-bench" --make-store "$store" --records "$records" --zones 10 --commits "$commits")"
echo "git gc --prune=now: $(t git -C "$store" gc -q --prune=now)"
echo "before: $(git -C "$store" rev-list --count main) commits, $(size) on disk"
echo "before: git clone --bare --no-local: $(t git clone -q --bare --no-local "$store" "$work/bare-before")"
rm -rf "$work/bare-before"
echo "before: recsync clone: $(t "$recsync" clone "$store" "$work/before")"
hundred 1
echo "before: pull of 100 commits: $(t "$recsync" -C "$work/before" pull)"

echo "store compact --keep-last $keep: $(t "$recsync" store compact --keep-last "$keep" --yes "$store")"
echo "git gc --prune=now: $(t git -C "$store" gc -q --prune=now)"
echo "after: $(git -C "$store" rev-list --count main) commits, $(size) on disk"
echo "after: git clone --bare --no-local: $(t git clone -q --bare --no-local "$store" "$work/bare-after")"
rm -rf "$work/bare-after"
hundred 2
echo "after: pull of 100 commits, workspace cloned before compacting: $(t "$recsync" -C "$work/before" pull)"
echo "after: recsync clone: $(t "$recsync" clone "$store" "$work/after")"
hundred 3
echo "after: pull of 100 commits: $(t "$recsync" -C "$work/after" pull)"
git -C "$store" fsck --strict --no-dangling >/dev/null 2>&1 && echo "git fsck --strict: clean"
echo "removing $work (that takes a while)" >&2

#!/usr/bin/env bash
# SIGKILLs `recsync push`, `pull` and `clone` at random moments on a local store, each kill
# followed by a clean run of the same command that must succeed; checks that nothing was lost
# (`make kill-loop KILLS=1000`).
#
# One writer workspace (alice's laptop) edits, creates and deletes records and pushes; a
# second (her phone) pulls; clones start from nothing. After each kill the same command runs
# again undisturbed and must exit 0. Every 25 kills, and at the end: the laptop's status is
# clean (every edit acknowledged), the phone and a fresh clone hold exactly the laptop's
# records, and `git fsck --strict` passes on the store. Prints kills landed per command
# (a kill that came after the command had exited does not count) and problems (must be 0).
set -uo pipefail
cd "$(dirname "$0")/.."

KILLS=${KILLS:-1000}
SEED=${SEED:-$RANDOM}
SWIFT=${SWIFT:-swift}
RANDOM=$SEED
if [ -z "${RECSYNC:-}" ]; then
  "$SWIFT" build --product recsync >/dev/null || exit 1
  RECSYNC="$("$SWIFT" build --show-bin-path)/recsync"
fi
# Given relative to where the script was started, or to the checkout: the loop runs elsewhere.
if [ -x "$OLDPWD/$RECSYNC" ] && [ "${RECSYNC#/}" = "$RECSYNC" ]; then RECSYNC="$OLDPWD/$RECSYNC"; fi
if [ ! -x "$RECSYNC" ]; then echo "kill-loop: RECSYNC=$RECSYNC is not an executable recsync" >&2; exit 2; fi
RECSYNC="$(realpath "$RECSYNC")"

dir=$(mktemp -d "${TMPDIR:-/tmp}/recsync-kill-loop.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir"
export RECSYNC_USER=alice NO_COLOR=1 HOME="$dir"
rs() { "$RECSYNC" "$@"; }

problems=0
problem() { problems=$((problems + 1)); echo "kill-loop: problem: $*" >&2; }

rs store init store.git >/dev/null
rs clone store.git laptop >/dev/null
rs -C laptop zone create notes >/dev/null
rs -C laptop zone create tasks >/dev/null
for i in $(seq 1 300); do
  printf '{"n": %d, "text": "record %d of the seed"}' "$i" "$i" > "laptop/private/$([ $((i % 2)) = 0 ] && echo notes || echo tasks)/r$i.json"
done
rs -C laptop push >/dev/null || { echo "kill-loop: the seed push failed" >&2; exit 1; }
rs clone store.git phone >/dev/null

# A few edits on the laptop: changed, new and deleted records.
edit() {
  local n=$((RANDOM % 40 + 1)) k zone
  for _ in $(seq 1 "$n"); do
    k=$((RANDOM % 600 + 1)); zone=$([ $((k % 2)) = 0 ] && echo notes || echo tasks)
    if [ $((RANDOM % 5)) = 0 ]; then rm -f "laptop/private/$zone/r$k.json"
    else printf '{"n": %d, "edit": %d}' "$k" "$RANDOM" > "laptop/private/$zone/r$k.json"; fi
  done
}

# Starts `recsync ARGS`, kills it after a random delay (0 to $1 ms); 0 if the kill landed.
kill_at_random() {
  local max=$1; shift
  "$RECSYNC" "$@" >/dev/null 2>&1 &
  local pid=$!
  sleep "$(printf '0.%03d' $((RANDOM % max)))"
  if kill -9 "$pid" 2>/dev/null; then wait "$pid" 2>/dev/null; return 0; fi
  wait "$pid" 2>/dev/null
  return 1
}

# The records of a workspace as data (the laptop's files are written by hand, pulled ones
# are pretty-printed): one line per file, its path and its JSON with sorted keys.
records() {
  python3 - "$1" <<'PY'
import json, os, sys
root = sys.argv[1]
for d, dirs, files in sorted(os.walk(os.path.join(root, "private"))):
    dirs[:] = sorted(x for x in dirs if not x.startswith("."))
    for f in sorted(files):
        if f.endswith(".json"):
            p = os.path.join(d, f)
            with open(p) as h: print(os.path.relpath(p, root), json.dumps(json.load(h), sort_keys=True))
PY
}

check() {
  local st
  st=$(rs -C laptop status --json 2>&1) || problem "status failed: $st"
  echo "$st" | grep -q '"clean" : true\|"clean": true' || problem "the laptop has unacknowledged edits after a clean push: $st"
  rs -C phone pull >/dev/null 2>&1 || problem "the phone's pull failed"
  rm -rf fresh; rs clone store.git fresh >/dev/null 2>&1 || problem "a fresh clone failed"
  [ "$(records laptop)" = "$(records phone)" ] || { problem "the phone differs from the laptop"; diff <(records laptop) <(records phone) | head -5 >&2; }
  [ "$(records laptop)" = "$(records fresh)" ] || problem "a fresh clone differs from the laptop"
  git -C store.git fsck --strict >/dev/null 2>&1 || problem "git fsck --strict failed on the store"
}

declare -A landed=([push]=0 [pull]=0 [clone]=0) tried=([push]=0 [pull]=0 [clone]=0)
kills=0 started=$(date +%s)
while [ "$kills" -lt "$KILLS" ]; do
  case $((RANDOM % 3)) in
    0) cmd=push; edit; args=(-C laptop push); max=200 ;;
    1) cmd=pull; edit; rs -C laptop push >/dev/null 2>&1 || problem "a push before a pull failed"; args=(-C phone pull); max=200 ;;
    *) cmd=clone; rm -rf partial; args=(clone store.git partial); max=300 ;;
  esac
  tried[$cmd]=$((tried[$cmd] + 1))
  if kill_at_random "$max" "${args[@]}"; then landed[$cmd]=$((landed[$cmd] + 1)); kills=$((kills + 1)); fi
  # The clean run: the same command, undisturbed. A killed clone that wrote its config is a
  # workspace, which a pull finishes; one killed before that is cloned again in place.
  if [ "$cmd" = clone ]; then
    if [ -f partial/.recsync/config ]; then
      out=$(rs -C partial pull 2>&1) || problem "a killed clone's workspace did not pull: $out"
    else
      out=$(rs clone store.git partial 2>&1) || problem "cloning again where a clone was killed failed: $out"
    fi
    [ "$(records partial)" = "$(records laptop)" ] || problem "a clone finished after a kill differs from the laptop"
  else
    out=$(rs "${args[@]}" 2>&1) || problem "recsync ${args[*]} after a kill failed: $out"
  fi
  if [ $((kills % 25)) = 0 ] && [ "$kills" -gt 0 ]; then check; fi
done
check
echo "kill-loop (seed $SEED): $kills kills in $(( $(date +%s) - started )) s;" \
  "landed: push ${landed[push]}/${tried[push]}, pull ${landed[pull]}/${tried[pull]}, clone ${landed[clone]}/${tried[clone]}; problems: $problems"
[ "$problems" = 0 ]

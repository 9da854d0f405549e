#!/usr/bin/env bash
# The command-line walkthrough (`make demo`): one store, alice's laptop and phone, a conflict
# settled by a field-level merge. Everything happens in a temp dir, removed at the end
# (KEEP=1 keeps it and prints where it is).
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
echo "== building recsync"
"$SWIFT" build --product recsync
bin="$("$SWIFT" build --show-bin-path)/recsync"

demo=$(mktemp -d "${TMPDIR:-/tmp}/recsync-demo.XXXXXX")
if [ -n "${KEEP:-}" ]; then
  trap 'echo "demo: kept $demo"' EXIT
else
  trap 'rm -rf "$demo"' EXIT
fi
cd "$demo"
export RECSYNC_USER=alice

bold='' plain=''
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m' plain=$'\033[0m'; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
run() { printf '$ recsync %s\n' "$*"; "$bin" "$@"; }
# Pipes JSON into `recsync put`, showing the whole command line.
put() {
  local json=$1; shift
  printf "$ echo '%s' | recsync put %s\n" "$json" "$*"
  printf '%s\n' "$json" | "$bin" put "$@"
}
# Runs a command that must exit with the given status.
expect() {
  local want=$1; shift
  printf '$ recsync %s\n' "$*"
  set +e; "$bin" "$@"; local got=$?; set -e
  printf '(exit status %s)\n' "$got"
  if [ "$got" -ne "$want" ]; then echo "demo: expected exit status $want" >&2; exit 1; fi
}

step "a store: a bare git repository"
run store init notes.git

step "alice clones it twice: her laptop and her phone"
run clone notes.git laptop
run clone notes.git phone

step "on the laptop: a zone and two records"
cd "$demo/laptop"
run zone create notes --default-type Note
put '{"title": "Groceries", "items": ["milk", "eggs"], "done": false}' notes/groceries
put '{"title": "Trip", "when": {"$date": "2026-12-20T09:00:00.000Z"}}' notes/trip --type Event
run status
run push

step "the phone pulls them"
cd "$demo/phone"
run pull
echo "$ cat private/notes/groceries.json"; cat private/notes/groceries.json

step "both edit the same record: the laptop its items, the phone its title"
cd "$demo/laptop"
put '{"title": "Groceries", "items": ["milk", "eggs", "bread"], "done": false}' notes/groceries
cd "$demo/phone"
put '{"title": "Groceries for Sunday", "items": ["milk", "eggs"], "done": false}' notes/groceries

step "the laptop pushes first; the phone's push is refused with a conflict (exit status 2)"
cd "$demo/laptop"
run push
cd "$demo/phone"
expect 2 push

step "what the phone sees"
run status
run diff

step "a field-level three-way merge: each side changed a different field"
run resolve --merge
echo "$ cat private/notes/groceries.json"; cat private/notes/groceries.json
run push

step "the laptop pulls the merge"
cd "$demo/laptop"
run pull
echo "$ cat private/notes/groceries.json"; cat private/notes/groceries.json
run status

step "the store's history is its change log"
run log
run log notes/groceries

echo
if [ -n "${KEEP:-}" ]; then echo "demo: done"; else echo "demo: done (in $demo, removed on exit)"; fi

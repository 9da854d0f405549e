#!/usr/bin/env bash
# Regenerates what is generated from the command definitions and committed:
#   man/recsync.1                      swift-argument-parser's GenerateManual plugin (fixed --date),
#                                      then scripts/man-postprocess.awk with man/sections.mdoc
#   completions/recsync.bash, _recsync, recsync.fish   recsync --generate-completion-script
# With --check, generates into a temp dir and fails (listing the diff) when the committed files
# are stale. SWIFT and SCRATCH (the build dir, default .build) can be set in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
SCRATCH=${SCRATCH:-.build}
MAN_DATE=2026-01-01
check=false
[ "${1:-}" = "--check" ] && check=true

out=.
if $check; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out/man" "$out/completions"

# The plugin builds the package's products (debug, like `make test`) and runs generate-manual.
"$SWIFT" package --scratch-path "$SCRATCH" plugin generate-manual --configuration debug --date "$MAN_DATE" >/dev/null
awk -v sections=man/sections.mdoc -f scripts/man-postprocess.awk \
  "$SCRATCH/plugins/GenerateManual/outputs/recsync/recsync.1" > "$out/man/recsync.1"
# The page must render without a warning (`man -l` prints mdoc's to stderr).
if command -v man >/dev/null 2>&1; then
  warnings=$(man -l "$out/man/recsync.1" 2>&1 >/dev/null || true)
  if [ -n "$warnings" ]; then
    echo "generated: man/recsync.1 renders with warnings:" >&2
    echo "$warnings" >&2
    exit 1
  fi
fi

recsync="$("$SWIFT" build --scratch-path "$SCRATCH" --show-bin-path)/recsync"
# Completion scripts depend on nothing in the environment but the shell named.
"$recsync" --generate-completion-script bash > "$out/completions/recsync.bash"
"$recsync" --generate-completion-script zsh > "$out/completions/_recsync"
"$recsync" --generate-completion-script fish > "$out/completions/recsync.fish"

if $check; then
  stale=0
  for f in man/recsync.1 completions/recsync.bash completions/_recsync completions/recsync.fish; do
    if ! diff -u "$f" "$out/$f"; then
      echo "check-generated: $f is stale" >&2
      stale=1
    fi
  done
  if [ $stale -ne 0 ]; then
    echo "check-generated: run 'make generated' and commit the result" >&2
    exit 1
  fi
  echo "check-generated: man page and completions are current"
else
  echo "generated man/recsync.1 and completions/"
fi

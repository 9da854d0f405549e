# Sourced by the small benchmarks (import.sh, assets.sh) after they set $bench_name: the
# release binary as $RECSYNC, a fixed identity, a work directory $work removed on exit, and
# `seconds CMD...`, the wall time of CMD (its stderr, hints, shown only if it fails).
RECSYNC=${RECSYNC:-$PWD/.build/release/recsync}
[ -x "$RECSYNC" ] || { echo "build it first: swift build -c release --product recsync" >&2; exit 1; }
export RECSYNC_USER=bench NO_COLOR=1
work=$(mktemp -d "${TMPDIR:-/tmp}/recsync-$bench_name-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

seconds() { python3 -c 'import subprocess, sys, time
t = time.time()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if r.returncode:
    sys.stderr.write(r.stderr.decode()); sys.exit(r.returncode)
print(f"{time.time() - t:.2f}")' "$@"; }

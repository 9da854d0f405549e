#!/usr/bin/env bash
# ref-contention.sh: how much one shared ref costs concurrent writers, with plain git only.
#
# Usage: Benchmarks/ref-contention.sh [--writers W] [--pushes P] [--zones Z] [--files F] [--idle-refs N]
#                                     [--layouts "one-ref zone-ref"]
#   --writers    concurrent writers (default 16)
#   --pushes     single-file commits each writer pushes (default 20)
#   --zones      directories of the store, at least W (default max(10, W))
#   --files      small files in each directory (default 1000)
#   --idle-refs  zone refs nobody writes, beside the writers' (default 0): what a ref
#                advertisement of a store with that many zones costs every push and fetch
#   --layouts    which layouts to run (default both)
#
# A bare store of Z directories (the zones) of F small files each is served by `git daemon` on
# 127.0.0.1 (a free port). W writers, each a clone editing one file of its own directory, make
# P commits each and push every one with the careful loop of Benchmarks/run.sh's git writer:
# commit, push; only when the push is refused, fetch + rebase and push again. Two layouts:
#   one-ref:  every writer pushes to refs/heads/main
#   zone-ref: writer i pushes to refs/recsync/zones/w<i> (all made from the same first commit)
# Per layout: pushes/s (acknowledged pushes over the wall time), median and p99 push latency
# (from the commit to the acknowledged push, retries included), retries per push, and lost
# updates: acknowledged commits (by their unique message) not in the history of the final refs.
# Nothing of recsync is used: this bounds what putting each zone on its own ref can gain.
set -euo pipefail

writers=16 pushes=20 zones="" files=1000 idle=0 layouts="one-ref zone-ref"
usage() { sed -n '4,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --writers) writers=${2:?}; shift 2 ;;
    --pushes) pushes=${2:?}; shift 2 ;;
    --zones) zones=${2:?}; shift 2 ;;
    --files) files=${2:?}; shift 2 ;;
    --idle-refs) idle=${2:?}; shift 2 ;;
    --layouts) layouts=${2:?}; shift 2 ;;
    *) usage ;;
  esac
done
[ -n "$zones" ] || zones=$((writers > 10 ? writers : 10))
for v in "$writers" "$pushes" "$zones" "$files"; do [[ $v =~ ^[1-9][0-9]*$ ]] || usage; done
[[ $idle =~ ^[0-9]+$ ]] || usage
for v in $layouts; do case $v in one-ref|zone-ref) ;; *) usage ;; esac; done
[ "$zones" -ge "$writers" ] || { echo "ref-contention: --zones must be at least --writers" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ref-contention.XXXXXX")
groups=()  # process groups started here: the git daemon, the writers running now
cleanup() {
  local g
  for g in "${groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
  for g in "${groups[@]}"; do wait "$g" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

now() { date +%s%N; }
# shellcheck source=Benchmarks/common.sh
source "$(dirname "$0")/common.sh"
# start_git_daemon DIR: `git daemon` serving the repositories under DIR, pushes enabled, in a
# process group of its own; waits (at most 10 s) until it is ready. Sets port.
start_git_daemon() {
  local dir=$1 log="$1.log" pid state
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    : >"$log"
    setsid git daemon --reuseaddr --verbose --base-path="$dir" --export-all --enable=receive-pack \
      --listen=127.0.0.1 --port="$port" "$dir" </dev/null >>"$log" 2>&1 &
    pid=$!
    groups+=("$pid")
    for _ in $(seq 200); do
      grep -qF "Ready to rumble" "$log" && return 0
      state=$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null || echo X)
      case $state in Z|X) break ;; esac
      sleep 0.05
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  echo "ref-contention: git daemon did not start:" >&2; cat "$log" >&2; exit 1
}

# An edit not through after this many seconds of retries is given up (and reported).
giveup=900
export giveup
# writer DIR REF FILE TAG P OUT: P commits of FILE (each its own value TAG-eE), each pushed to
# REF with the careful loop. One line per edit into OUT: value t0 t1 retries errors ok|gave-up
writer() {
  local dir=$1 ref=$2 file=$3 tag=$4 p=$5 out=$6 e v t0 t1 tries errors status
  for e in $(seq "$p"); do
    v="$tag-e$e"
    printf '{"title": "%s"}\n' "$v" >"$dir/$file"
    git -C "$dir" commit -q -am "$v" >>"$out.err" 2>&1
    t0=$(date +%s%N); tries=0; errors=0; status=ok
    while :; do
      tries=$((tries + 1))
      git -C "$dir" push -q origin "HEAD:$ref" >"$out.push" 2>&1 && break
      cat "$out.push" >>"$out.err"
      grep -q 'rejected' "$out.push" || errors=$((errors + 1))
      if ! { git -C "$dir" fetch -q origin "+$ref:refs/remotes/origin/target" && git -C "$dir" rebase -q origin/target; } >>"$out.err" 2>&1; then
        errors=$((errors + 1))
        git -C "$dir" rebase --abort >>"$out.err" 2>&1 || true
      fi
      [ $(($(date +%s%N) - t0)) -ge $((giveup * 1000000000)) ] && { status=gave-up; break; }
    done
    t1=$(date +%s%N)
    echo "$v $t0 $t1 $((tries - 1)) $errors $status" >>"$out"
  done
}
export -f writer

echo "== making the store: $zones directories x $files files" >&2
mkdir -p "$work/srv" "$work/seed"
git -C "$work/seed" init -q -b main
for z in $(seq 0 $((zones - 1))); do
  mkdir -p "$work/seed/zones/z$z"
  for f in $(seq -w 1 "$files"); do printf '{"title": "z%s-r%s"}\n' "$z" "$f" >"$work/seed/zones/z$z/r$f.json"; done
done
git -C "$work/seed" add -A
git -C "$work/seed" commit -q -m seed
for layout in $layouts; do
  git clone -q --bare "$work/seed" "$work/srv/$layout.git"
  if [ "$layout" = zone-ref ]; then
    for w in $(seq "$writers"); do git -C "$work/srv/$layout.git" update-ref "refs/recsync/zones/w$w" main; done
    if [ "$idle" -gt 0 ]; then
      seed=$(git -C "$work/srv/$layout.git" rev-parse main)
      for i in $(seq "$idle"); do echo "create refs/recsync/zones/idle/z$i $seed"; done | git -C "$work/srv/$layout.git" update-ref --stdin
      git -C "$work/srv/$layout.git" pack-refs --all
    fi
  fi
done
start_git_daemon "$work/srv"

rows=()
for layout in $layouts; do
  echo "== $layout: $writers clones, then $writers writers x $pushes pushes" >&2
  rd="$work/run-$layout"
  mkdir -p "$rd"
  refs=()
  for w in $(seq "$writers"); do
    if [ "$layout" = one-ref ]; then ref=refs/heads/main; else ref="refs/recsync/zones/w$w"; fi
    refs+=("$ref")
    git clone -q "git://127.0.0.1:$port/$layout.git" "$rd/c$w"
    git -C "$rd/c$w" fetch -q origin "+$ref:refs/remotes/origin/target"
    git -C "$rd/c$w" checkout -q -B work origin/target
  done
  t0=$(now)
  pids=()
  for w in $(seq "$writers"); do
    setsid bash -c 'writer "$@"' writer "$rd/c$w" "${refs[w - 1]}" "zones/z$((w - 1))/r$(printf '%0*d' "${#files}" 1).json" \
      "$layout-w$w" "$pushes" "$rd/w$w.out" &
    pids+=("$!"); groups+=("$!")
  done
  for p in "${pids[@]}"; do wait "$p" || { echo "ref-contention: a writer failed (see $rd)" >&2; exit 1; }; done
  t1=$(now)
  # lost updates: acknowledged values that are no commit message in the final refs' history
  if [ "$layout" = one-ref ]; then finals=(main); else finals=(--glob=refs/recsync/zones); fi
  git -C "$work/srv/$layout.git" log --format=%s "${finals[@]}" | sort -u >"$rd/history"
  awk '$6 == "ok" {print $1}' "$rd"/w*.out | sort -u >"$rd/acked"
  lost=$(comm -23 "$rd/acked" "$rd/history" | wc -l)
  gaveup=$(awk '$6 != "ok"' "$rd"/w*.out | wc -l)
  errors=$(awk '{e += $5} END {print e + 0}' "$rd"/w*.out)
  [ "$errors" = 0 ] || { echo "ref-contention: $layout: $errors failed pushes or fetches, first ones:" >&2; grep -vh rejected "$rd"/w*.out.err | head -n 5 >&2 || true; }
  rows+=("$(awk '$6 == "ok" {printf "%.6f %d\n", ($3 - $2) / 1e9, $4}' "$rd"/w*.out | sort -g | awk \
    -v layout="$layout" -v w="$writers" -v p="$pushes" -v lost="$lost" -v gaveup="$gaveup" \
    -v wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN {print (b - a) / 1e9}')" '
    function f(s) { return (s >= 1) ? sprintf("%.2f s", s) : sprintf("%.0f ms", s * 1000) }
    { lat[++k] = $1; retries += $2 }
    END {
      if (k == 0) { printf "%-9s %4s %4s  nothing acknowledged", layout, w, p; exit }
      med = (k % 2) ? lat[(k + 1) / 2] : (lat[k / 2] + lat[k / 2 + 1]) / 2
      i99 = int(0.99 * k); if (i99 < 0.99 * k) i99++
      printf "%-9s %4s %4s  %8.2f  %9s  %9s  %12.2f  %6s  %8s  %7.1f s", layout, w, p, k / wall, f(med), f(lat[i99]),
        retries / k, lost, gaveup, wall
    }')")
  echo "   ${rows[-1]}" >&2
done

echo "git $(git --version | cut -d' ' -f3), $zones directories x $files files, $idle idle zone refs, git daemon on 127.0.0.1, $(nproc) cores"
printf '%-9s %4s %4s  %8s  %9s  %9s  %12s  %6s  %8s  %9s\n' layout W P pushes/s median p99 retries/push lost gave-up wall
printf '%s\n' "${rows[@]}"

#!/usr/bin/env bash
# recsync against git on the same data: clone, incremental pull, push, status, peak memory.
#
# usage: Benchmarks/run.sh [--records "10000 100000"] [--runs 5] [--million] [--smoke]
#   --records  the store sizes N to measure (default: 10000 100000)
#   --million  also N = 1,000,000
#   --smoke    N = 1000, 2 runs: keeps the script from rotting (CI runs this)
# Prints one table: operation, N, recsync median (min-max), git median (min-max), ratio, peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes="10000 100000"
runs=5
while [ $# -gt 0 ]; do
  case "$1" in
    --records) sizes="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --million) sizes="$sizes 1000000"; shift ;;
    --smoke) sizes="1000"; runs=2; shift ;;
    *) echo "usage: $0 [--records \"N ...\"] [--runs R] [--million] [--smoke]" >&2; exit 64 ;;
  esac
done

command -v git >/dev/null || { echo "bench: git is needed" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time is needed (apt-get install time)" >&2; exit 1; }

swift build -c release --product recsync >&2
swift build -c release --product recsync-bench >&2
bin="$(swift build -c release --show-bin-path)"
recsync="$bin/recsync"

started=$(date +%s)
work="$(mktemp -d "${TMPDIR:-/tmp}/recsync-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export RECSYNC_USER=bench NO_COLOR=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

now() { date +%s%N; }
# time_cmd VAR RSSVAR cmd...: seconds into VAR, peak RSS (KiB) into RSSVAR
# Each timed command starts with nothing dirty in the page cache (an untimed `sync`): recsync
# makes its writes durable with syncfs, which would otherwise also flush what the command
# before it left unwritten (git does not sync; a git clone leaves ~100k files for the kernel).
time_cmd() {
  local __t=$1 __r=$2; shift 2
  local t0 t1
  sync
  t0=$(now)
  /usr/bin/time -f %M -o "$work/rss" "$@" >/dev/null 2>"$work/err" || { echo "bench: failed: $*" >&2; cat "$work/err" >&2; exit 1; }
  t1=$(now)
  printf -v "$__t" '%s' "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", (b-a)/1e9}')"
  printf -v "$__r" '%s' "$(tail -n 1 "$work/rss")"
}
stats() { # "v1 v2 ..." -> "median min max"
  printf '%s\n' $1 | sort -g | awk '{a[NR]=$1} END{m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.4f %.4f %.4f", m, a[1], a[NR]}'
}
fmt() { awk -v s="$1" 'BEGIN{ if (s>=1) printf "%.2f s", s; else printf "%.1f ms", s*1000 }'; }

# edit_records DIR COUNT SALT: change COUNT record files (recsync workspace or git checkout) in place
edit_records() {
  local dir=$1 count=$2 salt=$3
  find "$dir" -path '*/.system' -prune -o -path '*/.git' -prune -o -path '*/.recsync' -prune -o -type f -name '*' -print \
    | grep -v '/zone.json$' | grep -v 'recsync.json$' | sort | awk -v n="$count" 'NR <= n' \
    | while read -r f; do
        if grep -q '"type"' "$f"; then   # a store blob in a git checkout
          sed -i "0,/\"value\": \"/s//\"value\": \"$salt /" "$f"
        else                              # a workspace record file
          sed -i "0,/\": \"/s//\": \"$salt /" "$f"
        fi
      done
}

rows=()
row() { rows+=("$(printf '%-34s %9s  %-26s %-26s %7s  %8s' "$@")"); }

# report LABEL N: one table row from the timings in rc/gc and the peak RSS in maxrss
report() {
  read -r rm rmin rmax <<<"$(stats "${rc[*]}")"; read -r gm gmin gmax <<<"$(stats "${gc[*]}")"
  row "$1" "$2" "$(fmt "$rm") ($(fmt "$rmin")-$(fmt "$rmax"))" "$(fmt "$gm") ($(fmt "$gmin")-$(fmt "$gmax"))" \
    "$(awk -v a="$rm" -v b="$gm" 'BEGIN{printf "%.2f", a/b}')" "$((maxrss/1024)) MB"
}

# measure LABEL N PREPARE_RECSYNC RECSYNC_COMMAND PREPARE_GIT GIT_COMMAND: $runs timed runs of
# each command (as shell words, evaluated with $i set), each after its untimed preparation
measure() {
  local label=$1 n=$2 prep_r=$3 cmd_r=$4 prep_g=$5 cmd_g=$6
  rc=(); gc=(); maxrss=0
  for i in $(seq "$runs"); do
    eval "$prep_r"
    eval "time_cmd t r $cmd_r"; rc+=("$t"); [ "$r" -gt "$maxrss" ] && maxrss=$r
    eval "$prep_g"
    eval "time_cmd t r $cmd_g"; gc+=("$t")
  done
  report "$label" "$n"
}

for n in $sizes; do
  echo "== N = $n: making the store" >&2
  d="$work/$n"; mkdir -p "$d"
  "$bin/recsync-bench" --make-store "$d/store.git" --records "$n" --zones 10 >&2
  cp -r "$d/store.git" "$d/git-store.git"     # git gets its own copy of the same objects

  # 1. clone
  rc=(); gc=(); maxrss=0
  # Each run clones into a new directory: deleting tens of thousands of files just before
  # creating as many makes ext4 search past recently freed inodes and slows whoever goes next.
  for i in $(seq "$runs"); do
    time_cmd t r "$recsync" clone "$d/store.git" "$d/rc$i"; rc+=("$t"); [ "$r" -gt "$maxrss" ] && maxrss=$r
    time_cmd t r git clone -q "$d/git-store.git" "$d/gc$i"; gc+=("$t")
  done
  mv "$d/rc1" "$d/rc"; mv "$d/gc1" "$d/gc"
  report "clone" "$n"

  # second workspace / checkout that produces the changes
  "$recsync" clone "$d/store.git" "$d/rcb" >/dev/null 2>&1
  git clone -q "$d/git-store.git" "$d/gcb"

  # 2. incremental pull of 100 changes (the other clones push them first, untimed)
  measure "pull, 100 changed records" "$n" \
    'edit_records "$d/rcb/private" 100 "p$i"; "$recsync" -C "$d/rcb" push >/dev/null 2>&1' \
    '"$recsync" -C "$d/rc" pull' \
    'edit_records "$d/gcb/zones" 100 "p$i"; (cd "$d/gcb" && git add -A && git commit -q -m "p$i" && git push -q)' \
    'git -C "$d/gc" pull -q'

  # 3. push of 1,000 edits
  measure "push, 1000 edited records" "$n" \
    'edit_records "$d/rc/private" 1000 "e$i"' '"$recsync" -C "$d/rc" push' \
    'edit_records "$d/gc/zones" 1000 "e$i"' 'sh -c "cd $d/gc && git add -A && git commit -q -m e$i && git push -q"'

  # 4. status with nothing changed (one untimed status first, as a user's index is warm)
  "$recsync" -C "$d/rc" status >/dev/null 2>&1 || true
  measure "status, nothing changed" "$n" ':' '"$recsync" -C "$d/rc" status' ':' 'git -C "$d/gc" status --porcelain'

  # 5. push of one record
  measure "push, one record" "$n" \
    'edit_records "$d/rc/private" 1 "o$i"' '"$recsync" -C "$d/rc" push' \
    'edit_records "$d/gc/zones" 1 "o$i"' 'sh -c "cd $d/gc && git add -A && git commit -q -m o$i && git push -q"'
  # Set aside, removed at the end: deleting a million files takes ext4 here longer than making
  # them (about 140 µs each), and files freed just before others are made slow those down.
  mv "$d" "$work/done-$n"
done

printf '%-34s %9s  %-26s %-26s %7s  %8s\n' "operation" "N" "recsync median (min-max)" "git median (min-max)" "ratio" "peak RSS"
printf '%s\n' "${rows[@]}"
echo "runs per figure: $runs; peak RSS is the recsync process's maximum over the runs"
echo "measured in $(( ($(date +%s) - started) / 60 )) min $(( ($(date +%s) - started) % 60 )) s; removing the files it made (that takes a while)" >&2

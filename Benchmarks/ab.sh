#!/usr/bin/env bash
# Two builds of recsync side by side on the same store, in the same run: clone, an incremental
# pull of 100 changed records and a push of 1,000 edited records, each timed for both binaries
# in alternating order, round after round, so that a slower disk or a busy neighbour weighs on
# both alike. For a change that must not make these slower (build the old commit beside the
# new one: `git worktree add ../old <commit> && (cd ../old && swift build -c release)`).
#
# usage: Benchmarks/ab.sh OLD_RECSYNC NEW_RECSYNC [--records N] [--rounds R] [--clones C]
#   --records  store size (default 100000)
#   --rounds   timed pulls and pushes per binary (default 9)
#   --clones   timed clones per binary (default 3)
# Prints, per operation: each binary's median (min-max) and new/old.
set -euo pipefail
usage() { sed -n 2,12p "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
old=$(realpath "$1"); new=$(realpath "$2"); shift 2
n=100000 rounds=9 clones=3
while [ $# -gt 0 ]; do
  case "$1" in
    --records) n=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --clones) clones=$2; shift 2 ;;
    *) usage ;;
  esac
done
[ -x "$old" ] && [ -x "$new" ] || { echo "ab: $old and $new must be recsync binaries" >&2; exit 1; }
cd "$(dirname "$0")/.."
swift build -c release --product recsync-bench >&2
bench="$(swift build -c release --show-bin-path)/recsync-bench"

work="$(mktemp -d "${TMPDIR:-/tmp}/recsync-ab.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export RECSYNC_USER=bench NO_COLOR=1

now() { date +%s%N; }
# timed VAR cmd...: seconds into VAR, after an untimed sync (recsync syncs what it writes with
# syncfs, which would otherwise also flush what the command before left unwritten)
timed() {
  local __v=$1 t0 t1; shift
  sync
  t0=$(now)
  "$@" >/dev/null 2>"$work/err" || { echo "ab: failed: $*" >&2; cat "$work/err" >&2; exit 1; }
  t1=$(now)
  printf -v "$__v" '%s' "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", (b-a)/1e9}')"
}
stats() { printf '%s\n' $1 | sort -g | awk '{a[NR]=$1} END{m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.4f %.4f %.4f", m, a[1], a[NR]}'; }
fmt() { awk -v s="$1" 'BEGIN{ if (s>=1) printf "%.2f s", s; else printf "%.1f ms", s*1000 }'; }
row() {  # LABEL "old times" "new times"
  local om omin omax nm nmin nmax
  read -r om omin omax <<<"$(stats "$2")"; read -r nm nmin nmax <<<"$(stats "$3")"
  printf '%-28s %-30s %-30s %6s\n' "$1" "$(fmt "$om") ($(fmt "$omin")-$(fmt "$omax"))" "$(fmt "$nm") ($(fmt "$nmin")-$(fmt "$nmax"))" \
    "$(awk -v a="$nm" -v b="$om" 'BEGIN{printf "%.3f", a/b}')"
}
# edit DIR COUNT SALT: changes the first COUNT record files of a workspace in place
edit() {
  find "$1" -path '*/.recsync' -prune -o -path '*/.system' -prune -o -type f -name '*.json' -print | sort | awk -v n="$2" 'NR <= n' >"$work/list"
  xargs -r -d '\n' sed -i "0,/\": \"/s//\": \"$3 /" <"$work/list"
}

echo "ab: making a store of $n records" >&2
"$bench" --make-store "$work/store.git" --records "$n" --zones 10 >&2

oc=() nc=()
for i in $(seq "$clones"); do
  if [ $((i % 2)) = 1 ]; then
    timed t "$old" clone "$work/store.git" "$work/oc$i"; oc+=("$t"); timed t "$new" clone "$work/store.git" "$work/nc$i"; nc+=("$t")
  else
    timed t "$new" clone "$work/store.git" "$work/nc$i"; nc+=("$t"); timed t "$old" clone "$work/store.git" "$work/oc$i"; oc+=("$t")
  fi
  [ "$i" = 1 ] || rm -rf "$work/oc$i" "$work/nc$i"
done
# oc1 and nc1 are the readers; two writers, one per binary
"$new" clone "$work/store.git" "$work/w" >/dev/null
"$old" clone "$work/store.git" "$work/wo" >/dev/null
"$new" clone "$work/store.git" "$work/wn" >/dev/null

op=() np=() ou=() nu=()
for i in $(seq "$rounds"); do
  edit "$work/w/private" 100 "p$i"; "$new" -C "$work/w" push >/dev/null
  if [ $((i % 2)) = 1 ]; then
    timed t "$old" -C "$work/oc1" pull; op+=("$t"); timed t "$new" -C "$work/nc1" pull; np+=("$t")
  else
    timed t "$new" -C "$work/nc1" pull; np+=("$t"); timed t "$old" -C "$work/oc1" pull; op+=("$t")
  fi
  order="o n"; [ $((i % 2)) = 1 ] || order="n o"
  for who in $order; do
    bin=$old; [ "$who" = n ] && bin=$new
    "$bin" -C "$work/w$who" pull >/dev/null
    edit "$work/w$who/private" 1000 "e$who$i"
    timed t "$bin" -C "$work/w$who" push
    if [ "$who" = o ]; then ou+=("$t"); else nu+=("$t"); fi
  done
  # Everyone catches up (untimed), so the next round's pulls bring exactly 100 changes.
  "$new" -C "$work/w" pull >/dev/null
  "$old" -C "$work/oc1" pull >/dev/null
  "$new" -C "$work/nc1" pull >/dev/null
done

printf '%-28s %-30s %-30s %6s\n' "operation (N = $n)" "old median (min-max)" "new median (min-max)" "new/old"
row clone "${oc[*]}" "${nc[*]}"
row "pull, 100 changed records" "${op[*]}" "${np[*]}"
row "push, 1000 edited records" "${ou[*]}" "${nu[*]}"
echo "old: $old; new: $new; clones per binary: $clones, pulls and pushes: $rounds"

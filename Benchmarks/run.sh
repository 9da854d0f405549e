#!/usr/bin/env bash
# recsync against git on the same data: clone, incremental pull, push, status, peak memory; then
# the same over the network (git://, ssh and https servers on 127.0.0.1), and concurrent writers.
#
# usage: Benchmarks/run.sh [--bin DIR] [--records "10000 100000"] [--runs 5] [--million] [--smoke]
#                          [--no-network | --only-network | --only-writers] [--net-records 10000]
#                          [--writers "1 4 8 16"] [--pushes 20] [--writer-transports "git ssh https"]
#                          [--writer-scenarios "own-zone one-zone hot-record"]
#                          [--no-load] [--load-records 10000] [--load-mb 2048] [--bulk 5000]
#                          [--assets-mb 1024 | --no-assets] [--store-format 1|2]
#   --bin          use the prebuilt DIR/recsync and DIR/recsync-bench (a release build) instead of
#                  building them here with `swift build -c release` (also: RECSYNC_BENCH_BIN=DIR)
#   --records      the store sizes N of the local table (default: 10000 100000)
#   --million      also N = 1,000,000 in the local table
#   --smoke        N = 1000, 2 runs, writers "1 4" over git:// only, 5 pushes each: keeps the script from rotting
#                  (CI runs this)
#   --no-network   only the local table
#   --only-network only the network and writers tables (no local rows)
#   --only-writers only the writers table (the servers start, the network table's rows do not run)
#   --net-records  the store size N of the network and writers tables (default 10000)
#   --writers      the numbers W of concurrent writers (default: 1 4 8 16)
#   --pushes       single-record edits each writer pushes (default 20)
#   --writer-transports  the transports of the writers table, each with stores and clones of its own
#                  (default: git ssh https; --smoke: git)
#   --writer-scenarios   which of own-zone one-zone hot-record the writers table runs (default: all)
#   --bulk         the changed records of the bulk pull rows (default 5000, at most N; --smoke: 500)
#   --no-load      no durability-under-load table (it runs with the local table)
#   --load-records the store size N of the durability-under-load table (default 10000)
#   --load-mb      what dd writes beside the loaded runs, in MB (default 2048)
#   --store-format the format of the writers table's recsync stores: 1 (default), or 2, one git ref
#                  per zone (docs/zone-refs.md; being built, opened with RECSYNC_EXPERIMENTAL_STORE_FORMAT=2)
#   --assets-mb    pull about this many MB of assets (50 MB files, rounded up to whole files) in the local table (default 1024;
#                  --smoke: 16, as 2 MB files); --no-assets leaves the row out
# Prints up to five tables:
#   local:   operation, N, recsync median (min-max), git median (min-max), ratio, recsync's peak RSS
#            (clone, pull of 100 and of --bulk changes, push of 1,000 and of one, status)
#   syncs:   the fsync, fdatasync, syncfs, sync_file_range and msync calls of one clone and one pull
#            of --bulk changes (default 5000, at most N; --smoke: 500), recsync and git, counted
#            with strace -f -c (the rows say so when strace is missing), and calls per record
#   load:    clone and incremental pull (100 and --bulk changes), idle and while dd writes
#            --load-mb MB on the same file system, recsync and git: operation, tool, N, idle and loaded median, loaded/idle
#   network: the same operations against a `git daemon` (git://), an sshd (ssh://) and nginx
#            with fcgiwrap and git-http-backend (https://, a CA of its own made with openssl)
#            started here on 127.0.0.1, side by side with git on the same server: operation,
#            transport, N, recsync and git median (min-max), ratio, recsync's peak RSS, server
#            connections per operation (https: TLS connections, and requests to
#            git-upload-pack/git-receive-pack, from nginx's access log)
#   writers: W workspaces (git clones) pushing concurrently over each writer transport: to their
#            own zone, to one zone, to one hot record (conflicts, resolved keeping their own
#            value); git commits and pushes, and pulls --rebase only when a push is refused;
#            pushes/s, median and p99 push latency, retries per push, server connections per
#            push, lost updates (acknowledged edits missing from the store's history or final state)
set -euo pipefail
cd "$(dirname "$0")/.."

sizes="10000 100000"
runs=5
local_rows=1
network=1
net_sizes=10000
load=1
load_sizes=10000
load_mb=2048
writer_counts="1 4 8 16"
writer_transports="git ssh https"
writer_scenarios="own-zone one-zone hot-record"
pushes=20
assets_mb=1024
asset_file_mb=50
bulk=5000   # the records a bulk pull brings (at most N)
bin_dir=${RECSYNC_BENCH_BIN:-}
store_format=1
writers_only=0
opt_writers="" opt_wtr="" opt_bulk="" opt_pushes="" opt_net="" opt_load_n="" opt_load_mb="" opt_assets_mb=""
usage() {
  echo "usage: $0 [--bin DIR] [--records \"N ...\"] [--runs R] [--million] [--smoke] [--no-network | --only-network | --only-writers]" >&2
  echo "          [--net-records N] [--writers \"W ...\"] [--pushes P] [--bulk B] [--writer-transports \"git ssh https\"]" >&2
  echo "          [--writer-scenarios \"own-zone one-zone hot-record\"] [--no-load] [--load-records N] [--load-mb MB] [--store-format 1|2]" >&2
  exit 64
}
while [ $# -gt 0 ]; do
  case "$1" in
    --records) sizes="$2"; shift 2 ;;
    --bin) bin_dir="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --million) sizes="$sizes 1000000"; shift ;;
    --smoke) sizes="1000"; runs=2; net_sizes=1000; load_sizes=1000; load_mb=256; bulk=500; assets_mb=16; asset_file_mb=2
      writer_counts="1 4"; writer_transports=git; pushes=5; shift ;;
    --assets-mb) opt_assets_mb="$2"; shift 2 ;;
    --no-assets) assets_mb=0; shift ;;
    --no-load) load=0; shift ;;
    --load-records) opt_load_n="$2"; shift 2 ;;
    --load-mb) opt_load_mb="$2"; shift 2 ;;
    --network) network=1; shift ;;
    --no-network) network=0; shift ;;
    --only-network) network=1; local_rows=0; shift ;;
    --only-writers) network=1; local_rows=0; writers_only=1; shift ;;
    --net-records) opt_net="$2"; shift 2 ;;
    --writers) opt_writers="$2"; shift 2 ;;
    --writer-transports) opt_wtr="$2"; shift 2 ;;
    --writer-scenarios) writer_scenarios="$2"; shift 2 ;;
    --pushes) opt_pushes="$2"; shift 2 ;;
    --bulk) opt_bulk="$2"; shift 2 ;;
    --store-format) store_format="$2"; shift 2 ;;
    *) usage ;;
  esac
done
# Explicit values win over --smoke's, whichever came first.
[ -n "$opt_net" ] && net_sizes=$opt_net
[ -n "$opt_writers" ] && writer_counts=$opt_writers
[ -n "$opt_wtr" ] && writer_transports=$opt_wtr
for v in $writer_transports; do case "$v" in git|ssh|https) ;; *) usage ;; esac; done
for v in $writer_scenarios; do case "$v" in own-zone|one-zone|hot-record) ;; *) usage ;; esac; done
{ [ -n "$writer_transports" ] && [ -n "$writer_scenarios" ]; } || usage
[ -n "$opt_pushes" ] && pushes=$opt_pushes
[ -n "$opt_bulk" ] && bulk=$opt_bulk
[ -n "$opt_load_n" ] && load_sizes=$opt_load_n
[ -n "$opt_load_mb" ] && load_mb=$opt_load_mb
[ -n "$opt_assets_mb" ] && assets_mb=$opt_assets_mb
case "$assets_mb" in ''|*[!0-9]*) usage ;; esac
case "$store_format" in 1) ;; 2) export RECSYNC_EXPERIMENTAL_STORE_FORMAT=2 ;; *) usage ;; esac
for v in $runs $net_sizes $writer_counts $pushes $bulk $load_sizes $load_mb; do
  case "$v" in ''|*[!0-9]*|0) usage ;; esac
done

command -v git >/dev/null || { echo "bench: git is needed" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time is needed (apt-get install time)" >&2; exit 1; }
if [ "$network" = 1 ]; then
  command -v setsid >/dev/null || { echo "bench: setsid (util-linux) is needed for --network" >&2; exit 1; }
  { [ -x /usr/sbin/sshd ] && command -v ssh-keygen >/dev/null && command -v ssh >/dev/null; } ||
    { echo "bench: the network mode needs openssh-server and openssh-client (/usr/sbin/sshd, ssh, ssh-keygen); or --no-network" >&2; exit 1; }
  git_exec=$(git --exec-path)
  { [ -x /usr/sbin/nginx ] && [ -x /usr/sbin/fcgiwrap ] && command -v openssl >/dev/null && [ -x "$git_exec/git-http-backend" ]; } ||
    { echo "bench: the network mode's https server needs nginx, fcgiwrap, openssl and git's git-http-backend" \
      "(apt-get install nginx fcgiwrap openssl); or --no-network" >&2; exit 1; }
fi

if [ -n "$bin_dir" ]; then
  # prebuilt binaries (a release build made elsewhere): no build here
  bin=$(cd "$bin_dir" && pwd) || { echo "bench: --bin $bin_dir: no such directory" >&2; exit 1; }
  for b in recsync recsync-bench; do
    [ -x "$bin/$b" ] || { echo "bench: --bin $bin_dir: no executable $b in it" >&2; exit 1; }
  done
else
  # linked as `make install` links it (the Swift runtime in the binary); both products with
  # the same flags, or the second build compiles everything again
  swift build -c release --static-swift-stdlib --product recsync >&2
  swift build -c release --static-swift-stdlib --product recsync-bench >&2
  bin="$(swift build -c release --static-swift-stdlib --show-bin-path)"
fi
recsync="$bin/recsync"

started=$(date +%s)
work="$(mktemp -d "${TMPDIR:-/tmp}/recsync-bench.XXXXXX")"
servers=()        # process groups of the servers started here (git daemon, sshd)
writer_groups=()  # process groups of the concurrent writers running now
# On any exit: kill the servers and writers (their whole process groups: connection handlers,
# hooks, a recsync or git a writer was running), then remove the files.
cleanup() {
  local g
  for g in "${writer_groups[@]}" "${servers[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
  for g in "${writer_groups[@]}" "${servers[@]}"; do wait "$g" 2>/dev/null || true; done
  if [ -n "${RECSYNC_KEEP_TEMP:-}" ]; then echo "bench: kept $work (RECSYNC_KEEP_TEMP)" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM
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
  [ "${keep_dirty:-0}" = 1 ] || sync
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
# (one sed for all the files of a kind: a sed per file took seconds for 1,000 on a loaded machine)
edit_records() {
  local dir=$1 count=$2 salt=$3
  find "$dir" -path '*/.system' -prune -o -path '*/.git' -prune -o -path '*/.recsync' -prune -o -type f -name '*' -print \
    | grep -v '/zone.json$' | grep -v 'recsync.json$' | sort | awk -v n="$count" 'NR <= n' >"$work/edit-list"
  # store blobs in a git checkout have "type"s; workspace record files do not
  xargs -r -d '\n' grep -l '"type"' <"$work/edit-list" >"$work/edit-blobs" || true
  grep -vxF -f "$work/edit-blobs" "$work/edit-list" >"$work/edit-records" || true
  xargs -r -d '\n' sed -i "0,/\"value\": \"/s//\"value\": \"$salt /" <"$work/edit-blobs"
  xargs -r -d '\n' sed -i "0,/\": \"/s//\": \"$salt /" <"$work/edit-records"
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

min() { if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi; }

# Sync calls: one untimed run of a command under strace, counting the calls that make data
# durable. sync_row LABEL TOOL N RECORDS cmd...: runs cmd under strace (or, when strace is
# missing or cannot trace here, plainly, saying so in the row) and adds the row: the calls, the
# calls per record written (RECORDS), and the calls by kind.
sync_rows=()
sync_calls=fsync,fdatasync,syncfs,sync_file_range,msync
sync_row() {
  local label=$1 tool=$2 n=$3 records=$4 total kinds; shift 4
  if ! command -v strace >/dev/null; then
    quiet "$@"
    sync_rows+=("$(printf '%-34s %7s  %-8s  %s' "$label" "$n" "$tool" "not counted: strace is missing (apt-get install strace)")")
    return
  fi
  rm -f "$work/strace"
  if ! strace -f -c -o "$work/strace" -e trace="$sync_calls" "$@" >/dev/null 2>"$work/err"; then
    if [ -s "$work/strace" ]; then echo "bench: failed under strace: $*" >&2; cat "$work/err" >&2; exit 1; fi
    quiet "$@"   # strace could not trace (ptrace not allowed here, say): the command once more, plainly
    sync_rows+=("$(printf '%-34s %7s  %-8s  %s' "$label" "$n" "$tool" "not counted: strace failed: $(head -n 1 "$work/err")")")
    return
  fi
  # strace -c's summary: "% time seconds usecs/call calls [errors] syscall" lines, then "total"
  total=$(awk '$NF == "total" {print $4}' "$work/strace"); total=${total:-0}
  kinds=$(awk '$NF != "total" && $NF ~ /^[a-z_]+$/ && $4 ~ /^[0-9]+$/ {printf "%s%s %s", sep, $NF, $4; sep = ", "}' "$work/strace")
  sync_rows+=("$(printf '%-34s %7s  %-8s  %10s  %10s  %s' "$label" "$n" "$tool" "$total" \
    "$(awk -v a="$total" -v b="$records" 'BEGIN{printf "%.4f", a/b}')" "${kinds:--}")")
}

# ---------------------------------------------------------------------------------------------
# Durability under load: recsync makes each write batch durable; does that cost follow its own
# writes, or everything another process left dirty on the file system? The same clone and
# incremental pull, idle and while `dd` writes $load_mb MB to a file beside them.

load_rows=()
# time_loaded VAR RSSVAR cmd...: as time_cmd, while dd writes $load_mb MB on the same file system.
# dd starts first (after an untimed sync) and has a head start of half a second, so the command
# begins with a lot dirty and more coming; it is waited for, removed and synced untimed afterwards.
time_loaded() {
  local __tl=$1 __rl=$2 ddpid; shift 2
  sync
  dd if=/dev/zero of="$work/load.bin" bs=1M count="$load_mb" status=none &
  ddpid=$!
  sleep 0.5
  keep_dirty=1 time_cmd "$__tl" "$__rl" "$@"
  wait "$ddpid" || { echo "bench: dd failed" >&2; exit 1; }
  rm -f "$work/load.bin"; sync
}
# load_row LABEL TOOL N: one row from the idle timings in li and the loaded ones in ll
load_row() {
  local im imin imax lm lmin lmax
  read -r im imin imax <<<"$(stats "${li[*]}")"; read -r lm lmin lmax <<<"$(stats "${ll[*]}")"
  load_rows+=("$(printf '%-28s %-8s %7s  %-26s %-26s %7s' "$1" "$2" "$3" \
    "$(fmt "$im") ($(fmt "$imin")-$(fmt "$imax"))" "$(fmt "$lm") ($(fmt "$lmin")-$(fmt "$lmax"))" \
    "$(awk -v a="$lm" -v b="$im" 'BEGIN{printf "%.2f", a/b}')")")
}
# load_bench N: clone and incremental pull of 100 changes, idle and loaded, recsync and git
load_bench() {
  local n=$1 d="$work/load-$n" tool i r
  echo "== durability under load, N = $n: making the store" >&2
  mkdir -p "$d"
  "$bin/recsync-bench" --make-store "$d/store.git" --records "$n" --zones 10 >&2
  cp -r "$d/store.git" "$d/git-store.git"
  for tool in recsync git; do
    li=(); ll=()
    for i in $(seq "$runs"); do
      if [ "$tool" = recsync ]; then
        time_cmd t r "$recsync" clone "$d/store.git" "$d/ri$i"; li+=("$t")
        time_loaded t r "$recsync" clone "$d/store.git" "$d/rl$i"; ll+=("$t")
      else
        time_cmd t r git clone -q "$d/git-store.git" "$d/gi$i"; li+=("$t")
        time_loaded t r git clone -q "$d/git-store.git" "$d/gl$i"; ll+=("$t")
      fi
    done
    load_row clone "$tool" "$n"
  done
  quiet "$recsync" clone "$d/store.git" "$d/rcb"
  quiet git clone -q "$d/git-store.git" "$d/gcb"
  load_pull "$d" "$n" 100
  load_pull "$d" "$n" "$(min "$bulk" "$n")"
  mv "$d" "$work/done-load-$n"
}
# load_pull DIR N COUNT: the rows of an incremental pull of COUNT changes, idle and loaded
load_pull() {
  local d=$1 n=$2 count=$3 tool i r
  for tool in recsync git; do
    li=(); ll=()
    for i in $(seq "$runs"); do
      for r in i l; do
        if [ "$tool" = recsync ]; then
          edit_records "$d/rcb/private" "$count" "l$count$r$i"; quiet "$recsync" -C "$d/rcb" push
          if [ "$r" = i ]; then time_cmd t x "$recsync" -C "$d/ri1" pull; li+=("$t")
          else time_loaded t x "$recsync" -C "$d/ri1" pull; ll+=("$t"); fi
        else
          edit_records "$d/gcb/zones" "$count" "l$count$r$i"
          (cd "$d/gcb" && git add -A && git commit -q -m "l$count$r$i" && git push -q)
          if [ "$r" = i ]; then time_cmd t x git -C "$d/gi1" pull -q; li+=("$t")
          else time_loaded t x git -C "$d/gi1" pull -q; ll+=("$t"); fi
        fi
      done
    done
    load_row "pull, $count changed records" "$tool" "$n"
  done
}

# ---------------------------------------------------------------------------------------------
# Network mode: a git daemon and an sshd on 127.0.0.1, each serving a recsync store and a git
# copy of the same store; then concurrent writers over git://.

net_rows=(); writer_rows=(); writer_notes=()

# start_server LOG READY cmd...: runs cmd in a process group of its own (setsid), which the EXIT
# trap kills with everything it forked, and waits (at most 10 s) for READY in its log.
# Fails (and kills it) when it does not get there: the port was taken meanwhile, say.
start_server() {
  local log=$1 ready=$2 pid state
  shift 2
  : >"$log"
  setsid "$@" </dev/null >>"$log" 2>&1 &
  pid=$!
  servers+=("$pid")
  for _ in $(seq 200); do
    grep -qF -- "$ready" "$log" && return 0
    state=$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null || echo X)
    case $state in Z|X) break ;; esac
    sleep 0.05
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  return 1
}
# shellcheck source=Benchmarks/common.sh
source Benchmarks/common.sh

# start_git_daemon DIR: `git daemon` serving every repository under DIR, pushes enabled, as the
# tests' GitDaemon does (with --verbose: its log counts the connections). Sets gd_port, gd_log.
start_git_daemon() {
  local dir=$1
  gd_log="$dir.git-daemon.log"
  for _ in 1 2 3 4 5; do
    gd_port=$(free_port)
    start_server "$gd_log" "Ready to rumble" git daemon --reuseaddr --verbose --base-path="$dir" --export-all \
      --enable=receive-pack --listen=127.0.0.1 --port="$gd_port" "$dir" && return 0
  done
  echo "bench: git daemon did not start:" >&2; cat "$gd_log" >&2; exit 1
}

# start_sshd DIR CLIENT_KEY: an sshd for the current user (root included: key logins only) with
# its own host key, config and authorized_keys (CLIENT_KEY.pub), as the tests' SSHServer does.
# Sets ssh_port, ssh_log and writes DIR/known_hosts with its host key.
start_sshd() {
  local dir=$1 key=$2
  mkdir -p "$dir"
  ssh-keygen -q -t ed25519 -N '' -C recsync-bench-host -f "$dir/host_key"
  cp "$key.pub" "$dir/authorized_keys"
  # As root, sshd wants its privilege-separation directory (the package's service creates it).
  if [ "$(id -u)" = 0 ] && [ ! -d /run/sshd ]; then mkdir -p -m 755 /run/sshd; fi
  ssh_log="$dir/sshd.log"
  for _ in 1 2 3 4 5; do
    ssh_port=$(free_port)
    cat >"$dir/sshd_config" <<EOF
Port $ssh_port
ListenAddress 127.0.0.1
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PidFile $dir/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
MaxStartups 200
MaxSessions 200
EOF
    if start_server "$ssh_log" "Server listening on 127.0.0.1 port $ssh_port" /usr/sbin/sshd -D -e -f "$dir/sshd_config"; then
      echo "[127.0.0.1]:$ssh_port $(cut -d' ' -f1,2 "$dir/host_key.pub")" >"$dir/known_hosts"
      return 0
    fi
  done
  echo "bench: sshd did not start:" >&2; cat "$ssh_log" >&2; exit 1
}

# start_https ROOT DIR: nginx serving the repositories under ROOT over https on 127.0.0.1
# through fcgiwrap and git-http-backend (pushes enabled with http.receivepack, no
# authentication), with a certificate from a CA of its own, as the tests' HTTPSGitServer does;
# its files in DIR. Sets https_port, https_log (nginx's access log, one line a request:
# connection serial, request method and address) and https_ca (the CA's certificate).
start_https() {
  local root=$1 dir=$2 sock pid children=4 w
  for w in $writer_counts; do [ "$w" -gt "$children" ] && children=$w; done
  mkdir -p "$dir/temp"
  https_ca="$dir/ca.pem"
  quiet openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/ca.key" -out "$https_ca" \
    -days 2 -subj "/CN=recsync bench CA" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
  printf '%s\n' "basicConstraints = CA:FALSE" "keyUsage = critical, digitalSignature" "extendedKeyUsage = serverAuth" \
    "subjectAltName = IP:127.0.0.1" >"$dir/server.ext"
  quiet openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/server.key" -out "$dir/server.csr" \
    -subj "/CN=127.0.0.1"
  quiet openssl x509 -req -in "$dir/server.csr" -CA "$https_ca" -CAkey "$dir/ca.key" -CAcreateserial -out "$dir/server.pem" \
    -days 2 -extfile "$dir/server.ext"
  # fcgiwrap runs one request at a time per child: as many children as the most writers
  sock="$dir/fcgi.sock"
  setsid /usr/sbin/fcgiwrap -c "$children" -s "unix:$sock" </dev/null >>"$dir/fcgiwrap.log" 2>&1 &
  servers+=("$!")
  for _ in $(seq 200); do [ -S "$sock" ] && break; sleep 0.05; done
  [ -S "$sock" ] || { echo "bench: fcgiwrap did not make its socket $sock:" >&2; cat "$dir/fcgiwrap.log" >&2; exit 1; }
  https_log="$dir/access.log"
  for _ in 1 2 3 4 5; do
    https_port=$(free_port)
    cat >"$dir/nginx.conf" <<NGINX
daemon off;
master_process off;
worker_processes 1;
$([ "$(id -u)" = 0 ] && echo "user root root;")
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 512; }
http {
    log_format bench '\$connection \$connection_requests \$request_method \$request_uri \$status';
    access_log $https_log bench;
    client_body_temp_path $dir/temp/body;
    fastcgi_temp_path $dir/temp/fastcgi;
    proxy_temp_path $dir/temp/proxy;
    uwsgi_temp_path $dir/temp/uwsgi;
    scgi_temp_path $dir/temp/scgi;
    client_max_body_size 0;
    server {
        listen 127.0.0.1:$https_port ssl;
        ssl_certificate $dir/server.pem;
        ssl_certificate_key $dir/server.key;
        location / {
            fastcgi_pass unix:$sock;
            fastcgi_param SCRIPT_FILENAME $git_exec/git-http-backend;
            fastcgi_param REQUEST_METHOD \$request_method;
            fastcgi_param QUERY_STRING \$query_string;
            fastcgi_param CONTENT_TYPE \$content_type;
            fastcgi_param CONTENT_LENGTH \$content_length;
            fastcgi_param SERVER_PROTOCOL \$server_protocol;
            fastcgi_param REMOTE_ADDR \$remote_addr;
            fastcgi_param PATH_INFO \$uri;
            fastcgi_param GIT_PROTOCOL \$http_git_protocol;
            fastcgi_param GIT_PROJECT_ROOT $root;
            fastcgi_param GIT_HTTP_EXPORT_ALL "";
            fastcgi_param GIT_CONFIG_NOSYSTEM 1;
            fastcgi_param GIT_CONFIG_COUNT 1;
            fastcgi_param GIT_CONFIG_KEY_0 http.receivepack;
            fastcgi_param GIT_CONFIG_VALUE_0 true;
        }
    }
}
NGINX
    : >"$https_log"
    setsid /usr/sbin/nginx -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" </dev/null >>"$dir/nginx.log" 2>&1 &
    pid=$!
    servers+=("$pid")
    for _ in $(seq 200); do
      (exec 3<>"/dev/tcp/127.0.0.1/$https_port") 2>/dev/null && return 0
      { [ -d "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ]; } || break
      sleep 0.05
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  echo "bench: nginx did not start:" >&2; cat "$dir/error.log" "$dir/nginx.log" >&2; exit 1
}

# conns TRANSPORT: server connections so far (git daemon: requests; sshd: logins; nginx: TLS
# connections that carried a request to git-upload-pack or git-receive-pack)
conns() {
  case $1 in
    git) grep -c 'Request \(upload\|receive\)-pack' "$gd_log" || true ;;
    ssh) grep -c 'Accepted publickey' "$ssh_log" || true ;;
    https) awk '$4 ~ /git-(upload|receive)-pack/ {print $1}' "$https_log" | sort -u | wc -l ;;
  esac
}
# reqs: https requests so far to git-upload-pack or git-receive-pack (the GET of
# info/refs?service=… and the POSTs)
reqs() { awk '$4 ~ /git-(upload|receive)-pack/' "$https_log" | wc -l; }
# url TRANSPORT REPOSITORY: the address of a repository under $nw/srv over TRANSPORT
url() {
  case $1 in
    git) echo "git://127.0.0.1:$gd_port/$2" ;;
    ssh) echo "ssh://$(id -un)@127.0.0.1:$ssh_port$nw/srv/$2" ;;
    https) echo "https://127.0.0.1:$https_port/$2" ;;
  esac
}
# quiet cmd...: an untimed step; its output only when it fails (and then the benchmark stops)
quiet() {
  "$@" >"$work/quiet" 2>&1 || { echo "bench: failed: $*" >&2; cat "$work/quiet" >&2; exit 1; }
}
span() { # "3 3 4" -> "3", "3 5" -> "3-5"
  printf '%s\n' $1 | sort -n | awk 'NR == 1 {a = $1} {b = $1} END {print (a == b) ? a : a "-" b}'
}
# net_report LABEL TRANSPORT N: one network row from rc/gc (seconds), rconns/gconns (and for
# https rreqs/greqs) and recsync's peak RSS in maxrss
net_report() {
  local rm rmin rmax gm gmin gmax c
  read -r rm rmin rmax <<<"$(stats "${rc[*]}")"; read -r gm gmin gmax <<<"$(stats "${gc[*]}")"
  c="$(span "${rconns[*]}")/$(span "${gconns[*]}")"
  [ "$2" = https ] && c="$c ($(span "${rreqs[*]}")/$(span "${greqs[*]}"))"
  net_rows+=("$(printf '%-28s %-9s %7s  %-26s %-26s %7s  %8s  %s' "$1" "$2" "$3" \
    "$(fmt "$rm") ($(fmt "$rmin")-$(fmt "$rmax"))" "$(fmt "$gm") ($(fmt "$gmin")-$(fmt "$gmax"))" \
    "$(awk -v a="$rm" -v b="$gm" 'BEGIN{printf "%.2f", a/b}')" "$((maxrss / 1024)) MB" "$c")")
}
# net_time TOOL CMD...: one timed network command of TOOL (r or g) over $tr: its time into
# rc/gc, its connections (and https requests) into rconns/gconns (rreqs/greqs), recsync's
# peak RSS into maxrss
net_time() {
  local tool=$1 c q; shift
  c=$(conns "$tr"); q=0; [ "$tr" = https ] && q=$(reqs)
  time_cmd t r "$@"
  eval "${tool}c+=(\"\$t\"); ${tool}conns+=($(($(conns "$tr") - c)))"
  [ "$tr" = https ] && eval "${tool}reqs+=($(($(reqs) - q)))"
  [ "$tool" = r ] && [ "$r" -gt "$maxrss" ] && maxrss=$r
  return 0
}
# net_measure LABEL TRANSPORT N PREPARE_RECSYNC RECSYNC_COMMAND PREPARE_GIT GIT_COMMAND: as
# measure, over the network, counting the server connections of each timed command
net_measure() {
  local label=$1 tr=$2 n=$3 prep_r=$4 cmd_r=$5 prep_g=$6 cmd_g=$7
  rc=(); gc=(); rconns=(); gconns=(); rreqs=(); greqs=(); maxrss=0
  for i in $(seq "$runs"); do
    eval "$prep_r"
    eval "net_time r $cmd_r"
    eval "$prep_g"
    eval "net_time g $cmd_g"
  done
  net_report "$label" "$tr" "$n"
}

# A writer retries an edit until it is acknowledged, as a user would: under contention some
# attempts lose every race for a long while (git's loop too), and they get through once the
# others are done. Only an edit still not through after this many seconds is given up (a bug,
# or a server gone), and reported.
giveup=1800
export giveup
# One writer: a recsync workspace pushing P edits of one record, each a new value of its title
# (TAG-wW-eE, unique in the run). A push is acknowledged when it exits 0 and its JSON report
# lists no conflict and nothing not sent, and a commit; a conflict is settled keeping this
# writer's value (resolve --ours) and pushed again, an error is retried; either is a retry.
# One line per edit into OUT: value t0 t1 retries conflicts errors ok|gave-up
rs_writer() {
  local recsync=$1 ws=$2 file=$3 rec=$4 tag=$5 p=$6 out=$7 e v t0 t1 tries conflicts errors rc json status
  for e in $(seq "$p"); do
    v="$tag-e$e"
    sed -i "s/\"title\": \"[^\"]*\"/\"title\": \"$v\"/" "$ws/$file"
    t0=$(date +%s%N); tries=0; conflicts=0; errors=0; status=ok
    while :; do
      tries=$((tries + 1))
      rc=0; json=$("$recsync" -C "$ws" push --json 2>>"$out.err") || rc=$?
      if [ "$rc" = 0 ] && grep -Eq '"notSent" *: *\[\]' <<<"$json" && grep -Eq '"conflicts" *: *\[\]' <<<"$json" \
        && grep -Eq '"conflictsPending" *: *\[\]' <<<"$json" && ! grep -Eq '"commit" *: *null' <<<"$json"; then
        break
      fi
      if [ "$rc" = 2 ]; then
        conflicts=$((conflicts + 1))
        "$recsync" -C "$ws" resolve --ours "$rec" >/dev/null 2>>"$out.err" || true
      else
        errors=$((errors + 1))
        printf '%s: push exited %s: %s\n' "$v" "$rc" "$(grep -E '"(kind|message)"' <<<"$json" | tr -s ' \n' ' ')" >>"$out.err"
      fi
      [ $(($(date +%s%N) - t0)) -ge $((giveup * 1000000000)) ] && { status=gave-up; break; }
    done
    t1=$(date +%s%N)
    echo "$v $t0 $t1 $((tries - 1)) $conflicts $errors $status" >>"$out"
  done
}
# One writer of the git loop a careful script runs: a clone committing P edits of one file (the
# same title value as rs_writer), each pushed with `git push`; only when the push is refused
# (someone pushed first) `git pull --rebase`, then push again, until a push succeeds. A rebase
# conflict (the hot file) is settled keeping this writer's version. Every further push attempt
# is a retry; a push that failed for another reason than a refusal, or a pull that failed, is
# an error (and is tried again the same way).
git_writer() {
  local dir=$1 file=$2 tag=$3 p=$4 out=$5 e v t0 t1 tries conflicts errors status
  for e in $(seq "$p"); do
    v="$tag-e$e"
    sed -i "/\"title\": {/,/\"value\"/ s/\"value\": \"[^\"]*\"/\"value\": \"$v\"/" "$dir/$file"
    t0=$(date +%s%N); tries=0; conflicts=0; errors=0; status=ok
    git -C "$dir" commit -q -am "$v" >>"$out.err" 2>&1
    while :; do
      tries=$((tries + 1))
      git -C "$dir" push -q >"$out.push" 2>&1 && break
      cat "$out.push" >>"$out.err"
      grep -q 'rejected' "$out.push" || { errors=$((errors + 1)); printf '%s: push exited non-zero (not a refusal)\n' "$v" >>"$out.err"; }
      if ! git -C "$dir" pull -q --rebase >>"$out.err" 2>&1; then
        if [ -d "$dir/.git/rebase-merge" ] || [ -d "$dir/.git/rebase-apply" ]; then
          conflicts=$((conflicts + 1))   # during a rebase, "theirs" is the commit being replayed: ours
          git -C "$dir" checkout -q --theirs -- "$file" >>"$out.err" 2>&1 && git -C "$dir" add -- "$file" \
            && GIT_EDITOR=true git -C "$dir" rebase --continue >>"$out.err" 2>&1 || errors=$((errors + 1))
        else
          errors=$((errors + 1))
        fi
      fi
      [ $(($(date +%s%N) - t0)) -ge $((giveup * 1000000000)) ] && { status=gave-up; break; }
    done
    t1=$(date +%s%N)
    echo "$v $t0 $t1 $((tries - 1)) $conflicts $errors $status" >>"$out"
  done
}
export -f rs_writer git_writer

# writers_row TOOL TRANSPORT SCENARIO W N BARE CLONES_PREFIX: W writers of TOOL at once over
# TRANSPORT, each in its own process group; then the row, and the lost-update check against the
# served bare repository.
writers_row() {
  local tool=$1 tr=$2 scen=$3 wn=$4 n=$5 bare=$6 pre=$7 w k tag start t0 t1 out file name zone pids=() c0 c1 lost
  local rd="$nw/wr-$tool-$tr-$scen-$wn"
  mkdir -p "$rd"
  # every clone up to date first (untimed), as a user's would be
  for w in $(seq "$wn"); do
    if [ "$tool" = recsync ]; then quiet "$recsync" -C "$pre$w" pull; else quiet git -C "$pre$w" pull -q; fi
  done
  local files=()
  for w in $(seq "$wn"); do
    # the record: own-zone: the first of zone w-1; one-zone: the w-th of zone0; hot-record: the first of zone0
    case $scen in
      own-zone) zone="zone$((w - 1))"; k=1 ;;
      one-zone) zone=zone0; k=$w ;;
      hot-record) zone=zone0; k=1 ;;
    esac
    files+=("$(awk -F/ -v z="$zone" -v k="$k" '$3 == z && ++i == k {print; exit}' "$nw/records")")
  done
  # every ref the store has (main, and one per zone in format 2): what the run adds is past them
  local start_refs
  start_refs=$(git -C "$bare" for-each-ref --format='%(objectname)' refs/heads/main refs/recsync/zones/)
  c0=$(conns "$tr")
  t0=$(now)
  for w in $(seq "$wn"); do
    file=${files[w - 1]}; zone=${file#zones/*/}; zone=${zone%%/*}; name=${file##*/}; tag="${scen%%-*}$wn-w$w"
    out="$rd/w$w.out"
    if [ "$tool" = recsync ]; then
      setsid bash -c 'rs_writer "$@"' rs_writer "$recsync" "$pre$w" "private/$zone/$name.json" "$zone/$name" "$tag" "$pushes" "$out" &
    else
      setsid bash -c 'git_writer "$@"' git_writer "$pre$w" "$file" "$tag" "$pushes" "$out" &
    fi
    pids+=("$!"); writer_groups+=("$!")
  done
  for w in "${pids[@]}"; do wait "$w" || { echo "bench: a $tool writer failed (see $rd)" >&2; exit 1; }; done
  t1=$(now)
  writer_groups=()
  c1=$(conns "$tr")
  # Lost updates: an acknowledged value missing from the history the run added, or (own-zone,
  # one-zone) a writer's last acknowledged value missing from the final tree.
  # (added lines only: git's writers put the value in their commit messages too)
  local refs ref
  refs=$(git -C "$bare" for-each-ref --format='%(refname)' refs/heads/main refs/recsync/zones/)
  # shellcheck disable=SC2086  # word splitting wanted: lists of refs and object names
  git -C "$bare" log -p --format= $refs --not $start_refs | grep '^+' | grep -oE '[a-z]+[0-9]+-w[0-9]+-e[0-9]+' | sort -u >"$rd/history" || true
  for ref in $refs; do
    git -C "$bare" grep -h -oE '[a-z]+[0-9]+-w[0-9]+-e[0-9]+' "$ref" -- zones zone || true
  done | sort -u >"$rd/final"
  cat "$rd"/*.out | awk '$7 == "ok" {print $1}' | sort -u >"$rd/acked"
  lost=$(comm -23 "$rd/acked" "$rd/history" | wc -l)
  if [ "$scen" != hot-record ]; then
    for w in $(seq "$wn"); do
      awk '$7 == "ok" {v = $1} END {if (v != "") print v}' "$rd/w$w.out"
    done | sort -u >"$rd/last"
    lost=$((lost + $(comm -23 "$rd/last" "$rd/final" | wc -l)))
  fi
  if grep -q 'gave-up' "$rd"/*.out; then
    writer_notes+=("$tool $tr $scen W=$wn: $(cat "$rd"/*.out | grep -c gave-up) edits given up after ${giveup} s of retries")
    echo "bench: ${writer_notes[-1]} (see $rd)" >&2
  fi
  if [ "$lost" != 0 ]; then echo "bench: $tool $tr $scen W=$wn: $lost acknowledged edits lost:" >&2; comm -23 "$rd/acked" "$rd/history" >&2; fi
  if cat "$rd"/*.out | awk '$6 > 0 {e = 1} END {exit !e}'; then
    echo "bench: $tool $tr $scen W=$wn: pushes that failed (retried), first ones:" >&2
    grep -h 'push exited' "$rd"/*.err | head -n 5 >&2 || true
  fi
  # latencies sorted, then: pushes/s, median, p99 (nearest rank), retries and connections per push
  writer_rows+=("$(awk '$7 == "ok" {printf "%.6f %d\n", ($3 - $2) / 1e9, $4}' "$rd"/*.out | sort -g | awk \
    -v tool="$([ "$tool" = recsync ] && [ "$store_format" != 1 ] && echo "rs-f$store_format" || echo "$tool")" -v tr="$tr" -v scen="$scen" -v n="$n" -v w="$wn" -v p="$pushes" -v conns="$((c1 - c0))" -v lost="$lost" \
    -v wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print (b - a) / 1e9}')" '
    function f(s) { return (s >= 1) ? sprintf("%.2f s", s) : sprintf("%.1f ms", s * 1000) }
    { lat[++k] = $1; retries += $2 }
    END {
      if (k == 0) { printf "%-11s %-9s %-7s %6s %4s %3s  nothing acknowledged", scen, tr, tool, n, w, p; exit }
      med = (k % 2) ? lat[(k + 1) / 2] : (lat[k / 2] + lat[k / 2 + 1]) / 2
      i99 = int(0.99 * k); if (i99 < 0.99 * k) i99++
      printf "%-11s %-9s %-7s %6s %4s %3s  %9.1f  %9s  %9s  %9.2f  %10.1f  %4s", scen, tr, tool, n, w, p,
        k / wall, f(med), f(lat[i99]), retries / k, conns / k, lost
    }')")
  echo "   ${writer_rows[-1]}" >&2
}

# writers_bench N: the writers table on a store of N records in max(10, W) zones, over each of
# $writer_transports with stores and clones of its own
writers_bench() {
  local n=$1 zones=10 maxw=0 w scen wn tr
  for w in $writer_counts; do [ "$w" -gt "$maxw" ] && maxw=$w; done
  [ "$maxw" -gt "$zones" ] && zones=$maxw
  echo "== writers, N = $n: making the store ($zones zones), $maxw workspaces and git clones for each of: $writer_transports" >&2
  "$bin/recsync-bench" --make-store "$nw/wr-base.git" --records "$n" --zones "$zones" >&2
  # recsync's writers on a store of --store-format (the same records: they are generated by index)
  local rs_base="$nw/wr-base.git"
  if [ "$store_format" != 1 ]; then
    rs_base="$nw/wr-base-f$store_format.git"
    "$bin/recsync-bench" --make-store "$rs_base" --records "$n" --zones "$zones" --format "$store_format" >&2
  fi
  # the store's record paths (zones/OWNER/ZONE/records/XX/NAME), for both kinds of writer
  git -C "$nw/wr-base.git" ls-tree -r --name-only main -- zones | grep '/records/' | sort >"$nw/records"
  for tr in $writer_transports; do
    cp -r "$rs_base" "$nw/srv/wr-rs-$tr.git"; cp -r "$nw/wr-base.git" "$nw/srv/wr-g-$tr.git"
    for w in $(seq "$maxw"); do
      quiet "$recsync" clone "$(url "$tr" "wr-rs-$tr.git")" "$nw/wr-r-$tr$w"
      quiet git clone -q "$(url "$tr" "wr-g-$tr.git")" "$nw/wr-g-$tr$w"
    done
  done
  for scen in $writer_scenarios; do
    for tr in $writer_transports; do
      for wn in $writer_counts; do
        echo "== writers: $scen, $tr, W = $wn, $pushes pushes each" >&2
        writers_row recsync "$tr" "$scen" "$wn" "$n" "$nw/srv/wr-rs-$tr.git" "$nw/wr-r-$tr"
        writers_row git "$tr" "$scen" "$wn" "$n" "$nw/srv/wr-g-$tr.git" "$nw/wr-g-$tr"
      done
    done
  done
}

# network_bench N: the network table for N records over git:// and ssh, then the writers table
network_bench() {
  local n=$1 tr url_r url_g d
  local net_started
  net_started=$(date +%s)
  nw="$work/net-$n"
  echo "== network, N = $n: making the store, starting git daemon, sshd and nginx (https)" >&2
  mkdir -p "$nw/srv" "$nw/home/.ssh"
  "$bin/recsync-bench" --make-store "$nw/base.git" --records "$n" --zones 10 >&2
  for tr in git ssh https; do  # each transport starts from the same data
    cp -r "$nw/base.git" "$nw/srv/rs-$tr.git"; cp -r "$nw/base.git" "$nw/srv/g-$tr.git"
  done
  start_git_daemon "$nw/srv"
  # recsync finds its ssh key in $HOME/.ssh and trusts the hosts of RECSYNC_SSH_KNOWN_HOSTS;
  # git gets the same key and known_hosts through GIT_SSH_COMMAND. No agent for either.
  ssh-keygen -q -t ed25519 -N '' -C recsync-bench-client -f "$nw/home/.ssh/id_ed25519"
  start_sshd "$nw/sshd" "$nw/home/.ssh/id_ed25519"
  export HOME="$nw/home" RECSYNC_SSH_KNOWN_HOSTS="$nw/sshd/known_hosts"
  export GIT_SSH_COMMAND="ssh -F /dev/null -i '$HOME/.ssh/id_ed25519' -o IdentitiesOnly=yes -o IdentityAgent=none -o UserKnownHostsFile='$RECSYNC_SSH_KNOWN_HOSTS' -o StrictHostKeyChecking=yes -o BatchMode=yes"
  unset SSH_AUTH_SOCK
  # recsync (libgit2 with OpenSSL) trusts the certificates in SSL_CERT_FILE, git those in GIT_SSL_CAINFO
  start_https "$nw/srv" "$nw/https"
  export SSL_CERT_FILE="$https_ca" GIT_SSL_CAINFO="$https_ca"

  local table_transports="git ssh https"
  [ "$writers_only" = 1 ] && table_transports=""
  for tr in $table_transports; do
    url_r=$(url "$tr" "rs-$tr.git"); url_g=$(url "$tr" "g-$tr.git")
    d="$nw/$tr"; mkdir -p "$d"
    echo "== network, N = $n, $tr: clone, pull, push" >&2
    # 1. clone (each run into a new directory, as in the local table)
    rc=(); gc=(); rconns=(); gconns=(); rreqs=(); greqs=(); maxrss=0
    for i in $(seq "$runs"); do
      net_time r "$recsync" clone "$url_r" "$d/rc$i"
      net_time g git clone -q "$url_g" "$d/gc$i"
    done
    mv "$d/rc1" "$d/rc"; mv "$d/gc1" "$d/gc"
    net_report "clone" "$tr" "$n"

    # the workspace / checkout that produces the changes (over git://, untimed)
    quiet "$recsync" clone "git://127.0.0.1:$gd_port/rs-$tr.git" "$d/rcb"
    quiet git clone -q "git://127.0.0.1:$gd_port/g-$tr.git" "$d/gcb"

    # 2. incremental pull of 100 changes (the other clones push them first, untimed)
    net_measure "pull, 100 changed records" "$tr" "$n" \
      'edit_records "$d/rcb/private" 100 "p$i"; quiet "$recsync" -C "$d/rcb" push' \
      '"$recsync" -C "$d/rc" pull' \
      'edit_records "$d/gcb/zones" 100 "p$i"; (cd "$d/gcb" && git add -A && git commit -q -m "p$i" && git push -q)' \
      'git -C "$d/gc" pull -q'

    # 3. a pull with nothing new (the workspace is up to date: the pulls above took everything;
    # after its own push recsync would first take its own commit)
    net_measure "pull, nothing changed" "$tr" "$n" ':' '"$recsync" -C "$d/rc" pull' ':' 'git -C "$d/gc" pull -q'

    # 4. push of one record
    net_measure "push, one record" "$tr" "$n" \
      'edit_records "$d/rc/private" 1 "o$i"' '"$recsync" -C "$d/rc" push' \
      'edit_records "$d/gc/zones" 1 "o$i"' 'sh -c "cd $d/gc && git add -A && git commit -q -m o$i && git push -q"'

    # 5. push of 1,000 edits
    net_measure "push, 1000 edited records" "$tr" "$n" \
      'edit_records "$d/rc/private" 1000 "e$i"' '"$recsync" -C "$d/rc" push' \
      'edit_records "$d/gc/zones" 1000 "e$i"' 'sh -c "cd $d/gc && git add -A && git commit -q -m e$i && git push -q"'
  done
  echo "== network table, N = $n: $(($(date +%s) - net_started)) s" >&2

  writers_bench "$n"
  echo "== network and writers, N = $n: $(($(date +%s) - net_started)) s" >&2
}

[ "$local_rows" = 1 ] || sizes=""
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
  sync_row "clone" recsync "$n" "$n" "$recsync" clone "$d/store.git" "$d/rcs"
  sync_row "clone" git "$n" "$n" git clone -q "$d/git-store.git" "$d/gcs"

  # second workspace / checkout that produces the changes
  "$recsync" clone "$d/store.git" "$d/rcb" >/dev/null 2>&1
  git clone -q "$d/git-store.git" "$d/gcb"

  # 2. incremental pull of 100 changes (the other clones push them first, untimed)
  measure "pull, 100 changed records" "$n" \
    'edit_records "$d/rcb/private" 100 "p$i"; "$recsync" -C "$d/rcb" push >/dev/null 2>&1' \
    '"$recsync" -C "$d/rc" pull' \
    'edit_records "$d/gcb/zones" 100 "p$i"; (cd "$d/gcb" && git add -A && git commit -q -m "p$i" && git push -q)' \
    'git -C "$d/gc" pull -q'

  # 2b. incremental pull of $bulk changes (at most N): the time, and the sync calls of one more
  bc=$(min "$bulk" "$n")
  measure "pull, $bc changed records" "$n" \
    'edit_records "$d/rcb/private" "$bc" "b$i"; quiet "$recsync" -C "$d/rcb" push' \
    '"$recsync" -C "$d/rc" pull' \
    'edit_records "$d/gcb/zones" "$bc" "b$i"; (cd "$d/gcb" && git add -A && git commit -q -m "b$i" && git push -q)' \
    'git -C "$d/gc" pull -q'
  edit_records "$d/rcb/private" "$bc" "bs"; quiet "$recsync" -C "$d/rcb" push
  sync_row "pull, $bc changed records" recsync "$n" "$bc" "$recsync" -C "$d/rc" pull
  edit_records "$d/gcb/zones" "$bc" "bs"; (cd "$d/gcb" && git add -A && git commit -q -m "bs" && git push -q)
  sync_row "pull, $bc changed records" git "$n" "$bc" git -C "$d/gc" pull -q

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

# ---------------------------------------------------------------------------------------------
# Assets: an incremental pull that brings $assets_mb MB of assets ($asset_file_mb MB files, one
# per record), beside git pulling the same files. Peak RSS shows that recsync streams them.
assets_bench() {
  local mb=$1 d="$work/assets" k files
  files=$(( (mb + asset_file_mb - 1) / asset_file_mb ))
  echo "== assets: $files files of $asset_file_mb MB" >&2
  mkdir -p "$d"
  quiet "$recsync" store init "$d/store.git"
  quiet "$recsync" clone "$d/store.git" "$d/a"
  quiet "$recsync" -C "$d/a" zone create media
  quiet "$recsync" clone "$d/store.git" "$d/b0"   # the zone, no records yet: pulls start here
  # No delta search on the git side (random 50 MB blobs do not delta; the default search made
  # the untimed push take many minutes), in both the pushing clone and the served store.
  git init -q --bare "$d/git-store.git"; git -C "$d/git-store.git" config pack.window 0
  git clone -q "$d/git-store.git" "$d/ga" 2>/dev/null; git -C "$d/ga" config pack.window 0
  (cd "$d/ga" && git commit -q --allow-empty -m start && git push -q origin HEAD 2>/dev/null)
  git clone -q "$d/git-store.git" "$d/g0"
  for k in $(seq "$files"); do
    mkdir -p "$d/a/private/media/f$k.assets" "$d/ga/f$k.assets"
    head -c $((asset_file_mb * 1048576)) /dev/urandom >"$d/a/private/media/f$k.assets/file"
    cp "$d/a/private/media/f$k.assets/file" "$d/ga/f$k.assets/file"
    printf '{"file": {"$asset": "file"}, "n": %d}\n' "$k" >"$d/a/private/media/f$k.json"
    cp "$d/a/private/media/f$k.json" "$d/ga/f$k.json"
  done
  quiet "$recsync" -C "$d/a" push
  (cd "$d/ga" && git add -A && git commit -q -m assets && git push -q origin HEAD 2>/dev/null)
  measure "pull, $((files * asset_file_mb)) MB of assets ($files files)" "$files" \
    'rm -rf "$d/b"; cp -a "$d/b0" "$d/b"' '"$recsync" -C "$d/b" pull' \
    'rm -rf "$d/g"; cp -a "$d/g0" "$d/g"' 'git -C "$d/g" pull -q'
  # The same from a packed store (after a git gc where it lives; a network store's mirror
  # always fetches packs): libgit2 1.5 inflates a packed object whole, one asset at a time.
  git -C "$d/store.git" -c pack.window=0 gc -q
  measure "pull, $((files * asset_file_mb)) MB of assets, packed" "$files" \
    'rm -rf "$d/b"; cp -a "$d/b0" "$d/b"' '"$recsync" -C "$d/b" pull' \
    'rm -rf "$d/g"; cp -a "$d/g0" "$d/g"' 'git -C "$d/g" pull -q'
  rm -rf "$d"
}
[ "$assets_mb" -gt 0 ] && [ "$local_rows" = 1 ] && assets_bench "$assets_mb"

[ "$load" = 1 ] && [ "$local_rows" = 1 ] && for n in $load_sizes; do load_bench "$n"; done
[ "$network" = 1 ] && for n in $net_sizes; do network_bench "$n"; done

if [ "${#rows[@]}" -gt 0 ]; then
  printf '%-34s %9s  %-26s %-26s %7s  %8s\n' "operation" "N" "recsync median (min-max)" "git median (min-max)" "ratio" "peak RSS"
  printf '%s\n' "${rows[@]}"
  echo "runs per figure: $runs; peak RSS is the recsync process's maximum over the runs"
fi
if [ "${#sync_rows[@]}" -gt 0 ]; then
  echo
  echo "sync calls (one more, untimed run of the operation under strace -f -c: ${sync_calls//,/, })"
  printf '%-34s %7s  %-8s  %10s  %10s  %s\n' "operation" "N" "tool" "calls" "per record" "by kind"
  printf '%s\n' "${sync_rows[@]}"
  echo "per record: calls per record the operation wrote (clone: N; pull: the changed records)"
fi
if [ "${#load_rows[@]}" -gt 0 ]; then
  echo
  echo "durability under load (the same command idle, and while dd writes $load_mb MB to the same file system)"
  printf '%-28s %-8s %7s  %-26s %-26s %7s\n' "operation" "tool" "N" "idle median (min-max)" "loaded median (min-max)" "loaded/idle"
  printf '%s\n' "${load_rows[@]}"
  echo "runs per figure: $runs; recsync makes every write batch durable, git syncs little (see the sync calls)"
fi
if [ "${#net_rows[@]}" -gt 0 ]; then
  [ "${#rows[@]}" -gt 0 ] && echo
  echo "network (servers on 127.0.0.1; the same server and data for recsync and git)"
  printf '%-28s %-9s %7s  %-26s %-26s %7s  %8s  %s\n' "operation" "transport" "N" "recsync median (min-max)" "git median (min-max)" \
    "ratio" "peak RSS" "connections r/g"
  printf '%s\n' "${net_rows[@]}"
  echo "runs per figure: $runs; peak RSS: the recsync process's maximum over the runs; connections: server"
  echo "connections one operation opened (recsync/git): git daemon requests, sshd logins, and for https the"
  echo "TLS connections nginx logged a request to git-upload-pack or git-receive-pack on, then in brackets"
  echo "those requests (the GET of info/refs?service=... and the POSTs)"
  echo
  echo "writers (W workspaces or git clones pushing single-record edits concurrently over the transport shown)"
  printf '%-11s %-9s %-7s %6s %4s %3s  %9s  %9s  %9s  %9s  %10s  %4s\n' "scenario" "transport" "tool" "N" "W" "P" "pushes/s" "median" "p99" \
    "retries" "conns/push" "lost"
  printf '%s\n' "${writer_rows[@]}"
  echo "latency: from an edit's first push attempt to its acknowledgement; retries: further attempts per"
  echo "acknowledged push (recsync: push again after a conflict or an error; git: push again after a"
  echo "refused push and a pull --rebase); lost: acknowledged edits missing from the store's history or"
  echo "(own-zone, one-zone) its final state. A recsync push fetches and pushes again by itself when the"
  echo "store moved under it: those attempts show in conns/push, not in retries"
  [ "${#writer_notes[@]}" -gt 0 ] && printf 'not acknowledged: %s\n' "${writer_notes[@]}"
fi
echo "measured in $(( ($(date +%s) - started) / 60 )) min $(( ($(date +%s) - started) % 60 )) s; removing the files it made (that takes a while)" >&2

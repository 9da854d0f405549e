# Shell functions the benchmark scripts share; sourced, not run.

# free_port: a port nothing on 127.0.0.1 accepted connections on a moment ago
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}

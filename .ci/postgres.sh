#!/usr/bin/env bash
# Starts a throwaway PostgreSQL for the tests of the PostgreSQL backend and
# prints the environment that points them at it:
#
#   eval "$(.ci/postgres.sh start)"   # sets LOSSLESS_TEST_PG_URL, LOSSLESS_PG_DIR
#   go test ./store/pgstore/ ...
#   .ci/postgres.sh stop "$LOSSLESS_PG_DIR"
#
# The server runs from a temporary data directory, listens only on a unix
# socket inside it (no TCP port), trusts local connections (the directory is
# readable by its owner only), and is stopped and deleted by `stop`.
# PostgreSQL refuses to run as root: as root the script runs it as an
# unprivileged user (postgres when it exists, else it creates lossless-ci).
# When initdb is missing it installs Debian's postgresql package (root only).
# Progress goes to stderr; only the environment goes to stdout.
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

start() {
  local bin
  if ! bin=$(find_bin); then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
      log "initdb not found: installing Debian's postgresql package"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2 ||
        { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2; }
      bin=$(find_bin) || { log "initdb still missing after installing postgresql"; exit 1; }
    else
      log "initdb not found and cannot install postgresql (not root or no apt-get)"
      exit 1
    fi
  fi
  local run=() user
  user=$(id -un)
  if [ "$(id -u)" -eq 0 ]; then
    if id postgres >/dev/null 2>&1; then user=postgres; else
      user=lossless-ci
      id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
    fi
    run=(setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --init-groups --)
  fi
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/lossless-pg.XXXXXX")
  chmod 711 "$dir"
  mkdir "$dir/data" "$dir/sock"
  : >"$dir/server.log"
  [ "$(id -u)" -eq 0 ] && chown "$user" "$dir/data" "$dir/sock" "$dir/server.log"
  chmod 700 "$dir/data"
  chmod 777 "$dir/sock" # the socket's own permissions (below) guard it
  log "initdb in $dir/data as $user"
  "${run[@]}" "$bin/initdb" -D "$dir/data" -U lossless --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$dir/sock'
unix_socket_permissions = 0777
max_connections = 200
shared_buffers = 128MB
fsync = ${LOSSLESS_PG_FSYNC:-on}
EOF
  "${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >&2 ||
    { cat "$dir/server.log" >&2; exit 1; }
  echo "$user" >"$dir/user"
  echo "$bin" >"$dir/bin"
  log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') up on $dir/sock"
  echo "export LOSSLESS_PG_DIR='$dir'"
  echo "export LOSSLESS_TEST_PG_URL='postgres://lossless@/postgres?host=$dir/sock'"
}

stop() {
  local dir=${1:-${LOSSLESS_PG_DIR:-}}
  [ -n "$dir" ] && [ -d "$dir/data" ] || { log "stop: no server directory given"; return 0; }
  local user bin run=()
  user=$(cat "$dir/user") bin=$(cat "$dir/bin")
  [ "$(id -u)" -eq 0 ] && run=(setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --init-groups --)
  "${run[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >&2 || true
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  *) echo "usage: $0 start | stop DIR" >&2; exit 2 ;;
esac

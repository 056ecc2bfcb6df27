#!/usr/bin/env bash
# CI: the module as its users get it (#38 point 4). From the committed HEAD
# (or the commit named; git archive, so nothing uncommitted), build a file module proxy holding
# github.com/lossless-engine/contextengine at a pseudo-version of HEAD, then,
# in empty temporary directories with a fresh GOPATH, GOMODCACHE and GOBIN:
#
#  1. `go install github.com/lossless-engine/contextengine/cmd/lossless@<v>`
#     (Go refuses this for a module with replace directives) and run the
#     binary it made;
#  2. `go get` the module into a scratch module and build a program that
#     imports lossless/badger (Go ignores a dependency's replace
#     directives), and check with `go version -m` that it links the patched
#     Badger of third_party/ and no upstream dgraph-io module;
#  3. build and run a program importing both lossless/badger and upstream
#     Badger (each registers names at init that must not collide).
#
# Dependencies come from the machine's module cache (as a file proxy), then
# from proxy.golang.org. The checksum database is not asked: the install
# checks its dependencies against the module's own go.sum, and the scratch
# module starts from a copy of it; the lossless module itself, which no
# checksum database knows at a pseudo-version of an unpublished commit, is
# exempt (GONOSUMDB).
#
# Usage: .ci/goinstall.sh [commit]   (default HEAD; from anywhere inside the
# repository)
set -euo pipefail
cd "$(dirname "$0")/.."

mod=github.com/lossless-engine/contextengine
rev=$(git rev-parse --verify "${1:-HEAD}^{commit}")
stamp=$(TZ=UTC git show -s --format=%cd --date=format-local:%Y%m%d%H%M%S "$rev")
version="v0.0.0-${stamp}-${rev:0:12}"
cachedl="$(go env GOMODCACHE)/cache/download"

work=$(mktemp -d "${TMPDIR:-/tmp}/lossless-goinstall.XXXXXX")
cleanup() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# The proxy: $proxy/<module>/@v/{list,<v>.info,<v>.mod,<v>.zip}, the zip laid
# out as <module>@<version>/<file> (what the go command unpacks and checks:
# valid paths, no go.mod but the root's, sizes within its limits).
proxy="$work/proxy"
vdir="$proxy/$mod/@v"
mkdir -p "$vdir"
echo "$version" >"$vdir/list"
printf '{"Version":"%s","Time":"%s"}\n' "$version" \
  "$(TZ=UTC git show -s --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ "$rev")" >"$vdir/$version.info"
git show "$rev:go.mod" >"$vdir/$version.mod"
# As the go command's own zips (golang.org/x/mod/zip), a directory holding a
# go.mod of its own is another module's and left out.
excludes=()
while IFS= read -r sub; do
  [ -n "$sub" ] && excludes+=(":(exclude)$(dirname "$sub")")
done < <(git ls-tree -r --name-only "$rev" | grep '/go\.mod$' || true)
git archive --format=zip --prefix="$mod@$version/" -o "$vdir/$version.zip" "$rev" -- . "${excludes[@]}"
echo "goinstall: $mod@$version from commit $rev ($(stat -c %s "$vdir/$version.zip") bytes zipped)"

# A fresh Go environment: nothing of this checkout or of the machine's
# GOPATH is visible but through the proxy.
export GOPATH="$work/gopath" GOMODCACHE="$work/gopath/pkg/mod" GOBIN="$work/bin"
export GOPROXY="file://$proxy,file://$cachedl,https://proxy.golang.org"
export GONOSUMDB="github.com/lossless-engine" GOPRIVATE= GONOPROXY=
export GOFLAGS="-mod=mod" GOWORK=off
export GOTOOLCHAIN=local
mkdir -p "$work/empty" "$GOBIN"

echo "== go install $mod/cmd/lossless@$version"
(cd "$work/empty" && go install "$mod/cmd/lossless@$version")
bin="$GOBIN/lossless"
[ -x "$bin" ] || { echo "goinstall: go install made no $bin"; exit 1; }
"$bin" version
if go version -m "$bin" | grep 'dgraph-io/' >/dev/null; then
  echo "goinstall: the installed lossless links an upstream dgraph-io module:"
  go version -m "$bin" | grep 'dgraph-io/'
  exit 1
fi

echo "== go get $mod@$version into a scratch module, and build a program importing lossless/badger"
scratch="$work/scratch"
mkdir -p "$scratch"
cat >"$scratch/go.mod" <<EOF
module example.com/scratch

go $(go env GOVERSION | sed 's/^go//')
EOF
git show "$rev:go.sum" >"$scratch/go.sum"
cat >"$scratch/main.go" <<'EOF'
// Command scratch opens a lossless engine on a Badger store, as a program
// importing lossless as a library does.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/lossless-engine/contextengine/lossless"
	_ "github.com/lossless-engine/contextengine/lossless/badger"
	"github.com/lossless-engine/contextengine/lossless/config"
)

func main() {
	cfg := config.Default()
	cfg.StoreDir = os.Args[1]
	e, err := lossless.Open(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := e.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("scratch: opened and closed", os.Args[1])
}
EOF
(cd "$scratch" && go get "$mod@$version" && go build -o "$work/scratch-bin" .)
"$work/scratch-bin" "$work/store"
deps=$(go version -m "$work/scratch-bin")
if grep -q 'dgraph-io/' <<<"$deps"; then
  echo "goinstall: the scratch program links an upstream dgraph-io module:"
  echo "$deps" | grep 'dgraph-io/'
  exit 1
fi
syms=$(go tool nm "$work/scratch-bin")
if ! grep -q "$mod/third_party/badger\.Open$" <<<"$syms"; then
  echo "goinstall: the scratch program does not link $mod/third_party/badger"
  exit 1
fi
if ! grep -q "$mod/third_party/ristretto/z\.Preallocate$" <<<"$syms"; then
  echo "goinstall: the scratch program does not link the patched ristretto (z.Preallocate)"
  exit 1
fi
echo "== a program importing $mod/lossless/badger and upstream github.com/dgraph-io/badger/v4 too"
# Both copies register a protobuf file and expvar names at init, which panic
# on a name registered twice: the fork's names are its own (PATCHES.md).
# Upstream Badger's checksums are not in the module's go.sum and the
# checksum database may be out of reach: not verified here (GONOSUMDB for
# it and for its own dependencies that lossless does not share).
both="$work/both"
mkdir -p "$both"
cp "$scratch/go.sum" "$both/"
sed 's#^module .*#module example.com/both#' "$scratch/go.mod" >"$both/go.mod"
cat >"$both/main.go" <<'GO'
// Command both links the patched Badger (through lossless/badger) and
// upstream Badger, and opens a store with each.
package main

import (
	"fmt"
	"os"

	upstream "github.com/dgraph-io/badger/v4"
	fork "github.com/lossless-engine/contextengine/third_party/badger"

	_ "github.com/lossless-engine/contextengine/lossless/badger"
)

func main() {
	for _, open := range []func(string) error{
		func(dir string) error {
			db, err := upstream.Open(upstream.DefaultOptions(dir).WithLogger(nil))
			if err != nil {
				return err
			}
			return db.Close()
		},
		func(dir string) error {
			db, err := fork.Open(fork.DefaultOptions(dir).WithLogger(nil))
			if err != nil {
				return err
			}
			return db.Close()
		},
	} {
		dir, err := os.MkdirTemp("", "both")
		if err == nil {
			err = open(dir)
			os.RemoveAll(dir)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Println("both: upstream Badger and the patched copy opened and closed a store each")
}
GO
(cd "$both" && GONOSUMDB="$GONOSUMDB,github.com/dgraph-io,github.com/dgryski" \
  go get github.com/dgraph-io/badger/v4@v4.9.6 && go build -o "$work/both-bin" .)
"$work/both-bin"
echo "goinstall: passed (go install and library use of $mod@$version link the patched Badger)"

// Command lossless-release builds a release of lossless: the lossless
// binary for every platform the npm packages ship (linux x64 and arm64,
// static without cgo; darwin x64 and arm64; windows x64), each stamped with
// the release version (-X main.version, which `lossless version` and the
// bridge's initialize report), their SHA-256 checksums, and the npm
// tarballs: one platform package per binary (@lossless-engine/lossless-<os>-<cpu>,
// with npm's os/cpu fields) and the OpenClaw plugin
// (@lossless-engine/openclaw-lossless) with its package.json and manifest
// stamped with the same version and its optionalDependencies on the
// platform packages.
//
// Usage, from the repository's root:
//
//	go run ./cmd/lossless-release -version 1.2.3
//
// writes dist/1.2.3/: bin/<os>-<cpu>/lossless[.exe], SHA256SUMS,
// npm/*.tgz (publish the platform packages first, then the plugin), and
// npm/openclaw-lossless/ (the plugin's tarball unpacked, for
// `clawhub package publish`). The version needs a "## <version>" section in
// CHANGELOG.md unless -snapshot is given (CI's throwaway builds).
// -platforms builds a subset (the plugin then lists only those).
// Exit codes: 0 ok, 1 a failure, 2 a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks a bad invocation (exit code 2).
var errUsage = errors.New("usage")

// run parses the command line, builds the release and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lossless-release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts Options
	var platforms string
	fs.StringVar(&opts.Version, "version", "", "the release version, semver without a leading v (1.2.3, 1.3.0-rc.1); required")
	fs.StringVar(&opts.Repo, "repo", ".", "the repository's root (holds go.mod, cmd/lossless, openclaw-plugin, CHANGELOG.md)")
	fs.StringVar(&opts.Out, "out", "", "the output directory, which must not exist or be empty (default <repo>/dist/<version>)")
	fs.StringVar(&platforms, "platforms", strings.Join(PlatformNames(AllPlatforms()), ","), "comma-separated platforms to build, npm names (os-cpu)")
	fs.BoolVar(&opts.Snapshot, "snapshot", false, "a throwaway build (CI): the version needs no CHANGELOG.md section")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./cmd/lossless-release -version X.Y.Z [flags]\n\nBuilds every binary, SHA256SUMS and the npm tarballs of a release.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lossless-release: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var err error
	if opts.Platforms, err = ParsePlatforms(platforms); err != nil {
		fmt.Fprintf(stderr, "lossless-release: %v\n", err)
		return 2
	}
	opts.Log = func(format string, a ...any) {
		fmt.Fprintf(stderr, "lossless-release: "+format+"\n", a...)
	}
	start := time.Now()
	res, err := Build(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "lossless-release: %v\n", err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	fmt.Fprintf(stdout, "lossless %s built in %s into %s\n", res.Version, time.Since(start).Round(100*time.Millisecond), res.Out)
	for _, b := range res.Binaries {
		fmt.Fprintf(stdout, "  %s  %s (%d bytes)\n", b.SHA256, b.Path, b.Size)
	}
	fmt.Fprintf(stdout, "npm tarballs (publish in this order: the platform packages, then the plugin):\n")
	for _, p := range res.Packages {
		fmt.Fprintf(stdout, "  %s  %s\n", p.Name, p.Tarball)
	}
	fmt.Fprintf(stdout, "publish: for f in %s/npm/*.tgz; do npm publish --access public \"$f\"; done  (the plugin's tarball last)\n", res.Out)
	fmt.Fprintf(stdout, "ClawHub: clawhub package publish %s  (the plugin's tarball, unpacked)\n", res.ClawHubDir)
	return 0
}

package main

import (
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/lossless-engine/contextengine/lossless"
)

// version is the release version of this binary, stamped at link time by
// the release command (cmd/lossless-release):
//
//	go build -ldflags "-X main.version=1.2.3" ./cmd/lossless
//
// It is empty in a plain build. The linker is its only writer: nothing
// assigns it at run time, so it is a constant of the binary, not state.
var version string

// releaseVersion matches a release's version as npm and the Go module
// proxy spell it (1.2.3, 1.2.3-rc.1; the Go form's leading v is dropped).
var releaseVersion = regexp.MustCompile(`^v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$`)

// pseudoVersion matches the tail of a Go pseudo-version
// (v0.0.0-20261207073734-aa2debe12345): a commit, not a release.
var pseudoVersion = regexp.MustCompile(`\d{14}-[0-9a-f]{12}$`)

// binaryVersion is the version this binary reports (`lossless version`,
// the bridge's initialize result, which the OpenClaw plugin compares with
// its own): the stamped version; else the module version `go install
// …/cmd/lossless@v1.2.3` recorded in the build info (without its v);
// else the engine's version with "-dev" appended (a build from a
// checkout), which the plugin accepts beside any version of its own.
func binaryVersion() string {
	return resolveVersion(version, buildInfoVersion())
}

// buildInfoVersion is the main module's version recorded in the build
// info ("(devel)", a pseudo-version or a tag), or "" when there is none.
func buildInfoVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return info.Main.Version
}

// resolveVersion picks the reported version from the stamped one and the
// build info's (see binaryVersion).
func resolveVersion(stamped, module string) string {
	if s := strings.TrimSpace(stamped); s != "" {
		return strings.TrimPrefix(s, "v")
	}
	if m := releaseVersion.FindStringSubmatch(module); m != nil && !pseudoVersion.MatchString(module) {
		return m[1]
	}
	return lossless.Version + "-dev"
}

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// repoRoot is the repository's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// hostPlatform is the platform of this machine, when a release ships one.
func hostPlatform(t *testing.T) Platform {
	t.Helper()
	for _, p := range AllPlatforms() {
		if p.GOOS == runtime.GOOS && p.GOARCH == runtime.GOARCH {
			return p
		}
	}
	t.Skipf("no release platform for %s/%s", runtime.GOOS, runtime.GOARCH)
	return Platform{}
}

type entry struct {
	mode int64
	data []byte
}

// readTarball returns the entries of an npm tarball by name.
func readTarball(t *testing.T, file string) map[string]entry {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	tr := tar.NewReader(zr)
	out := map[string]entry{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !strings.HasPrefix(h.Name, "package/") || h.Typeflag != tar.TypeReg {
			t.Fatalf("%s: entry %q (type %c) is not a file under package/", file, h.Name, h.Typeflag)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(h.Name, "package/")] = entry{h.Mode, data}
	}
	return out
}

// TestBuildHost builds a release for this machine's platform and checks
// what a user gets: the binary says the version, SHA256SUMS matches it,
// the platform package carries npm's os/cpu and an executable binary, and
// the plugin's package.json and manifest carry the same version with
// optionalDependencies and requiredPlatformPackages on that package.
func TestBuildHost(t *testing.T) {
	host := hostPlatform(t)
	const version = "3.4.5-test.1"
	out := filepath.Join(t.TempDir(), "rel")
	var logs []string
	res, err := Build(context.Background(), Options{
		Version: version, Repo: repoRoot(t), Out: out, Platforms: []Platform{host}, Snapshot: true,
		Log: func(f string, a ...any) { logs = append(logs, f) },
	})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}

	// The binary, its version and its checksum.
	bin := filepath.Join(out, "bin", host.Name(), host.Exe())
	got, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	if !strings.HasPrefix(string(got), "lossless "+version+" (") {
		t.Fatalf("lossless version printed %q, want version %s", got, version)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(sum[:]) + "  bin/" + host.Name() + "/" + host.Exe() + "\n"; string(sums) != want {
		t.Fatalf("SHA256SUMS = %q, want %q", sums, want)
	}

	// The platform package.
	if len(res.Packages) != 2 || res.Packages[0].Name != host.Package() || res.Packages[1].Name != PluginPackage {
		t.Fatalf("packages %+v, want %s then %s", res.Packages, host.Package(), PluginPackage)
	}
	if base := filepath.Base(res.Packages[0].Tarball); base != "lossless-engine-lossless-"+host.Name()+"-"+version+".tgz" {
		t.Fatalf("platform tarball named %s", base)
	}
	pp := readTarball(t, res.Packages[0].Tarball)
	var ppj struct {
		Name, Version string
		OS, CPU       []string
		Libc          []string
		Files         []string
	}
	if err := json.Unmarshal(pp["package.json"].data, &ppj); err != nil {
		t.Fatalf("platform package.json: %v", err)
	}
	if ppj.Name != host.Package() || ppj.Version != version || len(ppj.OS) != 1 || ppj.OS[0] != host.OS || len(ppj.CPU) != 1 || ppj.CPU[0] != host.CPU || ppj.Libc != nil {
		t.Fatalf("platform package.json %+v", ppj)
	}
	b := pp["bin/"+host.Exe()]
	if !bytes.Equal(b.data, data) || b.mode&0o111 == 0 {
		t.Fatalf("the platform package's bin/%s: %d bytes mode %o, want the built binary (%d bytes), executable", host.Exe(), len(b.data), b.mode, len(data))
	}

	// The plugin package.
	pl := readTarball(t, res.Packages[1].Tarball)
	var pj struct {
		Name                 string
		Version              string
		OptionalDependencies map[string]string
		Scripts              map[string]string
		Openclaw             struct {
			Extensions []string
			Install    struct {
				NpmSpec                  string
				MinHostVersion           string
				RequiredPlatformPackages []string
			}
		}
	}
	if err := json.Unmarshal(pl["package.json"].data, &pj); err != nil {
		t.Fatalf("plugin package.json: %v", err)
	}
	if bytes.Contains(pl["package.json"].data, []byte(`\u00`)) {
		t.Errorf("plugin package.json has escaped characters:\n%s", pl["package.json"].data)
	}
	if pj.Name != PluginPackage || pj.Version != version {
		t.Fatalf("plugin package.json name %q version %q", pj.Name, pj.Version)
	}
	if len(pj.OptionalDependencies) != 1 || pj.OptionalDependencies[host.Package()] != version {
		t.Fatalf("optionalDependencies %v, want %s pinned to %s", pj.OptionalDependencies, host.Package(), version)
	}
	if r := pj.Openclaw.Install.RequiredPlatformPackages; len(r) != 1 || r[0] != host.Package() {
		t.Fatalf("requiredPlatformPackages %v", r)
	}
	if pj.Openclaw.Install.NpmSpec != PluginPackage || pj.Openclaw.Install.MinHostVersion == "" || len(pj.Openclaw.Extensions) != 1 || pj.Scripts != nil {
		t.Fatalf("plugin package.json openclaw block %+v, scripts %v", pj.Openclaw, pj.Scripts)
	}
	var manifest struct{ ID, Version string }
	if err := json.Unmarshal(pl["openclaw.plugin.json"].data, &manifest); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if manifest.ID != "lossless" || manifest.Version != version {
		t.Fatalf("manifest id %q version %q", manifest.ID, manifest.Version)
	}
	// Every file the plugin needs, the same bytes as the checkout's, and no tests.
	var names []string
	for n := range pl {
		names = append(names, n)
		if strings.HasPrefix(n, "test/") || strings.HasPrefix(n, "fixtures/") {
			t.Errorf("the plugin package ships %s", n)
		}
	}
	sort.Strings(names)
	for _, n := range []string{"index.js", "lib/binary.js", "lib/client.js", "lib/engine.js", "lib/tools.json", "README.md", "CHANGELOG.md"} {
		e, ok := pl[n]
		if !ok {
			t.Fatalf("the plugin package lacks %s (has %v)", n, names)
		}
		src := filepath.Join(repoRoot(t), "openclaw-plugin", n)
		if n == "CHANGELOG.md" {
			src = filepath.Join(repoRoot(t), n)
		}
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.data, want) {
			t.Errorf("%s in the tarball differs from %s", n, src)
		}
	}
	// The unpacked copy for ClawHub holds the same package.json.
	if cj, err := os.ReadFile(filepath.Join(res.ClawHubDir, "package.json")); err != nil || !bytes.Equal(cj, pl["package.json"].data) {
		t.Fatalf("ClawHub directory's package.json (%v) differs from the tarball's", err)
	}
	if len(logs) == 0 {
		t.Error("Build reported no progress")
	}

	// The same sources make the same tarball bytes (npm's fixed mtime).
	again := filepath.Join(t.TempDir(), "tgz")
	files, err := platformPackage(res.Binaries[0], version, bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeTarball(again, files); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(again)
	b0, _ := os.ReadFile(res.Packages[0].Tarball)
	if !bytes.Equal(a, b0) {
		t.Error("the platform tarball is not reproducible")
	}
}

// TestBuildRefuses checks bad input: each is refused before anything is
// built, with an error naming what was wrong, and writes nothing.
func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	repo := repoRoot(t)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	notRepo := t.TempDir()
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no version", Options{Repo: repo}, "-version is required"},
		{"leading v", Options{Version: "v1.2.3", Repo: repo}, `version "v1.2.3" is not a semver version`},
		{"two parts", Options{Version: "1.2", Repo: repo}, `version "1.2" is not a semver`},
		{"dev", Options{Version: "1.2.3-dev", Repo: repo, Snapshot: true}, "ends in -dev"},
		{"not in the changelog", Options{Version: "99.0.0", Repo: repo}, `CHANGELOG.md has no "## 99.0.0" section`},
		{"output not empty", Options{Version: "1.2.3", Repo: repo, Snapshot: true, Out: full}, "is not empty"},
		{"not the repository", Options{Version: "1.2.3", Repo: notRepo, Snapshot: true}, "is not the repository's root"},
	} {
		out := tc.opts.Out
		if out == "" {
			tc.opts.Out = filepath.Join(t.TempDir(), "out")
		}
		_, err := Build(context.Background(), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
			continue
		}
		if out == "" {
			if _, serr := os.Stat(tc.opts.Out); !os.IsNotExist(serr) {
				t.Errorf("%s: the output directory was created", tc.name)
			}
		}
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Errorf("the non-empty output directory was written to: %v", entries)
	}
}

func TestParsePlatforms(t *testing.T) {
	t.Parallel()
	ps, err := ParsePlatforms("win32-x64, linux-x64")
	if err != nil || len(ps) != 2 || ps[0].Name() != "linux-x64" || ps[1].Exe() != "lossless.exe" || ps[1].GOOS != "windows" {
		t.Fatalf("ParsePlatforms = %+v, %v", ps, err)
	}
	all, err := ParsePlatforms(strings.Join(PlatformNames(AllPlatforms()), ","))
	if err != nil || len(all) != 5 {
		t.Fatalf("all platforms: %v, %v", all, err)
	}
	for _, bad := range []string{"plan9-x64", "linux-x64,linux-x64", ""} {
		if _, err := ParsePlatforms(bad); err == nil {
			t.Errorf("ParsePlatforms(%q) accepted", bad)
		}
	}
	if _, err := ParsePlatforms("linux-amd64"); err == nil || !strings.Contains(err.Error(), `unknown platform "linux-amd64" (known: linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64)`) {
		t.Errorf("unknown platform error: %v", err)
	}
}

// TestPlatformsMatchPlugin checks the release's platforms are the ones the
// plugin's JavaScript and its checkout package.json know.
func TestPlatformsMatchPlugin(t *testing.T) {
	t.Parallel()
	js, err := os.ReadFile(filepath.Join(repoRoot(t), "openclaw-plugin", "lib", "binary.js"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "openclaw-plugin", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pj struct {
		Name                 string
		OptionalDependencies map[string]string
	}
	if err := json.Unmarshal(raw, &pj); err != nil {
		t.Fatal(err)
	}
	if pj.Name != PluginPackage {
		t.Fatalf("openclaw-plugin/package.json is %s, the release packs %s", pj.Name, PluginPackage)
	}
	for _, p := range AllPlatforms() {
		if !strings.Contains(string(js), `"`+p.Name()+`": `+"`${SCOPE}/lossless-"+p.Name()+"`") {
			t.Errorf("lib/binary.js does not map %s to %s", p.Name(), p.Package())
		}
		if _, ok := pj.OptionalDependencies[p.Package()]; !ok {
			t.Errorf("package.json's optionalDependencies lack %s", p.Package())
		}
	}
	if len(pj.OptionalDependencies) != len(AllPlatforms()) {
		t.Errorf("package.json lists %d platform packages, the release builds %d", len(pj.OptionalDependencies), len(AllPlatforms()))
	}
}

func TestChangelogHas(t *testing.T) {
	t.Parallel()
	log := []byte("# Changelog\n\n## 1.2.0 — 2026-12-07\n\n- x\n\n## [1.1.0]\n\n## v1.0.0\n### 0.9.0\n")
	for v, want := range map[string]bool{"1.2.0": true, "1.1.0": true, "1.0.0": true, "0.9.0": false, "1.2": false, "2.0.0": false} {
		if got := ChangelogHas(log, v); got != want {
			t.Errorf("ChangelogHas(%q) = %v, want %v", v, got, want)
		}
	}
	// The repository's changelog names the version in the checkout's package.json.
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "openclaw-plugin", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pj struct{ Version string }
	if err := json.Unmarshal(raw, &pj); err != nil {
		t.Fatal(err)
	}
	cl, err := os.ReadFile(filepath.Join(repoRoot(t), "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if next := strings.TrimSuffix(pj.Version, "-dev"); !ChangelogHas(cl, next) {
		t.Errorf("CHANGELOG.md has no section for %s, the version the checkout is heading to (package.json %s)", next, pj.Version)
	}
}

func TestTarballName(t *testing.T) {
	t.Parallel()
	if got := TarballName("@lossless-engine/openclaw-lossless", "1.2.3"); got != "lossless-engine-openclaw-lossless-1.2.3.tgz" {
		t.Fatal(got)
	}
}

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
)

// Scope is the npm scope of the plugin and its platform packages.
const Scope = "@lossless-engine"

// PluginPackage is the npm name of the OpenClaw plugin.
const PluginPackage = Scope + "/openclaw-lossless"

// Platform is one target of a release: Go's GOOS/GOARCH and npm's os/cpu.
type Platform struct {
	GOOS, GOARCH string
	OS, CPU      string // npm's names (process.platform, process.arch)
}

// Name is the platform's npm name, os-cpu (linux-x64).
func (p Platform) Name() string { return p.OS + "-" + p.CPU }

// Package is the npm package holding the platform's binary.
func (p Platform) Package() string { return Scope + "/lossless-" + p.Name() }

// Exe is the binary's file name on the platform.
func (p Platform) Exe() string {
	if p.GOOS == "windows" {
		return "lossless.exe"
	}
	return "lossless"
}

// AllPlatforms returns the platforms a release ships, in the order they
// are built. The Linux binaries are static (CGO_ENABLED=0), so one package
// serves glibc and musl. openclaw-plugin/lib/binary.js lists the same.
func AllPlatforms() []Platform {
	return []Platform{
		{"linux", "amd64", "linux", "x64"},
		{"linux", "arm64", "linux", "arm64"},
		{"darwin", "amd64", "darwin", "x64"},
		{"darwin", "arm64", "darwin", "arm64"},
		{"windows", "amd64", "win32", "x64"},
	}
}

// PlatformNames returns the npm names of ps.
func PlatformNames(ps []Platform) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name()
	}
	return out
}

// ParsePlatforms parses a comma-separated list of npm platform names
// (linux-x64, …) into platforms, in AllPlatforms' order; an unknown or
// repeated name is an error naming it and the known ones.
func ParsePlatforms(s string) ([]Platform, error) {
	want := map[string]bool{}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if want[n] {
			return nil, fmt.Errorf("-platforms: %q given twice", n)
		}
		known := false
		for _, p := range AllPlatforms() {
			known = known || p.Name() == n
		}
		if !known {
			return nil, fmt.Errorf("-platforms: unknown platform %q (known: %s)", n, strings.Join(PlatformNames(AllPlatforms()), ", "))
		}
		want[n] = true
	}
	if len(want) == 0 {
		return nil, errors.New("-platforms: no platform given")
	}
	var out []Platform
	for _, p := range AllPlatforms() {
		if want[p.Name()] {
			out = append(out, p)
		}
	}
	return out, nil
}

// Options configure Build.
type Options struct {
	Version   string     // the release version (semver, no leading v)
	Repo      string     // the repository's root
	Out       string     // the output directory; default <Repo>/dist/<Version>
	Platforms []Platform // default AllPlatforms()
	Snapshot  bool       // no CHANGELOG.md section needed
	// Go is the go command; default "go" on PATH.
	Go string
	// Log reports progress; nil is silent.
	Log func(format string, a ...any)
}

// Binary is one built binary.
type Binary struct {
	Platform Platform
	Path     string // under Result.Out
	SHA256   string
	Size     int64
}

// Package is one npm tarball.
type Package struct {
	Name    string
	Tarball string // the .tgz file's path
}

// Result is what Build wrote.
type Result struct {
	Version    string
	Out        string
	Binaries   []Binary
	Packages   []Package // the platform packages, then the plugin
	Checksums  string    // the SHA256SUMS file
	ClawHubDir string    // the plugin's package unpacked
}

// semver is a version npm and the Go module proxy both accept.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// Build builds the release described by opts (see the package comment).
// It checks everything it can before building (the version, the
// changelog, the repository, an empty output directory) and writes only
// into the output directory.
func Build(ctx context.Context, opts Options) (*Result, error) {
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	v := opts.Version
	if v == "" {
		return nil, fmt.Errorf("%w: -version is required", errUsage)
	}
	if !semver.MatchString(v) {
		return nil, fmt.Errorf("%w: version %q is not a semver version like 1.2.3 or 1.3.0-rc.1 (no leading v)", errUsage, v)
	}
	if strings.HasSuffix(v, "-dev") {
		return nil, fmt.Errorf("%w: version %q ends in -dev, which the plugin takes for a source build (it would skip its version check)", errUsage, v)
	}
	platforms := opts.Platforms
	if len(platforms) == 0 {
		platforms = AllPlatforms()
	}
	repo, err := filepath.Abs(opts.Repo)
	if err != nil {
		return nil, fmt.Errorf("repository: %w", err)
	}
	for _, f := range []string{"go.mod", "cmd/lossless/main.go", "openclaw-plugin/package.json", "openclaw-plugin/openclaw.plugin.json", "CHANGELOG.md"} {
		if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
			return nil, fmt.Errorf("%w: %s is not the repository's root (-repo): %w", errUsage, repo, err)
		}
	}
	changelog, err := os.ReadFile(filepath.Join(repo, "CHANGELOG.md"))
	if err != nil {
		return nil, fmt.Errorf("CHANGELOG.md: %w", err)
	}
	if !opts.Snapshot && !ChangelogHas(changelog, v) {
		return nil, fmt.Errorf("%w: CHANGELOG.md has no \"## %s\" section: say what this version changed (or pass -snapshot for a throwaway build)", errUsage, v)
	}
	out := opts.Out
	if out == "" {
		out = filepath.Join(repo, "dist", v)
	}
	if out, err = filepath.Abs(out); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%w: output directory %s is not empty (a release is built into a fresh directory)", errUsage, out)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	goCmd := opts.Go
	if goCmd == "" {
		if goCmd, err = exec.LookPath("go"); err != nil {
			return nil, fmt.Errorf("the go command is needed to build the binaries: %w", err)
		}
	}
	plugin, err := readPlugin(repo)
	if err != nil {
		return nil, err
	}

	res := &Result{Version: v, Out: out}
	for _, p := range platforms {
		rel := filepath.Join("bin", p.Name(), p.Exe())
		dst := filepath.Join(out, rel)
		logf("building %s (GOOS=%s GOARCH=%s CGO_ENABLED=0)", p.Name(), p.GOOS, p.GOARCH)
		if err := buildBinary(ctx, goCmd, repo, p, v, dst); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(dst)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name(), err)
		}
		sum := sha256.Sum256(data)
		res.Binaries = append(res.Binaries, Binary{Platform: p, Path: rel, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))})
	}
	// The binary of this host says the version it was stamped with.
	for _, b := range res.Binaries {
		if b.Platform.GOOS == runtime.GOOS && b.Platform.GOARCH == runtime.GOARCH {
			if err := checkVersion(ctx, filepath.Join(out, b.Path), v); err != nil {
				return nil, err
			}
		}
	}
	var sums strings.Builder
	for _, b := range res.Binaries {
		fmt.Fprintf(&sums, "%s  %s\n", b.SHA256, filepath.ToSlash(b.Path))
	}
	res.Checksums = filepath.Join(out, "SHA256SUMS")
	if err := os.WriteFile(res.Checksums, []byte(sums.String()), 0o644); err != nil {
		return nil, fmt.Errorf("SHA256SUMS: %w", err)
	}

	npmDir := filepath.Join(out, "npm")
	if err := os.MkdirAll(npmDir, 0o755); err != nil {
		return nil, fmt.Errorf("npm directory: %w", err)
	}
	for _, b := range res.Binaries {
		files, err := platformPackage(b, v, filepath.Join(out, b.Path))
		if err != nil {
			return nil, err
		}
		tgz := filepath.Join(npmDir, TarballName(b.Platform.Package(), v))
		if err := writeTarball(tgz, files); err != nil {
			return nil, err
		}
		res.Packages = append(res.Packages, Package{Name: b.Platform.Package(), Tarball: tgz})
	}
	files, err := plugin.stamp(v, platforms, changelog)
	if err != nil {
		return nil, err
	}
	tgz := filepath.Join(npmDir, TarballName(PluginPackage, v))
	if err := writeTarball(tgz, files); err != nil {
		return nil, err
	}
	res.Packages = append(res.Packages, Package{Name: PluginPackage, Tarball: tgz})
	res.ClawHubDir = filepath.Join(npmDir, "openclaw-lossless")
	if err := writeTree(res.ClawHubDir, files); err != nil {
		return nil, err
	}
	logf("wrote %d binaries, SHA256SUMS and %d npm tarballs into %s", len(res.Binaries), len(res.Packages), out)
	return res, nil
}

// ChangelogHas reports whether changelog has a "## <version>" heading
// ("## 1.2.3", "## [1.2.3]", "## v1.2.3 — 2026-12-07").
func ChangelogHas(changelog []byte, version string) bool {
	re := regexp.MustCompile(`(?m)^##\s+\[?v?` + regexp.QuoteMeta(version) + `\]?(\s|$)`)
	return re.Match(changelog)
}

// TarballName is the file name `npm pack` gives a package's tarball
// (@scope/name 1.2.3 → scope-name-1.2.3.tgz).
func TarballName(pkg, version string) string {
	return strings.ReplaceAll(strings.TrimPrefix(pkg, "@"), "/", "-") + "-" + version + ".tgz"
}

// buildBinary cross-compiles cmd/lossless for p, stamped with version.
func buildBinary(ctx context.Context, goCmd, repo string, p Platform, version, dst string) error {
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", dst, "./cmd/lossless")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOOS="+p.GOOS, "GOARCH="+p.GOARCH, "CGO_ENABLED=0")
	var outb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outb, &outb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s: %w\n%s", p.Name(), err, outb.String())
	}
	return nil
}

// checkVersion runs `bin version` and checks it reports version.
func checkVersion(ctx context.Context, bin, version string) error {
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", bin, err)
	}
	if !strings.HasPrefix(string(out), "lossless "+version+" (") {
		return fmt.Errorf("%s version printed %q, not version %s: the stamp did not take", bin, strings.TrimSpace(string(out)), version)
	}
	return nil
}

// file is one file of an npm package: its path under package/, its bytes
// and mode.
type file struct {
	name string
	data []byte
	mode int64
}

// platformPackage is the platform package of b: a package.json with npm's
// os and cpu (no libc: the Linux binaries are static), a README, and the
// binary under bin/.
func platformPackage(b Binary, version, binPath string) ([]file, error) {
	data, err := os.ReadFile(binPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Platform.Name(), err)
	}
	p := b.Platform
	pkg := map[string]any{
		"name":            p.Package(),
		"version":         version,
		"description":     fmt.Sprintf("The lossless context engine's binary for %s (used by %s)", p.Name(), PluginPackage),
		"license":         "MIT",
		"os":              []string{p.OS},
		"cpu":             []string{p.CPU},
		"files":           []string{"bin/", "README.md"},
		"preferUnplugged": true,
	}
	pj, err := marshalOrdered(pkg, []string{"name", "version", "description", "license", "os", "cpu", "files", "preferUnplugged"})
	if err != nil {
		return nil, err
	}
	readme := fmt.Sprintf("# %s\n\nThe `lossless` binary %s for %s (GOOS=%s GOARCH=%s, built without cgo), at `bin/%s`,\nSHA-256 %s.\n\nInstalled by npm as an optional dependency of [%s](https://www.npmjs.com/package/%s), the OpenClaw\nplugin, which runs it; nothing to do with it directly.\n",
		p.Package(), version, p.Name(), p.GOOS, p.GOARCH, p.Exe(), b.SHA256, PluginPackage, PluginPackage)
	return []file{
		{name: "package.json", data: pj, mode: 0o644},
		{name: "README.md", data: []byte(readme), mode: 0o644},
		{name: path.Join("bin", p.Exe()), data: data, mode: 0o755},
	}, nil
}

// jsonIndent encodes v indented by two spaces after prefix, without
// escaping <, > and & (npm writes ">=20", not "\u003e=20").
func jsonIndent(v any, prefix string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("package.json: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// pluginSource is the OpenClaw plugin as the repository holds it.
type pluginSource struct {
	dir      string
	pkg      map[string]any // package.json, decoded in order-insensitive form
	pkgOrder []string       // its top-level keys in file order
	manifest []byte         // openclaw.plugin.json
}

// readPlugin reads openclaw-plugin/package.json and its manifest.
func readPlugin(repo string) (*pluginSource, error) {
	dir := filepath.Join(repo, "openclaw-plugin")
	raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return nil, fmt.Errorf("plugin: %w", err)
	}
	var pkg map[string]any
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return nil, fmt.Errorf("plugin: openclaw-plugin/package.json: %w", err)
	}
	if pkg["name"] != PluginPackage {
		return nil, fmt.Errorf("plugin: openclaw-plugin/package.json is named %v, want %s", pkg["name"], PluginPackage)
	}
	order, err := topLevelKeys(raw)
	if err != nil {
		return nil, fmt.Errorf("plugin: openclaw-plugin/package.json: %w", err)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "openclaw.plugin.json"))
	if err != nil {
		return nil, fmt.Errorf("plugin: %w", err)
	}
	return &pluginSource{dir: dir, pkg: pkg, pkgOrder: order, manifest: manifest}, nil
}

// topLevelKeys returns the keys of a JSON object in their order.
func topLevelKeys(raw []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := t.(string)
		if !ok {
			return nil, fmt.Errorf("unexpected token %v", t)
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// manifestVersion matches the manifest's top-level "version" field (the
// only one at two spaces of indentation).
var manifestVersion = regexp.MustCompile(`(?m)^  "version": "[^"]*"`)

// stamp returns the plugin package's files for version: package.json with
// the version, optionalDependencies on the platform packages of this
// release (pinned to it) and the same names in
// openclaw.install.requiredPlatformPackages; the manifest with the
// version; the files package.json lists; CHANGELOG.md.
func (s *pluginSource) stamp(version string, platforms []Platform, changelog []byte) ([]file, error) {
	pkg := map[string]any{}
	for k, v := range s.pkg {
		pkg[k] = v
	}
	pkg["version"] = version
	deps := map[string]any{}
	var names []string
	for _, p := range platforms {
		deps[p.Package()] = version
		names = append(names, p.Package())
	}
	sort.Strings(names)
	pkg["optionalDependencies"] = deps
	oc, _ := pkg["openclaw"].(map[string]any)
	if oc == nil {
		return nil, errors.New("plugin: package.json has no openclaw block")
	}
	oc = cloneMap(oc)
	install := cloneMap(mapOf(oc["install"]))
	install["requiredPlatformPackages"] = names
	oc["install"] = install
	pkg["openclaw"] = oc
	delete(pkg, "scripts") // the tests are not shipped
	pj, err := marshalOrdered(pkg, s.pkgOrder)
	if err != nil {
		return nil, err
	}
	if !manifestVersion.Match(s.manifest) {
		return nil, errors.New(`plugin: openclaw.plugin.json has no top-level "version" line to stamp`)
	}
	manifest := manifestVersion.ReplaceAll(s.manifest, []byte(`  "version": "`+version+`"`))
	if err := checkManifest(manifest, version); err != nil {
		return nil, err
	}
	files := []file{{name: "package.json", data: pj, mode: 0o644}, {name: "openclaw.plugin.json", data: manifest, mode: 0o644}}
	listed, _ := s.pkg["files"].([]any)
	seen := map[string]bool{"package.json": true, "openclaw.plugin.json": true}
	for _, l := range listed {
		name, _ := l.(string)
		if name == "" || seen[strings.TrimSuffix(name, "/")] {
			continue
		}
		if name == "CHANGELOG.md" {
			files = append(files, file{name: name, data: changelog, mode: 0o644})
			seen[name] = true
			continue
		}
		got, err := collect(s.dir, strings.TrimSuffix(name, "/"))
		if err != nil {
			return nil, fmt.Errorf("plugin: files entry %q: %w", name, err)
		}
		for _, f := range got {
			if !seen[f.name] {
				seen[f.name] = true
				files = append(files, f)
			}
		}
	}
	return files, nil
}

// checkManifest checks the stamped manifest is JSON with the version.
func checkManifest(manifest []byte, version string) error {
	var m struct {
		ID      string `json:"id"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		return fmt.Errorf("plugin: stamped openclaw.plugin.json: %w", err)
	}
	if m.Version != version || m.ID == "" {
		return fmt.Errorf("plugin: stamped openclaw.plugin.json has id %q version %q, want version %s", m.ID, m.Version, version)
	}
	return nil
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// marshalOrdered writes a JSON object with its keys in order (then any
// others, sorted), each value indented.
func marshalOrdered(m map[string]any, order []string) ([]byte, error) {
	keys := append([]string(nil), order...)
	var extra []string
	for k := range m {
		found := false
		for _, o := range order {
			found = found || o == k
		}
		if !found {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	keys = append(keys, extra...)
	var b bytes.Buffer
	b.WriteString("{\n")
	first := true
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			continue
		}
		kb, err := jsonIndent(k, "")
		if err != nil {
			return nil, err
		}
		vb, err := jsonIndent(v, "  ")
		if err != nil {
			return nil, err
		}
		if !first {
			b.WriteString(",\n")
		}
		first = false
		b.WriteString("  ")
		b.Write(kb)
		b.WriteString(": ")
		b.Write(vb)
	}
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}

// collect reads a file, or every file under a directory, of dir as
// package files (slash paths relative to dir).
func collect(dir, name string) ([]file, error) {
	root := filepath.Join(dir, filepath.FromSlash(name))
	st, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	var out []file
	add := func(p string, mode os.FileMode) error {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		m := int64(0o644)
		if mode&0o111 != 0 {
			m = 0o755
		}
		out = append(out, file{name: filepath.ToSlash(rel), data: data, mode: m})
		return nil
	}
	if !st.IsDir() {
		return out, add(root, st.Mode())
	}
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return add(p, info.Mode())
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, err
}

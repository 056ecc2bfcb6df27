package lossless

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLayout holds #29's layout: the root package never imports the
// engine; no package under lossless/ imports package lossless but the
// explorer's queries and the two store registrations (each part reaches
// the engine through its Port); and no package of the engine is over
// maxPackageLines non-test lines (the issue's "~4,000"). Checked with `go
// list`; skipped without the go tool.
func TestLayout(t *testing.T) {
	const (
		module          = "github.com/lossless-engine/contextengine"
		engine          = module + "/lossless"
		maxPackageLines = 4450
	)
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go tool not found: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", module).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", module, err)
	}
	if !strings.Contains(string(out), module+"/core\n") {
		t.Fatalf("go list -deps %s: core missing: %q", module, out)
	}
	for _, d := range strings.Fields(string(out)) {
		if d == engine || strings.HasPrefix(d, engine+"/") {
			t.Errorf("the root package depends on %s", d)
		}
	}

	out, err = exec.Command(gobin, "list", "-f", "{{.ImportPath}} {{.Dir}} {{join .GoFiles \",\"}} {{join .Imports \",\"}}", engine+"/...").Output()
	if err != nil {
		t.Fatalf("go list %s/...: %v", engine, err)
	}
	mayImport := map[string]bool{engine + "/explore": true, engine + "/badger": true, engine + "/postgres": true}
	pkgs := 0
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Split(sc.Text(), " ")
		if len(f) < 3 {
			t.Fatalf("go list line %q", sc.Text())
		}
		pkg, dir, files := f[0], f[1], strings.Split(f[2], ",")
		pkgs++
		if len(f) > 3 && pkg != engine && !mayImport[pkg] {
			for _, imp := range strings.Split(f[3], ",") {
				if imp == engine {
					t.Errorf("%s imports %s: a part reaches the engine through its Port", pkg, engine)
				}
			}
		}
		lines := 0
		for _, name := range files {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			lines += strings.Count(string(b), "\n")
		}
		if lines > maxPackageLines {
			t.Errorf("%s has %d non-test lines, over %d", pkg, lines, maxPackageLines)
		}
	}
	if pkgs < 10 {
		t.Fatalf("go list %s/...: %d packages: %q", engine, pkgs, out)
	}
}

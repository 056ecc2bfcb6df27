package pgstore

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoBleve: the PostgreSQL backend and the recall contract it
// implements (package index) link no Bleve package: Bleve is the Badger
// backend's recall index (package bleveindex) only. Checked with `go list
// -deps`; skipped without the go tool.
func TestNoBleve(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go tool not found: %v", err)
	}
	for _, pkg := range []string{
		"github.com/lossless-engine/contextengine/store/pgstore",
		"github.com/lossless-engine/contextengine/index",
	} {
		out, err := exec.Command(gobin, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 || !strings.Contains(string(out), "github.com/lossless-engine/contextengine/core\n") {
			t.Fatalf("go list -deps %s: %d packages, core missing: %q", pkg, len(deps), out)
		}
		for _, d := range deps {
			if strings.HasPrefix(d, "github.com/blevesearch/bleve/") || strings.HasPrefix(d, "github.com/blevesearch/bleve_") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}

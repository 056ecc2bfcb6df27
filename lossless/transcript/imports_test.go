package transcript_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The part is a leaf (#40): it depends on no package of the engine but its
// shared leaves (lossless/internal/..., lossless/config), never on package
// lossless nor on another part.
func TestLeafImports(t *testing.T) {
	const engine = "github.com/lossless-engine/contextengine/lossless"
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go tool not found: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", engine+"/transcript").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps: %q", out)
	}
	for _, d := range deps {
		if d == engine+"/transcript" || !(d == engine || strings.HasPrefix(d, engine+"/")) {
			continue
		}
		if !strings.HasPrefix(d, engine+"/internal/") && d != engine+"/config" {
			t.Errorf("transcript depends on %s", d)
		}
	}
}

package ui_test

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/internal/testutil"
)

// maxScreenshotBytes bounds the README's screenshot of the explorer (#18).
const maxScreenshotBytes = 300_000

// TestREADMEScreenshot: the README shows docs/ui.png, a PNG under 300 KB,
// beside the command that serves the explorer.
func TestREADMEScreenshot(t *testing.T) {
	root := testutil.RepoRoot()
	b, err := os.ReadFile(filepath.Join(root, "docs", "ui.png"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) >= maxScreenshotBytes {
		t.Errorf("docs/ui.png is %d bytes, over %d", len(b), maxScreenshotBytes)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("docs/ui.png: %v", err)
	}
	if cfg.Width < 800 || cfg.Height < 400 {
		t.Errorf("docs/ui.png is %dx%d: too small to read", cfg.Width, cfg.Height)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"](docs/ui.png)", "lossless ui"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
}

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

// TestREADMEMemoryTab: the README's "Seeing the memory" section starts
// with the Control UI's Memory tab and its screenshot (docs/memory-tab.png,
// a PNG under 300 KB), before the standalone explorer (#39).
func TestREADMEMemoryTab(t *testing.T) {
	root := testutil.RepoRoot()
	b, err := os.ReadFile(filepath.Join(root, "docs", "memory-tab.png"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) >= maxScreenshotBytes {
		t.Errorf("docs/memory-tab.png is %d bytes, over %d", len(b), maxScreenshotBytes)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(b)); err != nil || cfg.Width < 800 || cfg.Height < 400 {
		t.Errorf("docs/memory-tab.png: %+v %v", cfg, err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "### Seeing the memory")
	if start < 0 {
		t.Fatal(`README.md has no "### Seeing the memory" section`)
	}
	section := text[start:]
	if end := strings.Index(section[4:], "\n## "); end >= 0 {
		section = section[:end+4]
	}
	tab, standalone := strings.Index(section, "](docs/memory-tab.png)"), strings.Index(section, "](docs/ui.png)")
	if tab < 0 || standalone < 0 || tab > standalone {
		t.Errorf("the section shows the Memory tab's screenshot at %d and the standalone explorer's at %d: the tab comes first", tab, standalone)
	}
	if head := section[:min(len(section), 400)]; !strings.Contains(head, "Memory") || !strings.Contains(head, "Control UI") {
		t.Errorf("the section does not start with the Control UI's Memory tab: %q", head)
	}
}

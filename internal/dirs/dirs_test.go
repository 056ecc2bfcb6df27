package dirs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMakeUnmake: Make returns exactly the directories it made, and
// Unmake removes those and nothing that was there before.
func TestMakeUnmake(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b", "c")
	made, err := Make(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b"), dir}
	if len(made) != len(want) {
		t.Fatalf("made %v, want %v", made, want)
	}
	for i := range want {
		if made[i] != want[i] {
			t.Fatalf("made %v, want %v", made, want)
		}
	}
	if again, err := Make(dir); err != nil || len(again) != 0 {
		t.Fatalf("Make of an existing directory made %v (%v)", again, err)
	}
	if err := Unmake(made); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "a")); !os.IsNotExist(err) {
		t.Fatalf("a made directory stays: %v", err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Fatalf("the directory that was there is gone: %v", err)
	}
}

// Package dirs makes a directory and its missing parents, and removes
// again those it made, for an open that fails after making them (an empty
// directory left behind would read as "no store here").
package dirs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Make is os.MkdirAll(dir, 0o755) that returns the directories it made,
// outermost first.
func Make(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append([]string{d}, missing...)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return missing, nil
}

// Unmake removes the directories Make made (innermost first); it stops at
// the first it cannot remove and returns that error.
func Unmake(made []string) error {
	for i := len(made) - 1; i >= 0; i-- {
		if err := os.Remove(made[i]); err != nil {
			return err
		}
	}
	return nil
}

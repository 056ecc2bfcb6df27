package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// DefaultStoreDir returns the store directory used when Config.StoreDir is
// empty: <agentDir>/lossless when agentDir is set, else
// $XDG_DATA_HOME/lossless, else ~/.local/share/lossless.
func DefaultStoreDir(agentDir string) (string, error) {
	if agentDir != "" {
		return filepath.Join(agentDir, "lossless"), nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "lossless"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("lossless: no store directory: %w", err)
	}
	return filepath.Join(home, ".local", "share", "lossless"), nil
}

// IsStoreURL reports whether s names a PostgreSQL store (a URL starting
// with postgres:// or postgresql://) rather than a directory.
func IsStoreURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// RedactURL returns a store URL with its password replaced by "xxxxx", for
// messages and logs (s itself when it does not parse as a URL with a
// password).
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		// Unparsable: hide whatever stands between the scheme and an @.
		if i := strings.Index(s, "://"); i >= 0 {
			if j := strings.LastIndex(s, "@"); j > i {
				return s[:i+3] + "xxxxx" + s[j:]
			}
		}
		return s
	}
	if u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); !ok {
		return s
	}
	return u.Redacted()
}

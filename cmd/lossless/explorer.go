package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/ui"
)

// The memory explorer's state, kept so that its URL is usable from outside
// the engine process (OpenClaw's log redacts or cuts the token) and stays
// the same across restarts: two owner-only (0600) files in the store
// directory, or for a PostgreSQL store (no directory) in
// $XDG_STATE_HOME/lossless/ui-<hash of the URL without its password>
// (default ~/.local/state/...), per machine since the port is.
const (
	// explorerTokenFile holds the access token, reused at every start of
	// `serve --ui`; `lossless ui --rotate-token` (or deleting the file)
	// replaces it at the next start.
	explorerTokenFile = "ui-token"
	// explorerURLFile holds the URL, token included, that the last
	// `serve --ui` served; its port is tried first at the next start.
	explorerURLFile = "ui-url"
)

// errNoExplorerURL is returned by readExplorerURL when no engine process
// has written the URL file.
var errNoExplorerURL = errors.New("no memory explorer URL")

// explorerStateDir returns where the explorer's files of store (a
// directory, or a PostgreSQL URL) live.
func explorerStateDir(store string) (string, error) {
	if !config.IsStoreURL(store) {
		if store == "" {
			return "", errors.New("lossless: explorer: no store directory")
		}
		return store, nil
	}
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("lossless: explorer: no state directory for %s: %w", config.RedactURL(store), err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	// The database's identity: the URL without password and parameters.
	id := store
	if u, err := url.Parse(store); err == nil {
		if u.User != nil {
			u.User = url.User(u.User.Username())
		}
		u.RawQuery, u.Fragment = "", ""
		id = u.String()
	}
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(base, "lossless", "ui-"+hex.EncodeToString(sum[:8])), nil
}

// writePrivate writes data to dir/name with mode 0600, atomically (a
// temporary file renamed over it), creating dir (0700) when needed.
func writePrivate(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("lossless: explorer: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("lossless: explorer: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("lossless: explorer: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("lossless: explorer: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("lossless: explorer: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("lossless: explorer: %w", err)
	}
	return nil
}

// explorerToken returns the token kept in dir, making and keeping one when
// there is none (or it is not a token ui.NewToken makes). A kept file
// readable by others is made owner-only again.
func explorerToken(dir string) (string, error) {
	path := filepath.Join(dir, explorerTokenFile)
	b, err := os.ReadFile(path)
	if err == nil {
		if tok := strings.TrimSpace(string(b)); validToken(tok) {
			if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
				if err := os.Chmod(path, 0o600); err != nil {
					return "", fmt.Errorf("lossless: explorer: %w", err)
				}
			}
			return tok, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("lossless: explorer: %w", err)
	}
	return rotateExplorerToken(dir)
}

// rotateExplorerToken replaces the token kept in dir by a new one and
// returns it. An engine process serving the explorer keeps the token it
// started with until it restarts.
func rotateExplorerToken(dir string) (string, error) {
	tok, err := ui.NewToken()
	if err != nil {
		return "", err
	}
	if err := writePrivate(dir, explorerTokenFile, []byte(tok+"\n")); err != nil {
		return "", err
	}
	return tok, nil
}

// validToken reports whether tok has the form ui.NewToken makes (64 hex
// digits).
func validToken(tok string) bool {
	if len(tok) != 64 {
		return false
	}
	_, err := hex.DecodeString(tok)
	return err == nil
}

// writeExplorerURL records the URL the explorer serves.
func writeExplorerURL(dir, u string) error {
	return writePrivate(dir, explorerURLFile, []byte(u+"\n"))
}

// readExplorerURL returns the URL the last engine process serving the
// explorer of dir's store recorded (errNoExplorerURL when none did).
func readExplorerURL(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, explorerURLFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", errNoExplorerURL
	}
	if err != nil {
		return "", fmt.Errorf("lossless: explorer: %w", err)
	}
	u := strings.TrimSpace(string(b))
	if u == "" {
		return "", errNoExplorerURL
	}
	return u, nil
}

// explorerListening reports whether something accepts connections at the
// host:port of the explorer URL u.
func explorerListening(u string) bool {
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		return false
	}
	conn, err := net.DialTimeout("tcp", pu.Host, 500*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// explorerListen binds srv to addr; when addr asks for any free port
// (port 0), the port of the URL last recorded in dir is tried first, so the
// URL stays the same across restarts while that port is free.
func explorerListen(srv *ui.Server, addr, dir string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && port == "0" {
		if last, err := readExplorerURL(dir); err == nil {
			if pu, err := url.Parse(last); err == nil && pu.Port() != "" && pu.Port() != "0" {
				if u, err := srv.Listen(net.JoinHostPort(host, pu.Port())); err == nil {
					return u, nil
				}
			}
		}
	}
	return srv.Listen(addr)
}

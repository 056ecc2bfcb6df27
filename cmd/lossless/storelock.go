package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// badgerPIDFile is the file in a Badger store's directory where the process
// that opened it for writing wrote its pid (Badger's pidFileName, "LOCK").
// Badger removes it when it closes the store; one left behind names a
// process that stopped without closing it.
const badgerPIDFile = "LOCK"

// storeLock is what doctor learns of a Badger store's directory lock
// without opening the store: whether a process holds it for writing (an
// engine: `lossless serve` under OpenClaw's gateway, an import, ...) and
// the pid the LOCK file names.
type storeLock struct {
	// Held: a process holds the directory lock for writing now (Badger's
	// exclusive flock on the directory): no other process can open the
	// store, not even read-only.
	Held bool
	// PID is the pid in the LOCK file (0 when there is none or it is not
	// a number); Running tells whether a process with that pid runs.
	PID     int
	Running bool
	// Command is that process's command line when it runs and this system
	// shows it (/proc/PID/cmdline), "" otherwise.
	Command string
}

// readPIDFile reads the pid in dir's LOCK file: 0 and no error when there
// is no such file.
func readPIDFile(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, badgerPIDFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store lock: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("store lock: %s holds %q, not a pid", filepath.Join(dir, badgerPIDFile), bytes.TrimSpace(b))
	}
	return pid, nil
}

// processCommand is the command line of process pid as /proc shows it, ""
// where there is no /proc (the pid is then reported alone).
func processCommand(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return "" // no /proc, or the process is gone: the pid says enough
	}
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

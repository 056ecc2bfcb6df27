//go:build !windows && !plan9 && !js && !wasip1 && !aix

package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// probeStoreLock tells whether a process holds the Badger store in dir for
// writing, as Badger's own lock does: Badger takes an exclusive flock on the
// directory to write (a shared one to read only), and the kernel drops it
// when its process ends, so a held lock always belongs to a running process,
// whatever the LOCK file says. The probe takes a shared lock and releases
// it at once.
func probeStoreLock(dir string) (storeLock, error) {
	var l storeLock
	f, err := os.Open(dir)
	if err != nil {
		return l, fmt.Errorf("store lock: %w", err)
	}
	defer f.Close()
	switch err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); {
	case err == nil:
		if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
			return l, fmt.Errorf("store lock: release %s: %w", dir, err)
		}
	case errors.Is(err, unix.EWOULDBLOCK):
		l.Held = true
	default:
		return l, fmt.Errorf("store lock: %s: %w", dir, err)
	}
	if l.PID, err = readPIDFile(dir); err != nil || l.PID == 0 {
		return l, err
	}
	// Signal 0 checks that the process exists; EPERM: it does, as
	// another user's.
	if err := syscall.Kill(l.PID, 0); err == nil || errors.Is(err, syscall.EPERM) {
		l.Running = true
		l.Command = processCommand(l.PID)
	}
	return l, nil
}

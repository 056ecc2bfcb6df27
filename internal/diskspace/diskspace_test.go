package diskspace

import (
	"errors"
	"strings"
	"testing"
)

func TestGuardCheck(t *testing.T) {
	const reserve = 100 << 20
	for _, c := range []struct {
		name  string
		free  uint64
		err   error
		short bool
	}{
		{"room", reserve, nil, false},
		{"short", reserve - 1, nil, true},
		{"empty", 0, nil, true},
		{"unknown", 0, errors.New("no statfs"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewGuard("/store", reserve, func(dir string) (uint64, error) {
				if dir != "/store" {
					t.Errorf("looked up %q, want /store", dir)
				}
				return c.free, c.err
			})
			err := g.Check()
			var se *ShortError
			if got := errors.As(err, &se); got != c.short {
				t.Fatalf("Check with %d free (err %v): %v, want short %v", c.free, c.err, err, c.short)
			}
			if c.short && (se.Free != c.free || se.Need != reserve || !strings.Contains(err.Error(), "/store has ")) {
				t.Errorf("ShortError %+v: %v", se, err)
			}
		})
	}
}

// TestGuardCaches: the free space is looked up once a second, again after
// Expire.
func TestGuardCaches(t *testing.T) {
	looks, free := 0, uint64(1<<30)
	g := NewGuard("d", 1<<20, func(string) (uint64, error) { looks++; return free, nil })
	for range 3 {
		if err := g.Check(); err != nil {
			t.Fatal(err)
		}
	}
	if looks != 1 {
		t.Fatalf("%d looks for three Checks within a second, want 1", looks)
	}
	free = 0
	if err := g.Check(); err != nil {
		t.Fatalf("Check answered from its last look: %v, want nil", err)
	}
	g.Expire()
	if err := g.Check(); err == nil || looks != 2 {
		t.Fatalf("after Expire: %v after %d looks, want a ShortError after 2", err, looks)
	}
}

func TestNilGuard(t *testing.T) {
	var g *Guard
	g.Expire()
	if err := g.Check(); err != nil {
		t.Fatalf("nil Guard: %v", err)
	}
}

func TestFree(t *testing.T) {
	dir := t.TempDir()
	free, err := Free(dir)
	if err != nil {
		t.Skipf("free space unknown here: %v", err)
	}
	size, err := Size(dir)
	if err != nil {
		t.Fatal(err)
	}
	if size == 0 || free > size {
		t.Errorf("free %d, size %d", free, size)
	}
	if _, err := Free(dir + "/missing"); err == nil {
		t.Error("Free of a missing directory: no error")
	}
}

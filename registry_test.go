package contextengine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

func okFactory(ctx context.Context, opts core.FactoryOptions) (core.Engine, error) {
	return newFake("x"), nil
}

func TestRegisterRefusals(t *testing.T) {
	r := NewRegistry()
	if err := r.Register("taken", okFactory, "alice"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		id      string
		factory core.Factory
		owner   string
		want    error
	}{
		{"empty id", "", okFactory, "alice", ErrEmptyID},
		{"nil factory", "nilf", nil, "alice", ErrNilFactory},
		{"legacy reserved", LegacyID, okFactory, "alice", ErrReservedID},
		{"legacy reserved even for core", LegacyID, okFactory, CoreOwner, ErrReservedID},
		{"other owner", "taken", okFactory, "bob", ErrOwnerConflict},
		{"same owner refreshes", "taken", okFactory, "alice", nil},
		{"new id", "fresh", okFactory, "bob", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Register(tc.id, tc.factory, tc.owner)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Register(%q) = %v, want %v", tc.id, err, tc.want)
			}
		})
	}
	if owner, _ := r.Owner("taken"); owner != "alice" {
		t.Fatalf("owner of taken = %q after refused takeover, want alice", owner)
	}
	if owner, _ := r.Owner(LegacyID); owner != CoreOwner {
		t.Fatalf("legacy owner = %q, want %q", owner, CoreOwner)
	}
	if got, want := r.Engines(), []string{"fresh", LegacyID, "taken"}; !slices.Equal(got, want) {
		t.Fatalf("Engines() = %v, want %v", got, want)
	}
}

func TestSameOwnerRefreshReplacesFactory(t *testing.T) {
	r := NewRegistry()
	mk := func(name string) core.Factory {
		return func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
			f := newFake("e")
			f.name = name
			return f, nil
		}
	}
	if err := r.Register("e", mk("first"), "p"); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("e", mk("second"), "p"); err != nil {
		t.Fatal(err)
	}
	g, err := r.Open(context.Background(), slotConfig("e"))
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Info().Name; got != "second" {
		t.Fatalf("after refresh the engine is %q, want second", got)
	}
}

func TestDefaultRegistryHasLegacy(t *testing.T) {
	if !slices.Contains(Engines(), LegacyID) {
		t.Fatalf("default registry lacks legacy: %v", Engines())
	}
	if err := Register(LegacyID, okFactory, "someone"); !errors.Is(err, ErrReservedID) {
		t.Fatalf("package-level Register(legacy) = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("MustRegister with an empty id did not panic")
		}
	}()
	MustRegister("", okFactory, "x")
}

package contextengine

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// LegacyID is the id of the default engine, reserved for core.
const LegacyID = "legacy"

// CoreOwner is the owner of the legacy registration.
const CoreOwner = "core"

type registration struct {
	factory core.Factory
	owner   string
}

// QuarantineRecord describes one quarantined engine (for health and doctor
// reports).
type QuarantineRecord struct {
	EngineID  string    `json:"engineId"`
	Operation string    `json:"operation"`
	Reason    string    `json:"reason"`
	FailedAt  time.Time `json:"failedAt"`
	Owner     string    `json:"owner"`
}

// Registry holds engine factories by id and the quarantine records of the
// engines that failed. The zero value is not usable; use NewRegistry. A
// Registry is safe for concurrent use.
type Registry struct {
	mu          sync.RWMutex
	entries     map[string]registration
	quarantined map[string]QuarantineRecord
	nq          atomic.Int64 // len(quarantined), read without the lock
	logger      *slog.Logger
}

// NewRegistry returns a registry with legacy registered by core.
func NewRegistry() *Registry {
	r := &Registry{entries: map[string]registration{}, quarantined: map[string]QuarantineRecord{}}
	r.entries[LegacyID] = registration{factory: newLegacyFactory(), owner: CoreOwner}
	return r
}

// SetLogger sets the logger quarantine lines go to (slog.Default when unset).
func (r *Registry) SetLogger(l *slog.Logger) {
	r.mu.Lock()
	r.logger = l
	r.mu.Unlock()
}

func (r *Registry) log() *slog.Logger {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.logger != nil {
		return r.logger
	}
	return slog.Default()
}

// Register adds factory under id for owner. It refuses an empty id
// (ErrEmptyID), a nil factory (ErrNilFactory), "legacy" (ErrReservedID) and
// an id already registered by a different owner (ErrOwnerConflict); the same
// owner may register again to refresh its factory.
func (r *Registry) Register(id string, factory core.Factory, owner string) error {
	switch {
	case id == "":
		return ErrEmptyID
	case factory == nil:
		return fmt.Errorf("%w: %q", ErrNilFactory, id)
	case id == LegacyID:
		return fmt.Errorf("%w: %q", ErrReservedID, id)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.entries[id]; ok && old.owner != owner {
		return fmt.Errorf("%w: %q is owned by %q, not %q", ErrOwnerConflict, id, old.owner, owner)
	}
	r.entries[id] = registration{factory: factory, owner: owner}
	return nil
}

// Engines returns the registered ids, sorted (legacy included).
func (r *Registry) Engines() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := make([]string, 0, len(r.entries))
	for id := range r.entries {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Owner returns the owner of id, if registered.
func (r *Registry) Owner(id string) (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[id]
	return e.owner, ok
}

func (r *Registry) lookup(id string) (registration, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[id]
	return e, ok
}

// Quarantines returns the quarantine records, sorted by engine id.
func (r *Registry) Quarantines() []QuarantineRecord {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]QuarantineRecord, 0, len(r.quarantined))
	for _, q := range r.quarantined {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].EngineID < out[j].EngineID })
	return out
}

// isQuarantined is the fast check used on every guarded call.
func (r *Registry) isQuarantined(id string) bool {
	if r.nq.Load() == 0 {
		return false
	}
	r.mu.RLock()
	_, ok := r.quarantined[id]
	r.mu.RUnlock()
	return ok
}

// Quarantined returns the record of id, if it is quarantined.
func (r *Registry) Quarantined(id string) (QuarantineRecord, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	q, ok := r.quarantined[id]
	return q, ok
}

// quarantine records id's failure once (the first failure wins) and logs one
// line. It reports whether this call quarantined the engine.
func (r *Registry) quarantine(id, owner, op string, reason error) bool {
	r.mu.Lock()
	if _, ok := r.quarantined[id]; ok {
		r.mu.Unlock()
		return false
	}
	rec := QuarantineRecord{EngineID: id, Operation: op, Reason: reason.Error(),
		FailedAt: time.Now().UTC(), Owner: owner}
	r.quarantined[id] = rec
	r.nq.Store(int64(len(r.quarantined)))
	r.mu.Unlock()
	r.log().Warn("contextengine: engine quarantined, falling back to legacy",
		"engine", id, "owner", owner, "operation", op, "reason", rec.Reason)
	return true
}

// ClearQuarantine lifts the quarantine of id (for tests and a host's reload).
func (r *Registry) ClearQuarantine(id string) {
	r.mu.Lock()
	delete(r.quarantined, id)
	r.nq.Store(int64(len(r.quarantined)))
	r.mu.Unlock()
}

var defaultRegistry = NewRegistry()

// Default returns the process-wide registry used by the package-level
// functions.
func Default() *Registry { return defaultRegistry }

// Register adds factory under id for owner in the default registry (see
// Registry.Register for the refusals).
func Register(id string, factory core.Factory, owner string) error {
	return defaultRegistry.Register(id, factory, owner)
}

// MustRegister is Register that panics on refusal, for init functions.
func MustRegister(id string, factory core.Factory, owner string) {
	if err := Register(id, factory, owner); err != nil {
		panic(err)
	}
}

// Engines returns the ids of the default registry, sorted.
func Engines() []string { return defaultRegistry.Engines() }

// Open resolves cfg against the default registry (see Registry.Open).
func Open(ctx context.Context, cfg *Config) (*Guarded, error) {
	return defaultRegistry.Open(ctx, cfg)
}

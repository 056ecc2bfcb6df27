package subagent

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Subagent states (store.Subagent.State).
const (
	// Prepared: prepared, the child has not started; the TTL runs.
	Prepared = "prepared"
	// Active: the child started (assembled or stored a message).
	Active = "active"
	// Ended: the child completed or was released; its history is linked
	// to the parent.
	Ended = "ended"
)

// ID returns the id of the subagent record of the child with session key
// childKey under agent: the first 8 bytes of SHA-256 over agent 0x00
// childKey.
func ID(agent, childKey string) store.SubID {
	h := sha256.Sum256([]byte(agent + "\x00" + childKey))
	var s store.SubID
	copy(s[:], h[:8])
	return s
}

// NewToken returns a fresh preparation token (store.Subagent.Token): a
// rollback removes only the preparation its token names.
func NewToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Get reads sub's record (ok false when absent).
func Get(r store.Reader, sub store.SubID) (store.Subagent, bool, error) {
	rec, err := r.Subagent(sub)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Subagent{}, false, nil
	case errors.Is(err, store.ErrCorrupt):
		return store.Subagent{}, false, fmt.Errorf("lossless: decode record %q: %w", "G", records.FromStore(err))
	case err != nil:
		return store.Subagent{}, false, fmt.Errorf("lossless: read: %w", records.FromStore(err))
	}
	return rec, true, nil
}

// Expired reports whether rec is a preparation past its TTL (at now, Unix
// milliseconds) whose child never started (the child's conversation stored
// no message).
func Expired(r store.Reader, rec store.Subagent, now int64) bool {
	if rec.State != Prepared || rec.ExpiresAt == 0 || now < rec.ExpiresAt {
		return false
	}
	return !ChildStarted(r, rec)
}

// ChildStarted reports whether the child's conversation has messages.
func ChildStarted(r store.Reader, rec store.Subagent) bool {
	for _, c := range ChildConvs(r, rec) {
		if cr, err := r.Conversation(c); err == nil && cr.Messages > 0 {
			return true
		}
	}
	return false
}

// ChildConvs returns the conversations the child's names resolve to: by
// its session key, then by its session id (when it has one).
func ChildConvs(r store.Reader, rec store.Subagent) []store.ConvID {
	var out []store.ConvID
	names := []store.Name{{Agent: rec.Agent, Kind: store.NameSessionKey, Value: rec.ChildSessionKey}}
	if rec.ChildSessionID != "" {
		names = append(names, store.Name{Agent: rec.Agent, Kind: store.NameSessionID, Value: rec.ChildSessionID})
	}
	for _, n := range names {
		if c, err := r.ConvByName(n); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// ForkParent returns the parent conversation of a forked child's
// conversation c (found through its session key or session ids), if any.
func ForkParent(r store.Reader, c store.ConvID) (store.ConvID, bool) {
	cr, err := r.Conversation(c)
	if err != nil {
		return store.ConvID{}, false
	}
	var candidates []store.SubID
	if cr.Key != "" {
		candidates = append(candidates, ID(cr.Agent, cr.Key))
	}
	for _, id := range cr.SessionIDs {
		if s, err := r.SubagentByChild(cr.Agent, id); err == nil {
			candidates = append(candidates, s)
		}
	}
	for _, s := range candidates {
		rec, ok, err := Get(r, s)
		if err != nil || !ok || rec.Mode != core.ContextModeFork {
			continue
		}
		if pc, ok := records.ParseConvID(rec.ParentConv); ok {
			return pc, true
		}
	}
	return store.ConvID{}, false
}

// LinkedChildren returns, in r, the conversations of the ended children
// linked to conversation parent.
func LinkedChildren(r store.Reader, parent store.ConvID) ([]store.ConvID, error) {
	var out []store.ConvID
	var subs []store.SubID
	for l, err := range r.SubagentLinks(parent) {
		if err != nil {
			return out, fmt.Errorf("lossless: read subagent links: %w", err)
		}
		subs = append(subs, l.ID)
	}
	for _, s := range subs {
		rec, ok, err := Get(r, s)
		if err != nil {
			return out, err
		}
		if !ok {
			continue
		}
		if cs := ChildConvs(r, rec); len(cs) > 0 {
			out = append(out, cs[0])
		}
	}
	return out, nil
}

package subagent

import (
	"context"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Lookup is what a session's subagent records say: Found with its record
// Rec under ID, or not found (ID then the id its session key would have).
// Done tells a made look-up from the zero value.
type Lookup struct {
	// Done: the records were read.
	Done bool
	// ID is the record's id.
	ID store.SubID
	// Rec is the record, when Found.
	Rec store.Subagent
	// Found: the session is a prepared, active or ended child.
	Found bool
}

// Refs returns the refs of a session's subagent records, for one batched
// read (store.Reader.Get): by its key, then by its session id as a child's
// alias (the order Found picks in).
func Refs(agent, sessionID, sessionKey string) []store.Ref {
	var refs []store.Ref
	if sessionKey != "" {
		refs = append(refs, store.Ref{Kind: store.RefSubagent, Sub: ID(agent, sessionKey)})
	}
	if sessionID != "" {
		refs = append(refs, store.Ref{Kind: store.RefSubagentByChild, Agent: agent, ID: sessionID})
	}
	return refs
}

// Found picks a session's subagent from what Refs read: the one of its
// key, else the one its session id is the child of.
func Found(agent, sessionKey string, got []store.Got) Lookup {
	l := Lookup{Done: true}
	for i, g := range got {
		if g.Err == nil {
			l.Found, l.Rec = true, g.Subagent
			if i == 0 && sessionKey != "" {
				l.ID = ID(agent, sessionKey)
			} else {
				l.ID = g.Sub
			}
			return l
		}
	}
	if sessionKey != "" {
		l.ID = ID(agent, sessionKey)
	}
	return l
}

// Find reads a session's subagent records in one batched read (Refs, then
// Found). A session without a key or id is no child (Lookup.Done false).
func (l Lifecycle) Find(ctx context.Context, agent, sessionID, sessionKey string) (Lookup, error) {
	refs := Refs(agent, sessionID, sessionKey)
	if len(refs) == 0 {
		return Lookup{}, nil
	}
	var lk Lookup
	err := l.St.View(ctx, func(sr store.Reader) error {
		got, err := sr.Get(refs)
		if err != nil {
			return fmt.Errorf("lossless: read subagent: %w", records.FromStore(err))
		}
		for _, g := range got {
			if g.Err != nil && !errors.Is(g.Err, store.ErrNotFound) {
				return fmt.Errorf("lossless: read subagent: %w", records.FromStore(g.Err))
			}
		}
		lk = Found(agent, sessionKey, got)
		return nil
	})
	return lk, err
}

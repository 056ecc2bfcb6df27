package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

// Resolve returns the conversation of (agent, sessionID, sessionKey),
// creating it when create is set. A conversation is keyed by its
// sessionKey when there is one, else by its first session id; every
// session id seen is mapped to it, so it survives session-id changes.
func Resolve(ctx context.Context, p Port, agent, sessionID, sessionKey string, create bool) (store.ConvID, error) {
	if sessionID == "" {
		return store.ConvID{}, fmt.Errorf("lossless: %w", core.ErrEmptySessionID)
	}
	if err := CheckSession(agent, sessionID, sessionKey); err != nil {
		return store.ConvID{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.ConvID{}, fmt.Errorf("lossless: %w", err)
	}
	sname := "s:" + sessionID
	kname := ""
	if sessionKey != "" {
		kname = "k:" + sessionKey
	}
	cacheKey := agent + "\x00" + sname + "\x00" + kname
	if c, ok := p.Resolved(cacheKey); ok {
		return c, nil
	}
	// On a shared store another process may create the same conversation
	// at once: the agent's names lock makes the look-up and the creation
	// below one step across processes too.
	release, err := p.LockNames(ctx, agent)
	if err != nil {
		return store.ConvID{}, err
	}
	defer release()
	sn := store.Name{Agent: agent, Kind: store.NameSessionID, Value: sessionID}
	kn := store.Name{Agent: agent, Kind: store.NameSessionKey, Value: sessionKey}
	var c store.ConvID
	// addID: sessionID must be added to an existing conversation's
	// record (a new mapping, or one whose record lacks it: a process
	// stopped between the two writes of an older version).
	addID := false
	repointed, stale := false, store.ConvID{}
	err = update(context.WithoutCancel(ctx), p, func(tx store.Tx) error {
		sc, sok, err := ConvByName(tx, sn)
		if err != nil {
			return err
		}
		kc, kok := store.ConvID{}, false
		if kname != "" {
			if kc, kok, err = ConvByName(tx, kn); err != nil {
				return err
			}
		}
		switch {
		case kok:
			c = kc
		case sok:
			c = sc
		case !create:
			return fmt.Errorf("lossless: session %q of agent %q: %w", sessionID, agent, core.ErrUnknownSession)
		default:
			name := sname
			if kname != "" {
				name = kname
			}
			c = p.NewConvID(agent, name)
			now := time.Now().UnixMilli()
			// A new conversation is made in one transaction: its record
			// (with its first session id) and its names. No other writer
			// can know it yet (the agent's names lock is held).
			rec := store.Conversation{Agent: agent, Key: sessionKey, Created: now, Updated: now, NextSeq: 1, NextPos: records.PosStep,
				SessionIDs: []string{sessionID}}
			if err := tx.PutConversation(c, rec); err != nil {
				return fmt.Errorf("lossless: write: %w", err)
			}
			if kname != "" {
				if err := tx.PutName(kn, c); err != nil {
					return fmt.Errorf("lossless: write session map: %w", err)
				}
			}
			if err := tx.PutName(sn, c); err != nil {
				return fmt.Errorf("lossless: write session map: %w", err)
			}
			return nil
		}
		if kname != "" && !kok {
			if err := tx.PutName(kn, c); err != nil {
				return fmt.Errorf("lossless: write session map: %w", err)
			}
		}
		if !sok || sc != c {
			// A session id mapped to another conversation moves to this
			// one: what was resolved to that one through it is forgotten.
			repointed = sok
			stale = sc
			if err := tx.PutName(sn, c); err != nil {
				return fmt.Errorf("lossless: write session map: %w", err)
			}
			addID = true
			return nil
		}
		rec, err := tx.Conversation(c)
		if err != nil {
			return records.FromStore(err)
		}
		addID = !slices.Contains(rec.SessionIDs, sessionID)
		return nil
	})
	if err != nil {
		return store.ConvID{}, err
	}
	if repointed {
		p.ForgetResolved(stale)
	}
	if addID {
		// Under the conversation's lock, so that it does not race with a
		// write of its record; a call whose context ends first leaves it
		// to the next resolution (the check above finds it missing).
		if err := p.AddSessionID(ctx, c, sessionID, sessionKey); err != nil {
			return store.ConvID{}, err
		}
	}
	p.RememberResolved(cacheKey, c) // with c's state, bounded
	return c, nil
}

// update is the store's Update behind the engine's free-space guard: a
// write on a full disk is an ErrDiskFull error.
func update(ctx context.Context, p Port, fn func(store.Tx) error) error {
	if err := p.CheckSpace(); err != nil {
		return err
	}
	return p.Store().Update(ctx, fn)
}

// ConvByName resolves name n (found false when it is not mapped).
func ConvByName(r store.Reader, n store.Name) (store.ConvID, bool, error) {
	c, err := r.ConvByName(n)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.ConvID{}, false, nil
	case errors.Is(err, store.ErrCorrupt):
		return store.ConvID{}, false, fmt.Errorf("%w: session map value: %w", records.ErrBadRecord, err)
	case err != nil:
		return store.ConvID{}, false, fmt.Errorf("lossless: read session map: %w", err)
	}
	return c, true, nil
}

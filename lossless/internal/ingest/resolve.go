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

// Resolving a call's conversation is the engine's door (its resolution
// cache, its names lock, its free-space guard, the session id added under
// the conversation's lock); what it runs in the store is here: CheckResolve
// before anything, ResolveTx in one write transaction, AddSessionID in
// another.

// CheckResolve refuses a call whose session cannot be resolved: an empty
// session id (core.ErrEmptySessionID), names no store keeps (CheckSession),
// a context already done.
func CheckResolve(ctx context.Context, agent, sessionID, sessionKey string) error {
	if sessionID == "" {
		return fmt.Errorf("lossless: %w", core.ErrEmptySessionID)
	}
	if err := CheckSession(agent, sessionID, sessionKey); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lossless: %w", err)
	}
	return nil
}

// CacheKey is the key under which the engine caches the resolution of
// (agent, sessionID, sessionKey).
func CacheKey(agent, sessionID, sessionKey string) string {
	kname := ""
	if sessionKey != "" {
		kname = "k:" + sessionKey
	}
	return agent + "\x00" + "s:" + sessionID + "\x00" + kname
}

// Resolution is what ResolveTx found or made.
type Resolution struct {
	// Conv is the conversation of the session.
	Conv store.ConvID
	// AddID: the session id must be added to Conv's record (AddSessionID):
	// a new mapping, or one whose record lacks it (a process stopped
	// between the two writes of an older version).
	AddID bool
	// Repointed: the session id was mapped to conversation Stale and now
	// maps to Conv; what was resolved to Stale through it is to be
	// forgotten.
	Repointed bool
	Stale     store.ConvID
}

// ResolveTx resolves, in tx, the conversation of (agent, sessionID,
// sessionKey), creating it when create is set (else an error wrapping
// core.ErrUnknownSession). A conversation is keyed by its sessionKey when
// there is one, else by its first session id; every session id seen is
// mapped to it, so it survives session-id changes. The caller holds the
// agent's names lock: on a shared store another process may create the
// same conversation at once, and the lock makes the look-up and the
// creation one step across processes too.
func ResolveTx(tx store.Tx, agent, sessionID, sessionKey string, create bool) (Resolution, error) {
	sname := "s:" + sessionID
	kname := ""
	if sessionKey != "" {
		kname = "k:" + sessionKey
	}
	sn := store.Name{Agent: agent, Kind: store.NameSessionID, Value: sessionID}
	kn := store.Name{Agent: agent, Kind: store.NameSessionKey, Value: sessionKey}
	var res Resolution
	sc, sok, err := ConvByName(tx, sn)
	if err != nil {
		return res, err
	}
	kc, kok := store.ConvID{}, false
	if kname != "" {
		if kc, kok, err = ConvByName(tx, kn); err != nil {
			return res, err
		}
	}
	switch {
	case kok:
		res.Conv = kc
	case sok:
		res.Conv = sc
	case !create:
		return res, fmt.Errorf("lossless: session %q of agent %q: %w", sessionID, agent, core.ErrUnknownSession)
	default:
		name := sname
		if kname != "" {
			name = kname
		}
		c := records.NewConvID(agent, name)
		now := time.Now().UnixMilli()
		// A new conversation is made in one transaction: its record
		// (with its first session id) and its names. No other writer
		// can know it yet (the agent's names lock is held).
		rec := store.Conversation{Agent: agent, Key: sessionKey, Created: now, Updated: now, NextSeq: 1, NextPos: records.PosStep,
			SessionIDs: []string{sessionID}}
		if err := tx.PutConversation(c, rec); err != nil {
			return res, fmt.Errorf("lossless: write: %w", err)
		}
		if kname != "" {
			if err := tx.PutName(kn, c); err != nil {
				return res, fmt.Errorf("lossless: write session map: %w", err)
			}
		}
		if err := tx.PutName(sn, c); err != nil {
			return res, fmt.Errorf("lossless: write session map: %w", err)
		}
		return Resolution{Conv: c}, nil
	}
	c := res.Conv
	if kname != "" && !kok {
		if err := tx.PutName(kn, c); err != nil {
			return res, fmt.Errorf("lossless: write session map: %w", err)
		}
	}
	if !sok || sc != c {
		// A session id mapped to another conversation moves to this
		// one: what was resolved to that one through it is forgotten.
		res.Repointed, res.Stale = sok, sc
		if err := tx.PutName(sn, c); err != nil {
			return res, fmt.Errorf("lossless: write session map: %w", err)
		}
		res.AddID = true
		return res, nil
	}
	rec, err := tx.Conversation(c)
	if err != nil {
		return res, records.FromStore(err)
	}
	res.AddID = !slices.Contains(rec.SessionIDs, sessionID)
	return res, nil
}

// AddSessionID records sessionID (and sessionKey, when the record has
// none) on conversation c's record in tx, and returns the record and
// whether it changed. The caller holds c's lock, so that it does not race
// with a write of the record.
func AddSessionID(tx store.Tx, c store.ConvID, sessionID, sessionKey string) (store.Conversation, bool, error) {
	rec, err := tx.Conversation(c)
	if err != nil {
		return rec, false, records.FromStore(err)
	}
	if err := records.CheckNext(tx, c, rec); err != nil {
		return rec, false, err
	}
	if slices.Contains(rec.SessionIDs, sessionID) {
		return rec, false, nil
	}
	rec.SessionIDs = append(rec.SessionIDs, sessionID)
	if rec.Key == "" {
		rec.Key = sessionKey
	}
	if err := tx.PutConversation(c, rec); err != nil {
		return rec, false, fmt.Errorf("lossless: write: %w", err)
	}
	return rec, true, nil
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

package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store"
)

// Durable turn commits (CommitTurn) and the lifecycle declarations of Info
// (transcriptSemantics, hostRequirements).
//
// A turn commit writes the turn's messages that are not stored yet and the
// turn's advancement key in ONE store transaction (Update; the key maps to
// a store.Turn: badgerstore keeps it as 'T' conv(8) advancementKey -> JSON),
// so after a crash either the whole turn and its key are stored or
// neither is; a retry with the same key finds the key and answers
// "duplicate" without writing anything, across restarts.

// UnsupportedAgentRunMessage is the engine's hostRequirements
// unsupportedMessage for "agent-run": what a host that cannot call assemble
// before the prompt tells its user after the contract's fail-closed error.
const UnsupportedAgentRunMessage = "The lossless context engine builds the model's context from its store in assemble before every prompt; this host cannot call assemble before the prompt. Run the agent on a host that can (the embedded runtime), or select the legacy engine."

// DeclareLifecycle adds to info what the engine's lifecycle hooks need the
// host to know: the transcript semantics of CommitTurn and the
// capabilities an agent run requires. The engine's Info calls it.
func DeclareLifecycle(info *core.Info) {
	info.TranscriptSemantics = &core.TranscriptSemantics{
		CurrentTurnFence:           core.FenceBeforeCurrentTurnEntryV1,
		TurnAdvancementIdempotency: core.AdvancementAtomicIdempotentV1,
	}
	info.HostRequirements = map[string]core.HostRequirement{
		core.OpAgentRun: {
			RequiredCapabilities: []string{core.CapAssembleBeforePrompt},
			UnsupportedMessage:   UnsupportedAgentRunMessage,
		},
	}
}

// CommitLocked is one attempt of the commit of turn p to conversation c
// (CommitTurn's door resolves c, prepares the messages ps, checks the
// free space, takes c's lock and runs it again on a conflict: Retry): the
// messages of ps not already stored and the advancement key are written
// in one store transaction, based on c's record *recp (advanced when the
// commit writes; shared as for CheckBase). A key already recorded stores
// nothing and returns status "duplicate". It returns the messages it
// stored, for the recall index.
func CommitLocked(ctx context.Context, st store.Store, c store.ConvID, recp *store.Conversation, shared bool, p core.CommitTurnParams, ps []Pending) (core.CommitTurnResult, []*Pending, error) {
	rec := *recp
	var fresh []*Pending
	dup := false
	// fnErr is the error fn returned (already explained); any other
	// error of the Update is its own (the commit, the context, a full
	// disk).
	var fnErr error
	err := st.Update(ctx, func(tx store.Tx) error {
		rec, fresh, dup = *recp, fresh[:0], false
		if fnErr = CheckBase(tx, c, rec, shared); fnErr != nil {
			return fnErr
		}
		fnErr = commitTurnTx(tx, c, &rec, p, ps, &fresh, &dup)
		return fnErr
	})
	switch {
	case err != nil && err == fnErr:
		return core.CommitTurnResult{}, nil, err
	case err != nil:
		return core.CommitTurnResult{}, nil, commitErr(err)
	case dup:
		return core.CommitTurnResult{Status: core.CommitDuplicate}, nil, nil
	}
	*recp = rec
	return core.CommitTurnResult{Status: core.CommitCommitted}, fresh, nil
}

// commitTurnTx writes, in tx, the turn's messages not stored yet (into
// rec, appending them to fresh) and its advancement key; dup is set, and
// nothing written, when the key is already recorded.
func commitTurnTx(tx store.Tx, c store.ConvID, rec *store.Conversation, p core.CommitTurnParams, ps []Pending, fresh *[]*Pending, dup *bool) error {
	// A turn record that is there but does not decode still records the
	// key (the key's presence is what counts).
	if prev, err := tx.Turn(c, p.AdvancementKey); err == nil || errors.Is(err, store.ErrCorrupt) {
		// A duplicate only when it brings no message the recorded turn
		// lacks (one whose record does not decode: no message that is not
		// stored); otherwise answering "duplicate" would drop them.
		if err := sameTurn(tx, c, p.AdvancementKey, prev, err == nil, ps); err != nil {
			return err
		}
		*dup = true
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("lossless: commit turn: read key: %w", err)
	}
	tr := store.Turn{LogicalTurnID: p.Admission.LogicalTurnID, AdmissionEntryID: p.Admission.EntryID,
		TerminalEntryID: p.Terminal.EntryID, Seqs: make([]uint64, 0, len(ps)), CommittedAt: time.Now().UnixMilli()}
	// The turn's keys are resolved before its writes (which only add keys
	// of the turn itself, found in inTurn).
	hs := make([]store.Hash, len(ps))
	for i := range ps {
		hs[i] = ps[i].Hash
	}
	seqs, found, err := SeqsByHash(tx, c, hs)
	if err != nil {
		return err
	}
	inTurn := make(map[store.Hash]uint64, len(ps))
	for i := range ps {
		pp := &ps[i]
		if seq, ok := inTurn[pp.Hash]; ok {
			tr.Seqs = append(tr.Seqs, seq)
			continue
		}
		if found[i] {
			pp.Seq = seqs[i]
		} else {
			if err := WriteMessage(tx, c, rec, pp); err != nil {
				return commitErr(err)
			}
			*fresh = append(*fresh, pp)
		}
		inTurn[pp.Hash] = pp.Seq
		tr.Seqs = append(tr.Seqs, pp.Seq)
	}
	tr.Stored = len(*fresh)
	if err := tx.PutTurn(c, p.AdvancementKey, tr); err != nil {
		return commitErr(err)
	}
	if len(*fresh) > 0 {
		rec.Updated = time.Now().UnixMilli()
		if err := tx.PutConversation(c, *rec); err != nil {
			return commitErr(err)
		}
	}
	return nil
}

// sameTurn checks that the messages ps of a commit under key, already
// recorded for turn prev (whose Seqs are known when decoded), are all
// stored, and, when known, among prev's: an error wrapping ErrKeyReused
// names the first that is not.
func sameTurn(tx store.Tx, c store.ConvID, key string, prev store.Turn, decoded bool, ps []Pending) error {
	if len(ps) == 0 {
		return nil
	}
	hs := make([]store.Hash, len(ps))
	for i := range ps {
		hs[i] = ps[i].Hash
	}
	seqs, found, err := SeqsByHash(tx, c, hs)
	if err != nil {
		return fmt.Errorf("lossless: commit turn: read keys: %w", err)
	}
	inPrev := make(map[uint64]bool, len(prev.Seqs))
	for _, s := range prev.Seqs {
		inPrev[s] = true
	}
	differ, first := 0, -1
	for i := range ps {
		if !found[i] || (decoded && !inPrev[seqs[i]]) {
			if differ++; first < 0 {
				first = i
			}
		}
	}
	if differ == 0 {
		return nil
	}
	return fmt.Errorf("lossless: commit turn: advancement key %q was committed with other messages: %d of this commit's %d messages are not in that turn (the first: message %d); nothing stored (a retry sends the same turn, a new turn takes a new key): %w",
		key, differ, len(ps), first, ErrKeyReused)
}

// commitErr explains a turn too large for one transaction.
func commitErr(err error) error {
	if errors.Is(err, store.ErrTooBig) {
		return fmt.Errorf("lossless: commit turn: the turn is too large for one atomic write (raise badger.memTableSize): %w", core.ErrTooLarge)
	}
	return fmt.Errorf("lossless: commit turn: %w", err)
}

// TurnCommitted reports whether advancementKey is recorded as committed in
// conversation c, and the sequence numbers of the turn's messages.
func TurnCommitted(ctx context.Context, st store.Store, c store.ConvID, advancementKey string) (bool, []uint64, error) {
	var tr store.Turn
	err := st.View(ctx, func(r store.Reader) error {
		var err error
		tr, err = r.Turn(c, advancementKey)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	return true, tr.Seqs, nil
}

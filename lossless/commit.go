package lossless

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// declareLifecycle adds to info what the engine's lifecycle hooks need the
// host to know: the transcript semantics of CommitTurn and the
// capabilities an agent run requires. Engine.Info calls it.
func declareLifecycle(info *core.Info) {
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

// turnRecord is what the store keeps of a committed turn.
type turnRecord = store.Turn

var _ core.TurnCommitter = (*Engine)(nil)

// CommitTurn commits a turn durably: the messages of p (from the admitted
// user entry through the terminal entry) not already stored and the
// advancement key are written in one store transaction, so a crash leaves
// either the whole turn with its key or nothing. A commit whose
// advancement key is already recorded for the conversation stores nothing
// and returns status "duplicate" — also after a restart. Messages already
// stored by ingest are not stored twice (they are identified by their
// bytes, as everywhere in the engine).
//
// The session is p.SessionID (else the admission anchor's), keyed by
// p.SessionKey as for Ingest. An empty advancement key is refused
// (ErrBadParams), invalid messages as for IngestBatch; a turn too large for
// one transaction is refused and stores nothing.
func (e *Engine) CommitTurn(ctx context.Context, p core.CommitTurnParams) (core.CommitTurnResult, error) {
	done, err := e.enter()
	if err != nil {
		return core.CommitTurnResult{}, err
	}
	defer done()
	if strings.TrimSpace(p.AdvancementKey) == "" {
		return core.CommitTurnResult{}, fmt.Errorf("lossless: commit turn: empty advancementKey: %w", ErrBadParams)
	}
	explicit, sessionID, sessionKey := p.Admission.AgentID, p.SessionID, p.SessionKey
	if sessionID == "" {
		sessionID = p.Admission.SessionID
	}
	if sessionKey == "" {
		sessionKey = p.Admission.SessionKey
	}
	agent, sessionID, sessionKey := e.sessionIdentity(explicit, sessionID, sessionKey, p.SessionTarget)
	if err := validateMessages(p.Messages, e.cfg.MaxMessageBytes); err != nil {
		return core.CommitTurnResult{}, err
	}
	// A turn without messages makes no conversation (a run that never
	// receives a message leaves no record); for a stored one its key is
	// recorded as for any turn.
	c, err := e.resolve(ctx, agent, sessionID, sessionKey, len(p.Messages) > 0)
	if len(p.Messages) == 0 && errors.Is(err, core.ErrUnknownSession) {
		return core.CommitTurnResult{Status: core.CommitCommitted}, nil
	}
	if err != nil {
		return core.CommitTurnResult{}, err
	}
	ps, err := e.prepare(ctx, p.Messages, p.IsHeartbeat)
	if err != nil {
		return core.CommitTurnResult{}, err
	}
	if err := e.checkSpace(); err != nil {
		return core.CommitTurnResult{}, fmt.Errorf("lossless: commit turn: %w", err)
	}
	// Another process's write to the conversation between this one's read
	// and its commit is retried (nothing of the attempt was written).
	var fresh []*pending
	var rec convRecord
	res, err := retryConflicts(ctx, func() (core.CommitTurnResult, error) {
		s, err := e.lockConv(ctx, c)
		if err != nil {
			return core.CommitTurnResult{}, err
		}
		defer s.unlock()
		rec = s.rec
		fresh = fresh[:0]
		dup := false
		// fnErr is the error fn returned (already explained); any other
		// error of the Update is its own (the commit, the context, a full
		// disk).
		var fnErr error
		err = e.st.Update(ctx, func(tx store.Tx) error {
			if fnErr = e.checkBase(tx, c, rec); fnErr != nil {
				return fnErr
			}
			fnErr = commitTurnTx(tx, c, &rec, p, ps, &fresh, &dup)
			return fnErr
		})
		switch {
		case err != nil && err == fnErr:
			return core.CommitTurnResult{}, err
		case err != nil:
			return core.CommitTurnResult{}, commitErr(err)
		case dup:
			return core.CommitTurnResult{Status: core.CommitDuplicate}, nil
		}
		s.rec = rec
		return core.CommitTurnResult{Status: core.CommitCommitted}, nil
	})
	if err != nil || res.Status == core.CommitDuplicate {
		return res, err
	}
	if len(fresh) > 0 {
		e.indexMessages(c, rec.Agent, fresh) // recall index (recall.go)
		// The compaction decision, off the request path: OpenClaw's turns
		// arrive here (it never calls afterTurn on its durable path).
		e.startCompaction(&Conversation{e: e, id: c, Agent: rec.Agent}, e.turnBudget(agent, sessionID, sessionKey, p.RuntimeContext))
	}
	return core.CommitTurnResult{Status: core.CommitCommitted}, nil
}

// commitTurnTx writes, in tx, the turn's messages not stored yet (into
// rec, appending them to fresh) and its advancement key; dup is set, and
// nothing written, when the key is already recorded.
func commitTurnTx(tx store.Tx, c convID, rec *convRecord, p core.CommitTurnParams, ps []pending, fresh *[]*pending, dup *bool) error {
	// A turn record that is there but does not decode still records the
	// key (the key's presence is what counts).
	if _, err := tx.Turn(c, p.AdvancementKey); err == nil || errors.Is(err, store.ErrCorrupt) {
		*dup = true
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("lossless: commit turn: read key: %w", err)
	}
	tr := turnRecord{LogicalTurnID: p.Admission.LogicalTurnID, AdmissionEntryID: p.Admission.EntryID,
		TerminalEntryID: p.Terminal.EntryID, Seqs: make([]uint64, 0, len(ps)), CommittedAt: time.Now().UnixMilli()}
	// The turn's keys are resolved before its writes (which only add keys
	// of the turn itself, found in inTurn).
	hs := make([]msgHash, len(ps))
	for i := range ps {
		hs[i] = ps[i].hash
	}
	seqs, found, err := seqsByHash(tx, c, hs)
	if err != nil {
		return err
	}
	inTurn := make(map[msgHash]uint64, len(ps))
	for i := range ps {
		pp := &ps[i]
		if seq, ok := inTurn[pp.hash]; ok {
			tr.Seqs = append(tr.Seqs, seq)
			continue
		}
		if found[i] {
			pp.seq = seqs[i]
		} else {
			if err := writeMessage(tx, c, rec, pp); err != nil {
				return commitErr(err)
			}
			*fresh = append(*fresh, pp)
		}
		inTurn[pp.hash] = pp.seq
		tr.Seqs = append(tr.Seqs, pp.seq)
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

// commitErr explains a turn too large for one transaction.
func commitErr(err error) error {
	if errors.Is(err, store.ErrTooBig) {
		return fmt.Errorf("lossless: commit turn: the turn is too large for one atomic write (raise badger.memTableSize): %w", core.ErrTooLarge)
	}
	return fmt.Errorf("lossless: commit turn: %w", err)
}

// TurnCommitted reports whether advancementKey is recorded as committed in
// the conversation of sessionID/sessionKey (agent as for every call), and
// the sequence numbers of the turn's messages.
func (e *Engine) TurnCommitted(ctx context.Context, sessionID, sessionKey, advancementKey string) (bool, []uint64, error) {
	done, err := e.enter()
	if err != nil {
		return false, nil, err
	}
	defer done()
	c, err := e.lookup(ctx, e.agentFor("", sessionKey), sessionID, sessionKey)
	if errors.Is(err, core.ErrUnknownSession) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	var tr turnRecord
	err = e.st.View(ctx, func(r store.Reader) error {
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

package lossless

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/core"
)

// Durable turn commits (CommitTurn) and the lifecycle declarations of Info
// (transcriptSemantics, hostRequirements).
//
// A turn commit writes the turn's messages that are not stored yet and the
// turn's advancement key in ONE Badger transaction:
//
//	'T' conv(8) advancementKey -> turnRecord (JSON)
//
// so after a crash either the whole turn and its key are stored or
// neither is; a retry with the same key finds the key and answers
// "duplicate" without writing anything, across restarts.

// pTurn prefixes turn-commit records: 'T' conv(8) advancementKey.
const pTurn = 'T'

// ErrBadParams is wrapped by the errors of lifecycle calls whose parameters
// cannot be used (an empty advancement key, an unknown context mode or end
// reason, ...).
var ErrBadParams = errors.New("lossless: bad parameters")

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
type turnRecord struct {
	LogicalTurnID    string `json:"logicalTurnId,omitempty"`
	AdmissionEntryID string `json:"admissionEntryId,omitempty"`
	TerminalEntryID  string `json:"terminalEntryId,omitempty"`
	// Seqs are the sequence numbers of the turn's messages, in order (a
	// message already stored before the commit keeps its sequence).
	Seqs        []uint64 `json:"seqs"`
	Stored      int      `json:"stored"`
	CommittedAt int64    `json:"committedAt"`
}

func turnKey(c convID, key string) []byte {
	return append(convPrefix(pTurn, c), key...)
}

var _ core.TurnCommitter = (*Engine)(nil)

// CommitTurn commits a turn durably: the messages of p (from the admitted
// user entry through the terminal entry) not already stored and the
// advancement key are written in one Badger transaction, so a crash leaves
// either the whole turn with its key or nothing. A commit whose
// advancement key is already recorded for the conversation stores nothing
// and returns status "duplicate" — also after a restart. Messages already
// stored by ingest are not stored twice (they are identified by their
// bytes, as everywhere in the engine).
//
// The session is p.SessionID (else the admission anchor's), keyed by
// p.SessionKey as for Ingest. An empty advancement key is refused
// (ErrBadParams), invalid messages as for IngestBatch; a turn too large for
// one Badger transaction is refused and stores nothing.
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
	c, err := e.resolve(ctx, agent, sessionID, sessionKey, true)
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
	s, err := e.lockConv(ctx, c)
	if err != nil {
		return core.CommitTurnResult{}, err
	}
	defer s.mu.Unlock()
	rec := s.rec
	var fresh []*pending
	dup := false
	txn := e.db.NewTransaction(true)
	defer txn.Discard()
	tk := turnKey(c, p.AdvancementKey)
	if _, err := txn.Get(tk); err == nil {
		dup = true
	} else if !errors.Is(err, badger.ErrKeyNotFound) {
		return core.CommitTurnResult{}, fmt.Errorf("lossless: commit turn: read key: %w", err)
	}
	if dup {
		return core.CommitTurnResult{Status: core.CommitDuplicate}, nil
	}
	tr := turnRecord{LogicalTurnID: p.Admission.LogicalTurnID, AdmissionEntryID: p.Admission.EntryID,
		TerminalEntryID: p.Terminal.EntryID, Seqs: make([]uint64, 0, len(ps)), CommittedAt: time.Now().UnixMilli()}
	inTurn := make(map[msgHash]uint64, len(ps))
	for i := range ps {
		pp := &ps[i]
		if seq, ok := inTurn[pp.hash]; ok {
			tr.Seqs = append(tr.Seqs, seq)
			continue
		}
		v, err := getValue(txn, hashKey(c, pp.hash))
		switch {
		case err == nil:
			seq, ok := getU64(v)
			if !ok {
				return core.CommitTurnResult{}, fmt.Errorf("%w: hash index", errBadRecord)
			}
			pp.seq = seq
		case errors.Is(err, core.ErrNotFound):
			if err := e.writeMessage(txn, c, &rec, pp); err != nil {
				return core.CommitTurnResult{}, commitErr(err)
			}
			fresh = append(fresh, pp)
		default:
			return core.CommitTurnResult{}, err
		}
		inTurn[pp.hash] = pp.seq
		tr.Seqs = append(tr.Seqs, pp.seq)
	}
	tr.Stored = len(fresh)
	if err := setJSON(txn, tk, tr); err != nil {
		return core.CommitTurnResult{}, commitErr(err)
	}
	if len(fresh) > 0 {
		rec.Updated = time.Now().UnixMilli()
		if err := setJSON(txn, convKey(c), rec); err != nil {
			return core.CommitTurnResult{}, commitErr(err)
		}
	}
	if err := ctx.Err(); err != nil {
		return core.CommitTurnResult{}, fmt.Errorf("lossless: commit turn: %w", err)
	}
	if err := txn.Commit(); err != nil {
		return core.CommitTurnResult{}, fmt.Errorf("lossless: commit turn: %w", err)
	}
	s.rec = rec
	if len(fresh) > 0 {
		e.indexMessages(c, rec.Agent, fresh) // recall index (recall.go)
		// The compaction decision, off the request path: OpenClaw's turns
		// arrive here (it never calls afterTurn on its durable path).
		e.startCompaction(&Conversation{e: e, id: c, Agent: rec.Agent}, e.turnBudget(c, p.RuntimeContext))
	}
	return core.CommitTurnResult{Status: core.CommitCommitted}, nil
}

// commitErr explains a turn too large for one transaction.
func commitErr(err error) error {
	if errors.Is(err, badger.ErrTxnTooBig) {
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
	err = e.db.View(func(txn *badger.Txn) error { return getJSON(txn, turnKey(c, advancementKey), &tr) })
	if errors.Is(err, core.ErrNotFound) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	return true, tr.Seqs, nil
}

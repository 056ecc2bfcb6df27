package lossless

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// Ingest stores one message (idempotent: a message already stored in the
// conversation, byte for byte, is not stored again and Ingested is false).
// A message of a role outside the contract is accepted and stored verbatim
// like any other (a lossless engine keeps what it is given; refusing would
// make a guarded host quarantine the engine and lose the turn). Messages over
// Config.MaxMessageBytes are refused (core.ErrTooLarge), an empty session id
// with core.ErrEmptySessionID.
func (e *Engine) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	n, err := e.ingestCall(ctx, p.SessionID, p.SessionKey, []core.Message{p.Message}, p.IsHeartbeat)
	return core.IngestResult{Ingested: n > 0}, err
}

// IngestBatch stores a turn; IngestedCount counts the messages not already
// stored. The batch is validated as a whole first: one invalid message
// refuses the batch and nothing of it is stored.
func (e *Engine) IngestBatch(ctx context.Context, p core.IngestBatchParams) (core.IngestBatchResult, error) {
	n, err := e.ingestCall(ctx, p.SessionID, p.SessionKey, p.Messages, p.IsHeartbeat)
	return core.IngestBatchResult{IngestedCount: n}, err
}

// AfterTurn stores the messages the turn added (p.NewMessages()); messages
// already stored are skipped, so replaying a turn, or passing the whole
// session with prePromptMessageCount 0, stores nothing twice.
func (e *Engine) AfterTurn(ctx context.Context, p core.AfterTurnParams) error {
	_, err := e.ingestCall(ctx, p.SessionID, p.SessionKey, p.NewMessages(), p.IsHeartbeat)
	if err == nil {
		e.afterTurnCompact(p) // proactive compaction in the background (compact.go)
	}
	return err
}

func (e *Engine) ingestCall(ctx context.Context, sessionID, sessionKey string, msgs []core.Message, heartbeat bool) (int, error) {
	done, err := e.enter()
	if err != nil {
		return 0, err
	}
	defer done()
	if err := validateMessages(msgs, e.cfg.MaxMessageBytes); err != nil {
		return 0, err
	}
	c, err := e.resolve(ctx, e.agentFor("", sessionKey), sessionID, sessionKey, true)
	if err != nil {
		return 0, err
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	ps, err := e.prepare(ctx, msgs, heartbeat)
	if err != nil {
		return 0, err
	}
	// A write another process's write made fail is run again (retry.go).
	return retryConflicts(ctx, func() (int, error) { return e.ingestInto(ctx, c, ps) })
}

func validateMessages(msgs []core.Message, max int) error {
	for i, m := range msgs {
		if err := validateMessage(m, max); err != nil {
			return fmt.Errorf("lossless: message %d: %w", i, err)
		}
	}
	return nil
}

func validateMessage(m core.Message, max int) error {
	switch {
	case m.IsZero():
		return fmt.Errorf("empty message: %w", core.ErrInvalidMessage)
	case len(m.Raw()) > max:
		return fmt.Errorf("%d bytes over the %d-byte limit: %w", len(m.Raw()), max, core.ErrTooLarge)
	}
	return nil
}

// pending is a message ready to store: hashed and counted.
type pending struct {
	msg    core.Message
	hash   msgHash
	tokens int
	flags  byte
	// rec is the encoded message record (the store's MessageEncoder), made
	// by ingestInto for the messages it stores, outside the transaction;
	// nil: the store encodes it in PutMessage (commitTurn's path).
	rec []byte
	// ref is the reference message representing large content (flagLarge).
	ref       []byte
	refTokens int
	// seq is set by ingestInto: the message's sequence number (new or
	// already stored).
	seq uint64
}

// prepare hashes and counts msgs in parallel across cores (token counting is
// the costly part of ingest), using the count cache for repeats.
func (e *Engine) prepare(ctx context.Context, msgs []core.Message, heartbeat bool) ([]pending, error) {
	out := make([]pending, len(msgs))
	var flags byte
	if heartbeat {
		flags |= flagHeartbeat
	}
	parallelFor(len(msgs), func(i int) {
		out[i].flags = flags
		e.preparePending(ctx, &out[i], msgs[i])
	})
	// Counting stops when ctx is done (a cancelled request is not held by
	// a huge message); what it left is not used.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lossless: count tokens: %w", err)
	}
	return out, nil
}

// preparePending hashes and counts one message (the per-message work of
// prepare and of the import pipeline's workers), with a cheaper hash of
// JSON that is already compact; flags already set on p are kept.
func (e *Engine) preparePending(ctx context.Context, p *pending, m core.Message) {
	p.msg = m
	p.hash = hashMessageRaw(m.Raw())
	if n, ok := e.counts.get(p.hash); ok {
		p.tokens = n
	} else {
		n, err := core.CountMessageContext(ctx, e.tc, m)
		if err != nil {
			return // ctx is done: the caller sees it and drops p
		}
		p.tokens = n
		e.counts.put(p.hash, p.tokens)
	}
	if (m.Role() == core.RoleAssistant && !m.HasVisibleContent()) ||
		(m.Role() == core.RoleBashExecution && m.ExcludeFromContext()) {
		p.flags |= flagHidden
	}
	if p.tokens > e.cfg.LargeContentTokens {
		p.flags |= flagLarge
		p.ref = largeReference(m, p.tokens)
		if rm, err := core.ParseMessage(p.ref); err == nil {
			p.refTokens = core.CountMessage(e.tc, rm)
		}
	}
}

// parallelFor runs fn(0..n-1) across the cores (in line when n < 4).
func parallelFor(n int, fn func(i int)) {
	workers := runtime.GOMAXPROCS(0)
	if n < 4 || workers == 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// Limits of one write transaction: at most txnMaxMessages messages and
// about the store's MaxTxnBytes (whole keys and values).
const (
	txnMaxMessages = 1024
	// txnRecordBytes is what a message costs besides its record and its
	// large reference: its keys, key index, context item and their share
	// of the conversation record (an over-estimate).
	txnRecordBytes = 200
	// preEncodeMin is the size from which a message's record is encoded
	// ahead (store.MessageEncoder): badgerstore compresses bodies from 256
	// bytes.
	preEncodeMin = 256
)

// ingestInto stores the prepared messages not already in conversation c and
// returns how many it stored. Each transaction (one store Update) holds
// whole messages (message, key index, context item, optional large
// reference) and the conversation record, so a crash leaves the store
// consistent: a message is either fully stored or absent. A batch larger
// than one transaction is split into several, each of whole messages.
func (e *Engine) ingestInto(ctx context.Context, c convID, ps []pending) (int, error) {
	if err := e.checkSpace(); err != nil {
		return 0, err
	}
	s, err := e.lockConv(ctx, c)
	if err != nil {
		return 0, err
	}
	defer s.unlock()
	// Drop duplicates: within the batch and against the store.
	fresh := make([]*pending, 0, len(ps))
	seen := make(map[msgHash]*pending, len(ps))
	var dups []*pending
	uniq := make([]*pending, 0, len(ps))
	hs := make([]msgHash, 0, len(ps))
	for i := range ps {
		p := &ps[i]
		if _, dup := seen[p.hash]; dup {
			dups = append(dups, p)
			continue
		}
		seen[p.hash] = p
		uniq = append(uniq, p)
		hs = append(hs, p.hash)
	}
	err = e.st.View(ctx, func(r store.Reader) error {
		seqs, found, err := seqsByHash(r, c, hs)
		if err != nil {
			return err
		}
		for i, p := range uniq {
			if found[i] {
				p.seq = seqs[i]
			} else {
				fresh = append(fresh, p)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	defer func() {
		for _, d := range dups {
			d.seq = seen[d.hash].seq
		}
	}()
	// The records of the new messages (bodies compressed), across the
	// cores, before the transactions; duplicates cost none, nor do small
	// messages (nothing to compress: PutMessage encodes them for less than
	// handing a record over costs).
	if enc, ok := e.st.(store.MessageEncoder); ok {
		parallelFor(len(fresh), func(i int) {
			if p := fresh[i]; len(p.msg.Raw()) >= preEncodeMin {
				p.rec = enc.EncodeMessage(p.message())
			}
		})
	}
	maxBytes := e.st.MaxTxnBytes()
	stored := 0
	for len(fresh) > 0 {
		if err := ctx.Err(); err != nil {
			return stored, fmt.Errorf("lossless: ingest: %w", err)
		}
		// The transaction's messages: whole ones, at least one.
		var size int64
		n := 0
		for n < len(fresh) && n < txnMaxMessages {
			est := fresh[n].storedBytes()
			if n > 0 && size+est > maxBytes {
				break
			}
			size += est
			n++
		}
		rec := s.rec
		err := e.st.Update(ctx, func(tx store.Tx) error {
			if err := e.checkBase(tx, c, rec); err != nil {
				return err
			}
			for _, p := range fresh[:n] {
				if err := writeMessage(tx, c, &rec, p); err != nil {
					return err
				}
			}
			rec.Updated = time.Now().UnixMilli()
			if err := tx.PutConversation(c, rec); err != nil {
				return fmt.Errorf("lossless: write conversation: %w", err)
			}
			return nil
		})
		if err != nil {
			if n == 1 && errors.Is(err, store.ErrTooBig) {
				// One message whose record alone is over what the store
				// writes at once (its limit counts whole values).
				return stored, fmt.Errorf("lossless: commit: a message of %d bytes is too large for one store transaction (raise badger.memTableSize): %w (%w)",
					len(fresh[0].msg.Raw()), core.ErrTooLarge, err)
			}
			return stored, fmt.Errorf("lossless: commit: %w", err)
		}
		s.rec = rec
		e.indexMessages(c, rec.Agent, fresh[:n]) // recall index (recall.go)
		stored += n
		fresh = fresh[n:]
	}
	return stored, nil
}

// seqsByHash resolves the message keys hs of c: in one read when r is a
// store.HashBatchReader (pgstore: one query instead of a round trip per
// key), else key by key.
func seqsByHash(r store.Reader, c convID, hs []msgHash) (seqs []uint64, found []bool, err error) {
	if br, ok := r.(store.HashBatchReader); ok {
		if seqs, found, err = br.SeqsByHash(c, hs); err != nil {
			return nil, nil, hashIndexErr(err)
		}
		return seqs, found, nil
	}
	seqs, found = make([]uint64, len(hs)), make([]bool, len(hs))
	for i, h := range hs {
		seq, err := r.SeqByHash(c, h)
		switch {
		case err == nil:
			seqs[i], found[i] = seq, true
		case !errors.Is(err, store.ErrNotFound):
			return nil, nil, hashIndexErr(err)
		}
	}
	return seqs, found, nil
}

// hashIndexErr is the error of a failed read of the message key index: a
// damaged record is errBadRecord (and the store's ErrCorrupt).
func hashIndexErr(err error) error {
	if errors.Is(err, store.ErrCorrupt) {
		return fmt.Errorf("%w: hash index: %w", errBadRecord, err)
	}
	return fmt.Errorf("lossless: read hash index: %w", err)
}

// message returns the message record of p (its sequence number unset).
func (p *pending) message() msgRecord {
	return msgRecord{Flags: p.flags, Tokens: p.tokens, Timestamp: p.msg.Timestamp(), Role: p.msg.Role(), Hash: p.hash, Raw: p.msg.Raw()}
}

// storedBytes estimates the bytes p's records take in a transaction: whole
// values, as the store counts them.
func (p *pending) storedBytes() int64 {
	n := len(p.rec)
	if p.rec == nil {
		n = len(p.msg.Raw())
	}
	return int64(n+len(p.ref)) + txnRecordBytes
}

// writeMessage writes p as the next message of c (message, key index,
// large reference, context item) in tx and advances rec.
func writeMessage(tx store.Tx, c convID, rec *convRecord, p *pending) error {
	seq := rec.NextSeq
	pos := rec.NextPos
	p.seq = seq
	m := p.msg
	ts := m.Timestamp()
	mr := p.message()
	mr.Seq = seq
	mr.Encoded = p.rec
	// The records are new (next seq and position, a key found missing):
	// written as such when the store has a cheaper way (store.FreshWriter).
	fw, fresh := tx.(store.FreshWriter)
	var err error
	if fresh {
		err = fw.PutFreshMessage(c, mr)
	} else {
		err = tx.PutMessage(c, mr)
	}
	if err != nil {
		return fmt.Errorf("lossless: write message: %w", err)
	}
	if fresh {
		err = fw.PutFreshHash(c, p.hash, seq)
	} else {
		err = tx.PutHash(c, p.hash, seq)
	}
	if err != nil {
		return fmt.Errorf("lossless: write hash index: %w", err)
	}
	tokens := p.tokens
	if p.flags&flagLarge != 0 {
		if err := tx.PutLarge(c, seq, p.ref); err != nil {
			return fmt.Errorf("lossless: write reference: %w", err)
		}
		tokens = p.refTokens
	}
	it := dag.Item{Pos: pos, Ref: dag.MessageRef(seq), Tokens: tokens, Depth: -1, Timestamp: ts, Role: m.Role()}
	if fresh {
		err = fw.PutFreshItem(c, store.Item{Item: it, Flags: p.flags})
	} else {
		err = tx.PutItem(c, store.Item{Item: it, Flags: p.flags})
	}
	if err != nil {
		return fmt.Errorf("lossless: write item: %w", err)
	}
	rec.NextSeq++
	rec.NextPos += posStep
	rec.Messages++
	rec.Bytes += int64(len(m.Raw()))
	rec.Tokens += int64(p.tokens)
	return nil
}

// resolve returns the conversation of (agent, sessionID, sessionKey),
// creating it when create is set. A conversation is keyed by its sessionKey
// when there is one, else by its first session id; every session id seen is
// mapped to it, so it survives session-id changes.
func (e *Engine) resolve(ctx context.Context, agent, sessionID, sessionKey string, create bool) (convID, error) {
	if sessionID == "" {
		return convID{}, fmt.Errorf("lossless: %w", core.ErrEmptySessionID)
	}
	if err := checkSession(agent, sessionID, sessionKey); err != nil {
		return convID{}, err
	}
	if err := ctx.Err(); err != nil {
		return convID{}, fmt.Errorf("lossless: %w", err)
	}
	sname := "s:" + sessionID
	kname := ""
	if sessionKey != "" {
		kname = "k:" + sessionKey
	}
	cacheKey := agent + "\x00" + sname + "\x00" + kname
	if c, ok := e.resolvedGet(cacheKey); ok {
		return c, nil
	}
	e.metaMu.Lock()
	defer e.metaMu.Unlock()
	// On a shared store another process may create the same conversation
	// at once: the agent's names lock makes the look-up and the creation
	// below one step across processes too.
	release, err := e.storeLock(ctx, namesLockName(agent))
	if err != nil {
		return convID{}, err
	}
	defer release()
	sn := store.Name{Agent: agent, Kind: store.NameSessionID, Value: sessionID}
	kn := store.Name{Agent: agent, Kind: store.NameSessionKey, Value: sessionKey}
	var c convID
	// addID: sessionID must be added to an existing conversation's
	// record (a new mapping, or one whose record lacks it: a process
	// stopped between the two writes of an older version).
	addID := false
	repointed, stale := false, convID{}
	err = e.storeUpdate(context.WithoutCancel(ctx), func(tx store.Tx) error {
		sc, sok, err := convByName(tx, sn)
		if err != nil {
			return err
		}
		kc, kok := convID{}, false
		if kname != "" {
			if kc, kok, err = convByName(tx, kn); err != nil {
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
			c = newConvID(agent, name)
			now := time.Now().UnixMilli()
			// A new conversation is made in one transaction: its record
			// (with its first session id) and its names. No other writer
			// can know it yet (the agent's names lock is held).
			rec := convRecord{Agent: agent, Key: sessionKey, Created: now, Updated: now, NextSeq: 1, NextPos: posStep,
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
			return fromStore(err)
		}
		addID = !slices.Contains(rec.SessionIDs, sessionID)
		return nil
	})
	if err != nil {
		return convID{}, err
	}
	if repointed {
		e.forgetResolved(stale)
	}
	if addID {
		// Under the conversation's lock, so that it does not race with a
		// write of its record; a call whose context ends first leaves it
		// to the next resolution (the check above finds it missing).
		if err := e.addSessionID(ctx, c, sessionID, sessionKey); err != nil {
			return convID{}, err
		}
	}
	e.resolvedPut(cacheKey, c) // with c's state, bounded (asmcache.go)
	return c, nil
}

// addSessionID records sessionID on conversation c's record, under the
// conversation's lock so that it does not race with ingest.
func (e *Engine) addSessionID(ctx context.Context, c convID, sessionID, sessionKey string) error {
	s, err := e.lockShared(ctx, c)
	if err != nil {
		return err
	}
	defer s.unlock()
	return e.storeUpdate(context.WithoutCancel(ctx), func(tx store.Tx) error {
		rec, err := tx.Conversation(c)
		if err != nil {
			return fromStore(err)
		}
		for _, id := range rec.SessionIDs {
			if id == sessionID {
				return nil
			}
		}
		rec.SessionIDs = append(rec.SessionIDs, sessionID)
		if rec.Key == "" {
			rec.Key = sessionKey
		}
		if err := tx.PutConversation(c, rec); err != nil {
			return fmt.Errorf("lossless: write: %w", err)
		}
		s.rec, s.loaded = rec, true
		e.noteRecord(s)
		return nil
	})
}

// convByName resolves name n (found false when it is not mapped).
func convByName(r store.Reader, n store.Name) (convID, bool, error) {
	c, err := r.ConvByName(n)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return convID{}, false, nil
	case errors.Is(err, store.ErrCorrupt):
		return convID{}, false, fmt.Errorf("%w: session map value: %w", errBadRecord, err)
	case err != nil:
		return convID{}, false, fmt.Errorf("lossless: read session map: %w", err)
	}
	return c, true, nil
}

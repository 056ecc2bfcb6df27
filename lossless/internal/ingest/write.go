package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/store"
)

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

// StoreMessages stores the prepared messages not already in conversation
// c and returns those it stored, in order; every ps's Seq is set, new or
// already stored. The caller holds c's lock and passes its record recp,
// advanced here as each transaction commits; shared says the store is
// shared by several processes (CheckBase). Each transaction (one store
// Update) holds whole messages (message, key index, context item, optional
// large reference) and the conversation record, so a crash leaves the
// store consistent: a message is either fully stored or absent. A batch
// larger than one transaction is split into several, each of whole
// messages; on an error, what it returns was stored by the transactions
// before.
func StoreMessages(ctx context.Context, st store.Store, c store.ConvID, recp *store.Conversation, shared bool, ps []Pending) ([]*Pending, error) {
	// Drop duplicates: within the batch and against the store.
	fresh := make([]*Pending, 0, len(ps))
	seen := make(map[store.Hash]*Pending, len(ps))
	var dups []*Pending
	uniq := make([]*Pending, 0, len(ps))
	hs := make([]store.Hash, 0, len(ps))
	for i := range ps {
		pp := &ps[i]
		if _, dup := seen[pp.Hash]; dup {
			dups = append(dups, pp)
			continue
		}
		seen[pp.Hash] = pp
		uniq = append(uniq, pp)
		hs = append(hs, pp.Hash)
	}
	err := st.View(ctx, func(r store.Reader) error {
		seqs, found, err := SeqsByHash(r, c, hs)
		if err != nil {
			return err
		}
		for i, pp := range uniq {
			if found[i] {
				pp.Seq = seqs[i]
			} else {
				fresh = append(fresh, pp)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, d := range dups {
			d.Seq = seen[d.Hash].Seq
		}
	}()
	// The records of the new messages (bodies compressed), across the
	// cores, before the transactions; duplicates cost none, nor do small
	// messages (nothing to compress: PutMessage encodes them for less than
	// handing a record over costs).
	if enc, ok := st.(store.MessageEncoder); ok {
		parallelFor(len(fresh), func(i int) {
			if pp := fresh[i]; len(pp.Msg.Raw()) >= preEncodeMin {
				pp.Rec = enc.EncodeMessage(pp.message())
			}
		})
	}
	maxBytes := st.MaxTxnBytes()
	var stored []*Pending
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
		rec := *recp
		err := st.Update(ctx, func(tx store.Tx) error {
			if err := CheckBase(tx, c, rec, shared); err != nil {
				return err
			}
			for _, pp := range fresh[:n] {
				if err := WriteMessage(tx, c, &rec, pp); err != nil {
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
					len(fresh[0].Msg.Raw()), core.ErrTooLarge, err)
			}
			return stored, fmt.Errorf("lossless: commit: %w", err)
		}
		*recp = rec
		stored = append(stored, fresh[:n]...)
		fresh = fresh[n:]
	}
	return stored, nil
}

// SeqsByHash resolves the message keys hs of c: in one read when r is a
// store.HashBatchReader (pgstore: one query instead of a round trip per
// key), else key by key.
func SeqsByHash(r store.Reader, c store.ConvID, hs []store.Hash) (seqs []uint64, found []bool, err error) {
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
// damaged record is records.ErrBadRecord (and the store's ErrCorrupt).
func hashIndexErr(err error) error {
	if errors.Is(err, store.ErrCorrupt) {
		return fmt.Errorf("%w: hash index: %w", records.ErrBadRecord, err)
	}
	return fmt.Errorf("lossless: read hash index: %w", err)
}

// message returns the message record of pp (its sequence number unset).
func (pp *Pending) message() store.Message {
	return store.Message{Flags: pp.Flags, Tokens: pp.Tokens, Timestamp: pp.Msg.Timestamp(), Role: pp.Msg.Role(), Hash: pp.Hash, Raw: pp.Msg.Raw()}
}

// storedBytes estimates the bytes pp's records take in a transaction:
// whole values, as the store counts them.
func (pp *Pending) storedBytes() int64 {
	n := len(pp.Rec)
	if pp.Rec == nil {
		n = len(pp.Msg.Raw())
	}
	return int64(n+len(pp.Ref)) + txnRecordBytes
}

// WriteMessage writes pp as the next message of c (message, key index,
// large reference, context item) in tx and advances rec.
func WriteMessage(tx store.Tx, c store.ConvID, rec *store.Conversation, pp *Pending) error {
	seq := rec.NextSeq
	pos := rec.NextPos
	pp.Seq = seq
	m := pp.Msg
	ts := m.Timestamp()
	mr := pp.message()
	mr.Seq = seq
	mr.Encoded = pp.Rec
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
		err = fw.PutFreshHash(c, pp.Hash, seq)
	} else {
		err = tx.PutHash(c, pp.Hash, seq)
	}
	if err != nil {
		return fmt.Errorf("lossless: write hash index: %w", err)
	}
	tokens := pp.Tokens
	if pp.Flags&store.FlagLarge != 0 {
		if err := tx.PutLarge(c, seq, pp.Ref); err != nil {
			return fmt.Errorf("lossless: write reference: %w", err)
		}
		tokens = pp.RefTokens
	}
	it := dag.Item{Pos: pos, Ref: dag.MessageRef(seq), Tokens: tokens, Depth: -1, Timestamp: ts, Role: m.Role()}
	if fresh {
		err = fw.PutFreshItem(c, store.Item{Item: it, Flags: pp.Flags})
	} else {
		err = tx.PutItem(c, store.Item{Item: it, Flags: pp.Flags})
	}
	if err != nil {
		return fmt.Errorf("lossless: write item: %w", err)
	}
	rec.NextSeq++
	rec.NextPos += records.PosStep
	rec.Messages++
	rec.Bytes += int64(len(m.Raw()))
	rec.Tokens += int64(pp.Tokens)
	return nil
}

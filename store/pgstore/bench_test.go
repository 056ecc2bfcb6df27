package pgstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/store"
)

// BenchmarkUpdateMessages is the engine's batched ingest: Updates of 1,000
// messages of about 300 bytes, each with its key index and context item,
// then the conversation record. It reports msgs/s.
func BenchmarkUpdateMessages(b *testing.B) {
	const perUpdate = 1000
	s := openTest(b, Options{URL: pgtest.NewDB(b)})
	ctx := context.Background()
	c := store.ConvID{1, 2, 3, 4, 5, 6, 7, 8}
	var conv store.Conversation
	body := make([]byte, 240)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		err := s.Update(ctx, func(tx store.Tx) error {
			for range perUpdate {
				seq := conv.NextSeq
				raw := fmt.Appendf(nil, `{"role":"user","content":"%d %s","timestamp":%d}`, seq, body, 1_700_000_000_000+seq)
				sum := sha256.Sum256(raw)
				var h store.Hash
				copy(h[:], sum[:])
				m := store.Message{Seq: seq, Tokens: len(raw) / 4, Timestamp: 1_700_000_000_000 + int64(seq), Role: "user", Hash: h, Raw: raw}
				it := store.Item{Item: dag.Item{Pos: conv.NextPos, Ref: dag.MessageRef(seq), Tokens: m.Tokens, Depth: -1, Timestamp: m.Timestamp, Role: m.Role}}
				if err := tx.PutMessage(c, m); err != nil {
					return err
				}
				if err := tx.PutHash(c, h, seq); err != nil {
					return err
				}
				if err := tx.PutItem(c, it); err != nil {
					return err
				}
				conv.NextSeq++
				conv.NextPos += 65536
				conv.Messages++
				conv.Bytes += int64(len(raw))
			}
			return tx.PutConversation(c, conv)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(conv.Messages)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkRoundTrip is the cost of one point read in an open View (a
// missing message key: the ingest's dedup lookup), and of a View of one
// such read.
func BenchmarkRoundTrip(b *testing.B) {
	s := openTest(b, Options{URL: pgtest.NewDB(b)})
	ctx := context.Background()
	c := store.ConvID{1}
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		err := s.View(ctx, func(r store.Reader) error {
			for b.Loop() {
				if _, err := r.SeqByHash(c, store.Hash{1}); !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	})
	b.Run("view", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			err := s.View(ctx, func(r store.Reader) error {
				_, err := r.SeqByHash(c, store.Hash{1})
				if errors.Is(err, store.ErrNotFound) {
					return nil
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

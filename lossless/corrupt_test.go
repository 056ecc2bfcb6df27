package lossless

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/lossless-engine/contextengine/core"
)

// TestMessagesReportsMissingRange: a message gone from the store (a lost
// key, as a corrupt block would lose it) makes reading the conversation
// fail with the conversation and the missing range, instead of returning a
// short list; so does a lost tail (the record's count says more).
func TestMessagesReportsMissingRange(t *testing.T) {
	ctx := context.Background()
	for _, lost := range []uint64{5, 10} {
		t.Run(fmt.Sprint(lost), func(t *testing.T) {
			e := openTest(t)
			var msgs []core.Message
			for i := 0; i < 10; i++ {
				msgs = append(msgs, core.UserText(fmt.Sprintf("m%d", i), int64(i+1)))
			}
			if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: msgs}); err != nil {
				t.Fatal(err)
			}
			conv, err := e.Conversation(ctx, "", "s")
			if err != nil {
				t.Fatal(err)
			}
			if err := e.db.Update(func(txn *badger.Txn) error { return txn.Delete(msgKey(conv.id, lost)) }); err != nil {
				t.Fatal(err)
			}
			n := 0
			err = e.Messages(ctx, "", "s", func(uint64, core.Message) error { n++; return nil })
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("messages %d-%d are missing", lost, lost)) ||
				!strings.Contains(err.Error(), conv.id.String()) {
				t.Fatalf("lost message %d: err %v after %d messages", lost, err, n)
			}
			// The store is damaged on purpose: skip the cleanup's invariants.
			e.Close()
		})
	}
}

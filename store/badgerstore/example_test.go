package badgerstore_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"os"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

// A message with its context item, written in one Update and read back
// newest first, as assemble reads a context.
func Example() {
	dir, err := os.MkdirTemp("", "badgerstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := badgerstore.Open(ctx, badgerstore.Options{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	c := store.ConvID{1}
	err = s.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutConversation(c, store.Conversation{Agent: "main", NextSeq: 2, NextPos: 2 << 16}); err != nil {
			return err
		}
		if err := tx.PutMessage(c, store.Message{Seq: 1, Role: "user", Raw: []byte(`{"role":"user","content":"hello"}`)}); err != nil {
			return err
		}
		return tx.PutItem(c, store.Item{Item: dag.Item{Pos: 1 << 16, Ref: dag.MessageRef(1), Depth: -1, Role: "user"}})
	})
	if err != nil {
		log.Fatal(err)
	}
	err = s.View(ctx, func(r store.Reader) error {
		for it, err := range r.Items(c, 0, math.MaxUint64, true) {
			if err != nil {
				return err
			}
			m, err := r.Message(c, it.Ref.Seq)
			if err != nil {
				return err
			}
			fmt.Printf("item %d: message %d (%s) %s\n", it.Pos, m.Seq, m.Role, m.Raw)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// item 65536: message 1 (user) {"role":"user","content":"hello"}
}

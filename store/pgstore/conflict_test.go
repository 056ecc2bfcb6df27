package pgstore

import (
	"context"
	"errors"
	"testing"

	"github.com/lossless-engine/contextengine/store"
)

// TestUpdateConflictIsErrConflict: two Updates that write the same
// conversation record, the second reading it before the first commits: the
// server refuses the second (REPEATABLE READ, serialization failure 40001),
// and Update returns it wrapped with store.ErrConflict, which the engine
// retries (a conflict the host must never see).
func TestUpdateConflictIsErrConflict(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{URL: testDB(t), AsyncCommit: true})
	var c store.ConvID
	c[0] = 7
	rec := store.Conversation{Agent: "a", SessionIDs: []string{"s"}, Created: 1, Updated: 1, NextSeq: 1, NextPos: 1}
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.PutConversation(c, rec) }); err != nil {
		t.Fatal(err)
	}
	read, release := make(chan struct{}), make(chan struct{})
	second := make(chan error, 1)
	go func() {
		second <- s.Update(ctx, func(tx store.Tx) error {
			r, err := tx.Conversation(c) // its snapshot starts here
			if err != nil {
				return err
			}
			close(read)
			<-release
			r.NextSeq = 3
			return tx.PutConversation(c, r)
		})
	}()
	<-read
	if err := s.Update(ctx, func(tx store.Tx) error {
		r := rec
		r.NextSeq = 2
		return tx.PutConversation(c, r)
	}); err != nil {
		t.Fatal(err)
	}
	close(release)
	err := <-second
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the second writer's Update: %v, want store.ErrConflict", err)
	}
}

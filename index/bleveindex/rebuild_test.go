package bleveindex

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/index"
)

// TestSearchDuringRebuild: a rebuild of 100K docs, held by its source
// after the first 2,000, does not stop searches: the live index answers
// within a 50 ms deadline, with what it holds, while the rebuild provably
// still runs, and docs added meanwhile are found at once. (Before the
// rebuild was built aside, it held the index's lock for the whole scan and
// the search below could not return until it ended.) The rebuild is then
// cancelled, which keeps the test short; TestRebuildWhileAdding and
// TestRebuildResumes complete theirs.
func TestSearchDuringRebuild(t *testing.T) {
	const n, holdAt = 100_000, 2000
	dir := filepath.Join(t.TempDir(), "ix")
	ix, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	ix.AddGeneration(1, msg("a", "live", 1, "the gondola timetable"))
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	docs := make([]index.Doc, n)
	for i := range docs {
		docs[i] = msg("a", fmt.Sprint("s", i%50), uint64(i), fmt.Sprintf("stored message %d word%d", i, i%997))
	}
	held, release := make(chan struct{}), make(chan struct{})
	rebuilt := make(chan error, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		rebuilt <- ix.Rebuild(rctx, sourceHook(docs, func(i int) {
			if i == holdAt {
				close(held)
				select {
				case <-release:
				case <-rctx.Done(): // the test failed
				}
			}
		}), nil)
	}()
	<-held
	if !ix.NeedsRebuild() {
		t.Fatal("NeedsRebuild false while a rebuild runs")
	}
	ix.AddGeneration(1, msg("a", "live", 2, "a gondola added during the rebuild"))
	fctx, fcancel := context.WithTimeout(ctx, time.Minute)
	defer fcancel()
	if err := ix.Flush(fctx); err != nil { // the worker is not held by the rebuild either
		t.Fatal(err)
	}
	// A blocked search never returns while the rebuild is held; one that
	// does not wait meets its deadline. A loaded machine may stall a
	// goroutine past 50 ms: a deadline error is retried, a blocked call
	// fails the test.
	var hits []index.Hit
	for try := 0; ; try++ {
		res := make(chan error, 1)
		go func() {
			qctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			var err error
			hits, err = ix.Recall(qctx, index.RecallQuery{Agent: "a", Text: "gondola"})
			res <- err
		}()
		var err error
		select {
		case err = <-res:
		case <-time.After(time.Minute):
			t.Fatal("recall blocked while the rebuild is held")
		}
		if err == nil {
			break
		}
		if !errors.Is(err, context.DeadlineExceeded) || try == 2 {
			t.Fatalf("recall during the rebuild: %v", err)
		}
	}
	select {
	case err := <-rebuilt:
		t.Fatalf("the rebuild ended while held: %v", err)
	default:
	}
	if len(hits) != 2 {
		t.Fatalf("recall during the rebuild: %v, want the two live docs", ids(hits))
	}
	cancel()
	close(release)
	if err := <-rebuilt; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled rebuild: %v", err)
	}
	if got := ix.Resumable(); got != holdAt {
		t.Fatalf("resumable from %d docs, want %d", got, holdAt)
	}
}

// TestRebuildResumes: a rebuild stopped by Close mid-way resumes at the
// next Open where it stopped: the second run reads only the rest of the
// source, and the index ends with every doc exactly once, including one
// added while the first run was stopping. Without a matching generation
// (the store changed without the index), it starts over.
func TestRebuildResumes(t *testing.T) {
	const total, stopAt = 3000, 1500
	dir := filepath.Join(t.TempDir(), "ix")
	docs := make([]index.Doc, total)
	for i := range docs {
		docs[i] = msg("a", fmt.Sprint("s", i%7), uint64(i), fmt.Sprintf("stored message unique%d", i))
	}
	ix, err := Open(dir, Options{Generation: total, BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !ix.NeedsRebuild() || ix.Resumable() != 0 {
		t.Fatalf("fresh: needs rebuild %v, resumable %d", ix.NeedsRebuild(), ix.Resumable())
	}
	reached := make(chan struct{})
	rebuilt := make(chan error, 1)
	go func() {
		rebuilt <- ix.Rebuild(context.Background(), func(ctx context.Context, after []byte, yield func(index.Doc, []byte) bool) error {
			for i, d := range docs {
				if i == stopAt {
					close(reached)
					<-ctx.Done() // Close stops the rebuild
				}
				if !yield(d, binary.BigEndian.AppendUint64(nil, uint64(i))) {
					return nil
				}
			}
			return nil
		}, nil)
	}()
	<-reached
	// Ingested while the first run stops: the store's generation moves on.
	late := msg("a", "late", 1, "ingested late unique-late")
	ix.AddGeneration(1, late)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-rebuilt; !errors.Is(err, index.ErrClosed) {
		t.Fatalf("rebuild stopped by Close: %v", err)
	}

	ix, err = Open(dir, Options{Generation: total + 1, BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !ix.NeedsRebuild() {
		t.Fatal("an interrupted rebuild was taken for complete")
	}
	if got := ix.Resumable(); got != stopAt {
		t.Fatalf("resumable from %d docs, want %d", got, stopAt)
	}
	read := 0
	var prog []int
	err = ix.Rebuild(context.Background(), sourceHook(docs, func(int) { read++ }), func(n int) { prog = append(prog, n) })
	if err != nil {
		t.Fatal(err)
	}
	if read != total-stopAt {
		t.Fatalf("the resumed rebuild read %d docs, want the %d after the first run's", read, total-stopAt)
	}
	if len(prog) == 0 || prog[0] <= stopAt || prog[len(prog)-1] != total {
		t.Fatalf("progress %v: want counts from %d to %d", prog, stopAt, total)
	}
	if c, _ := ix.DocCount(); c != total+1 {
		t.Fatalf("count %d, want %d", c, total+1)
	}
	// Every doc exactly once: each session's ids are the expected ones.
	want := map[string]bool{late.ID: true}
	for _, d := range docs {
		want[d.ID] = true
	}
	listed := 0
	for _, conv := range []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "late"} {
		idl, err := ix.ConversationDocIDs(context.Background(), conv)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range idl {
			if !want[id] {
				t.Fatalf("doc %s unexpected or twice", id)
			}
			delete(want, id)
			listed++
		}
	}
	if len(want) != 0 || listed != total+1 {
		t.Fatalf("%d docs listed, %d missing", listed, len(want))
	}
	ix.Close()
	ix, err = Open(dir, Options{Generation: total + 1})
	if err != nil {
		t.Fatal(err)
	}
	if ix.NeedsRebuild() {
		t.Fatalf("rebuilt index: %s", ix.RebuildReason())
	}
	ix.Close()

	// Interrupted again, then opened for a store whose generation the
	// aside index does not know: the rebuild starts over.
	ix, err = Open(dir, Options{Generation: total + 5, BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = ix.Rebuild(ctx, sourceHook(docs, func(i int) {
		if i == stopAt {
			cancel()
		}
	}), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled rebuild: %v", err)
	}
	if got := ix.Resumable(); got != stopAt {
		t.Fatalf("resumable in the same process from %d, want %d", got, stopAt)
	}
	ix.Close()
	ix, err = Open(dir, Options{Generation: total + 6, BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if got := ix.Resumable(); got != 0 {
		t.Fatalf("resumable from %d docs for another generation", got)
	}
}

// TestAddGeneration: docs and a generation moved by a delta, recorded
// together; a negative delta moves it back.
func TestAddGeneration(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	ix, err := Open(dir, Options{Generation: 0})
	if err != nil {
		t.Fatal(err)
	}
	ix.AddGeneration(3, msg("a", "s", 1, "one"), msg("a", "s", 2, "two")) // a heartbeat counts, unindexed
	ix.AddGeneration(-1)
	ix.Close()
	ix, err = Open(dir, Options{Generation: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if ix.NeedsRebuild() {
		t.Fatalf("generation 2: %s", ix.RebuildReason())
	}
}

package recall

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/index/bleveindex"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// historyStore is a memstore of convs conversations of agent main, n
// user messages each, conversation c's id {c+1}.
func historyStore(t *testing.T, convs, n int) *memstore.Store {
	t.Helper()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	err := st.Update(context.Background(), func(tx store.Tx) error {
		for c := range convs {
			id := store.ConvID{byte(c + 1)}
			rec := store.Conversation{Agent: "main", Key: fmt.Sprint("agent:main:old", c), SessionIDs: []string{fmt.Sprint("old", c)},
				NextSeq: uint64(n + 1), Messages: int64(n)}
			if err := tx.PutConversation(id, rec); err != nil {
				return err
			}
			for i := range n {
				m := core.UserText(fmt.Sprintf("history %d-%d about the deploy of service alpha", c, i), int64(c*n+i+1))
				seq := uint64(i + 1)
				if err := tx.PutMessage(id, store.Message{Seq: seq, Role: m.Role(), Timestamp: m.Timestamp(), Hash: records.HashRaw(m.Raw()), Raw: m.Raw()}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRecallRebuildResumes: a rebuild stopped by Close part-way (the
// Rebuild hook holds it at doc stopAt) is resumed by the next OpenBleve
// where it stopped: the second run reads only the docs after, and the
// index then holds every message of every conversation once, the status
// saying so. Moved from package lossless, where it ran through the
// engine's Open and its test hooks.
func TestRecallRebuildResumes(t *testing.T) {
	const convs, per, stopAt = 3, 400, 700
	st := historyStore(t, convs, per)
	dir := filepath.Join(t.TempDir(), "index")
	ctx := context.Background()
	reached := make(chan struct{})
	r, err := OpenBleve(ctx, dir, st, IndexOptions{Rebuild: func(ctx context.Context, n int) {
		if n == stopAt {
			close(reached)
			<-ctx.Done() // Close stops the rebuild here
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	<-reached
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	read := 0
	r, err = OpenBleve(ctx, dir, st, IndexOptions{Rebuild: func(context.Context, int) { read++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if read != convs*per-stopAt {
		t.Fatalf("the resumed rebuild read %d docs, want the %d after the first run's %d", read, convs*per-stopAt, stopAt)
	}
	if s := r.Status(); s.Rebuilding || s.Rebuilt != convs*per || s.Error != "" {
		t.Fatalf("status %+v", s)
	}
	if n, err := r.Recall().(*bleveindex.Index).DocCount(); err != nil || n != convs*per {
		t.Fatalf("%d docs (%v), want %d", n, err, convs*per)
	}
	for c := range convs {
		id := store.ConvID{byte(c + 1)}
		ids, err := r.Recall().ConversationDocIDs(ctx, id.String())
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, d := range ids {
			seen[d] = true
		}
		for seq := uint64(1); seq <= per; seq++ {
			if !seen[MessageDocID(id, seq)] {
				t.Fatalf("conversation %d: message %d not indexed", c, seq)
			}
		}
		if len(ids) != per || len(seen) != per {
			t.Fatalf("conversation %d: %d docs, %d distinct, want %d", c, len(ids), len(seen), per)
		}
	}
}

// putTurns appends texts (user first, then alternating) to conversation c
// of agent main (session key agent:main:<session>), its record counting
// them, as the engine's writes leave it.
func putTurns(t *testing.T, st store.Store, c store.ConvID, session string, texts ...string) {
	t.Helper()
	err := st.Update(context.Background(), func(tx store.Tx) error {
		rec, err := tx.Conversation(c)
		if err != nil {
			rec = store.Conversation{Agent: "main", Key: "agent:main:" + session, SessionIDs: []string{session}, NextSeq: 1}
		}
		for i, s := range texts {
			m := core.UserText(s, int64(1_700_000_000_000+i*1000))
			if i%2 == 1 {
				m = core.AssistantText(s, m.Timestamp())
			}
			if err := tx.PutMessage(c, store.Message{Seq: rec.NextSeq, Role: m.Role(), Timestamp: m.Timestamp(), Hash: records.HashRaw(m.Raw()), Raw: m.Raw()}); err != nil {
				return err
			}
			rec.NextSeq++
			rec.Messages++
		}
		return tx.PutConversation(c, rec)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecallIndexRebuiltFromStore: the Bleve index is rebuilt from the
// store when missing, stale (messages stored while it was closed: recall
// off) or corrupt, and not when up to date; each time the block holds
// what the store holds. Moved from package lossless, where it ran through
// the engine's Open and Assemble.
func TestRecallIndexRebuiltFromStore(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	dir := filepath.Join(t.TempDir(), "index")
	open := func() *Index {
		t.Helper()
		r, err := OpenBleve(ctx, dir, st, IndexOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	find := func(r *Index, prompt, want string) {
		t.Helper()
		if err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		d := Deps{Counter: core.Chars4{}, Store: st, Index: r, Names: mapNames{}}
		call := &Call{Params: core.AssembleParams{SessionKey: "agent:main:q", Prompt: prompt}, Budget: 10000, Agent: "main"}
		items, err := Rank(ctx, d, call, recalled.Options{}, nil, Shown{})
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := Render(ctx, d, items, "", "", 4000, 1, "", nil)
		if err != nil || !strings.Contains(m.Text(), want) {
			t.Fatalf("%q: recall lacks %q: %q %v", prompt, want, m.Text(), err)
		}
	}
	putTurns(t, st, store.ConvID{1}, "a", "the wifi password is hunter2-orange", "noted")
	r := open()
	find(r, "wifi password", "hunter2-orange")
	if s := r.Status(); !s.Enabled || s.Rebuilding || s.Lag != 0 {
		t.Fatalf("status %+v", s)
	}
	r.Close()

	// Missing: the index directory is deleted.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	r = open()
	find(r, "wifi password", "hunter2-orange")
	r.Close()

	// Stale: messages stored while the index was closed are not in it.
	putTurns(t, st, store.ConvID{2}, "b", "the garage door code is 7715", "ok")
	r = open()
	find(r, "garage door code", "7715")
	find(r, "wifi password", "hunter2-orange")
	r.Close()

	// Up to date: reopening does not rebuild.
	r = open()
	if s := r.Status(); s.Rebuilding || s.Rebuilt != 0 {
		t.Fatalf("rebuilt an up-to-date index: %+v", s)
	}
	find(r, "garage door code", "7715")
	r.Close()

	// Corrupt: garbage in every index file.
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			os.WriteFile(p, []byte("not an index"), 0o644)
		}
		return nil
	})
	r = open()
	defer r.Close()
	find(r, "garage door code", "7715")
}

// indexGoroutines counts the goroutines running the recall index: its
// worker, the opening rebuild, and Bleve's own.
func indexGoroutines() int {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "contextengine/index.") || strings.Contains(g, "contextengine/index/bleveindex.") || strings.Contains(g, "recall.OpenBleve") || strings.Contains(g, "blevesearch/") {
			n++
		}
	}
	return n
}

// TestCloseDuringRebuild: Close right after an OpenBleve that started a
// rebuild of the index waits for it (no index goroutine survives), and
// the interrupted rebuild is redone at the next open: nothing is lost
// (the engine's Close closes its Index).
// Moved from package lossless, where it ran through the engine's Open and
// Close.
func TestCloseDuringRebuild(t *testing.T) {
	ctx := context.Background()
	texts := make([]string, 600)
	for i := range texts {
		texts[i] = fmt.Sprintf("turn %d about topic%d", i, i)
	}
	texts[333] = "the spare key is under the blue flowerpot"
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	putTurns(t, st, store.ConvID{1}, "a", texts...)
	dir := filepath.Join(t.TempDir(), "index")

	before := indexGoroutines()
	for i := 0; i < 3; i++ {
		// The index is missing, rebuilt; the hook holds the rebuild at its
		// 100th doc (a resumed one's too) until Close, and makes it slow to stop, so that a Close that
		// did not wait for it would leave its goroutine behind.
		reached := make(chan struct{})
		r, err := OpenBleve(ctx, dir, st, IndexOptions{Rebuild: func(ctx context.Context, n int) {
			if n == 100 {
				close(reached)
				<-ctx.Done()
				time.Sleep(100 * time.Millisecond)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-reached:
		case <-time.After(time.Minute):
			t.Fatal("the rebuild never reached its 100th doc")
		}
		if !r.Rebuilding() {
			t.Fatal("the held rebuild is not running")
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		// Bleve's own goroutines (of earlier tests' indexes too) end
		// shortly after their Close: a little time for them, far less than
		// the held rebuild's.
		n := indexGoroutines()
		for deadline := time.Now().Add(200 * time.Millisecond); n > before && time.Now().Before(deadline); n = indexGoroutines() {
			time.Sleep(10 * time.Millisecond)
		}
		if n > before {
			t.Fatalf("%d index goroutines after Close, %d before Open", n, before)
		}
	}
	r, err := OpenBleve(ctx, dir, st, IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if s := r.Status(); s.Error != "" || s.Rebuilding {
		t.Fatalf("status %+v", s)
	}
	d := Deps{Counter: core.Chars4{}, Store: st, Index: r, Names: mapNames{}}
	call := &Call{Params: core.AssembleParams{SessionKey: "agent:main:q", Prompt: "where is the spare key?"}, Agent: "main"}
	items, err := Rank(ctx, d, call, recalled.Options{K: 3}, nil, Shown{})
	if err != nil || len(items) == 0 || items[0].Seq != 334 {
		t.Fatalf("recall after interrupted rebuilds: %+v %v", items, err)
	}
}

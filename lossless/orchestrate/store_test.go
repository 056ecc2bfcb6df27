package orchestrate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

var conv = store.ConvID{7}

// putMessages stores msgs in conv of st as messages 1.. with tokens[i]
// tokens, each indexed by its hash.
func putMessages(t *testing.T, st store.Store, msgs []core.Message, tokens []int) {
	t.Helper()
	err := st.Update(context.Background(), func(tx store.Tx) error {
		for i, m := range msgs {
			h := records.HashRaw(m.Raw())
			rec := store.Message{Seq: uint64(i + 1), Tokens: tokens[i], Role: m.Role(), Hash: h, Raw: m.Raw()}
			if err := tx.PutMessage(conv, rec); err != nil {
				return err
			}
			if err := tx.PutHash(conv, h, rec.Seq); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ids lists the candidates' entry ids (failure messages).
func ids(cands []orchestrate.Candidate) []string {
	var out []string
	for _, c := range cands {
		out = append(out, c.EntryID)
	}
	return out
}

func tool(id string, n int) core.Message {
	return core.ToolResult(id, "read", strings.Repeat("x", n), false, 1)
}

func entry(id string, m core.Message) core.Entry {
	return core.Entry{Type: core.EntryMessage, ID: id, Message: m}
}

func view[T any](t *testing.T, st store.Store, fn func(store.Reader) (T, error)) T {
	t.Helper()
	var out T
	err := st.View(context.Background(), func(r store.Reader) error {
		var err error
		out, err = fn(r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Maintain's plan of a file: only old large tool results stored byte for
// byte are candidates; the fresh tail, small results, results not stored,
// other roles and entries without an id are left alone. Plan keeps the
// references that are shorter, and WriteAliases maps each reference's key
// to its original (once: an existing key is left alone).
func TestMaintainFilePlan(t *testing.T) {
	st := memstore.New()
	big, small, fresh := tool("a", 20000), tool("b", 100), tool("c", 20000)
	user := core.UserText(strings.Repeat("y", 20000), 1)
	putMessages(t, st, []core.Message{big, small, user, fresh}, []int{5000, 25, 5000, 5000})
	unstored := tool("d", 20000)
	entries := []core.Entry{entry("e1", big), entry("e2", small), entry("e3", user), entry("", big), entry("e5", unstored), entry("e6", fresh)}
	cfg := orchestrate.Config{FreshTailMessages: 1}
	cands := view(t, st, func(r store.Reader) ([]orchestrate.Candidate, error) {
		return orchestrate.FileCandidates(context.Background(), r, conv, cfg, entries, entries)
	})
	if len(cands) != 1 || cands[0].EntryID != "e1" || cands[0].Seq != 1 || cands[0].Tokens != 5000 || cands[0].Index != 0 {
		t.Fatalf("candidates: %v, want e1 (message 1) alone", ids(cands))
	}
	// The fresh tail counts message entries of the window only.
	all := view(t, st, func(r store.Reader) ([]orchestrate.Candidate, error) {
		return orchestrate.FileCandidates(context.Background(), r, conv, cfg, entries[:5], entries[:5])
	})
	if len(all) != 1 {
		t.Fatalf("%d candidates with the big result outside the window's tail, want 1", len(all))
	}
	withFresh := view(t, st, func(r store.Reader) ([]orchestrate.Candidate, error) {
		return orchestrate.FileCandidates(context.Background(), r, conv, orchestrate.Config{}, entries, entries)
	})
	if len(withFresh) != 2 || withFresh[1].EntryID != "e6" {
		t.Fatalf("no fresh tail: %v, want e1 and e6", ids(withFresh))
	}

	ref := tool("a", 10).Raw()
	reps, aliases, first, err := orchestrate.Plan(withFresh, [][]byte{ref, fresh.Raw()})
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].EntryID != "e1" || string(reps[0].Message.Raw()) != string(ref) || first != 0 {
		t.Fatalf("plan: %d rewrites (first %d), want e1 alone (a reference as long as its original is dropped)", len(reps), first)
	}
	if len(aliases) != 1 || aliases[0] != (orchestrate.Alias{Ref: records.HashRaw(ref), Seq: 1}) {
		t.Fatalf("aliases: %+v", aliases)
	}
	if _, _, _, err := orchestrate.Plan(withFresh[:1], [][]byte{[]byte("not json")}); err == nil {
		t.Fatal("a reference that does not parse: no error")
	}
	write := func(as []orchestrate.Alias) {
		t.Helper()
		if err := st.Update(context.Background(), func(tx store.Tx) error { return orchestrate.WriteAliases(tx, conv, as) }); err != nil {
			t.Fatal(err)
		}
	}
	write(aliases)
	write([]orchestrate.Alias{{Ref: aliases[0].Ref, Seq: 3}}) // left alone
	seq := view(t, st, func(r store.Reader) (uint64, error) { return r.SeqByHash(conv, aliases[0].Ref) })
	if seq != 1 {
		t.Fatalf("alias maps to message %d, want 1", seq)
	}
	// The rewritten transcript plans nothing more: the reference is an
	// alias and small.
	entries[0] = entry("e1", reps[0].Message)
	again := view(t, st, func(r store.Reader) ([]orchestrate.Candidate, error) {
		return orchestrate.FileCandidates(context.Background(), r, conv, cfg, entries, entries)
	})
	if len(again) != 0 {
		t.Fatalf("after the rewrite: %v", ids(again))
	}
}

// A stored message whose hash key maps elsewhere (an alias of another
// message) is no candidate.
func TestMaintainFileSkipsAlias(t *testing.T) {
	st := memstore.New()
	big, other := tool("a", 20000), tool("b", 20000)
	putMessages(t, st, []core.Message{big, other}, []int{5000, 5000})
	if err := st.Update(context.Background(), func(tx store.Tx) error {
		return tx.PutHash(conv, records.HashRaw(big.Raw()), 2)
	}); err != nil {
		t.Fatal(err)
	}
	cands := view(t, st, func(r store.Reader) ([]orchestrate.Candidate, error) {
		return orchestrate.FileCandidates(context.Background(), r, conv, orchestrate.Config{}, []core.Entry{entry("e1", big)}, nil)
	})
	if len(cands) != 0 {
		t.Fatalf("an alias is a candidate: %v", ids(cands))
	}
}

// A canceled context stops the plan of a file.
func TestMaintainFileCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := memstore.New().View(context.Background(), func(r store.Reader) error {
		_, err := orchestrate.FileCandidates(ctx, r, conv, orchestrate.Config{}, []core.Entry{entry("e1", tool("a", 1))}, nil)
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled plan: %v", err)
	}
}

// Maintain's plan of a host-kept transcript: mapped tool results older than
// the tail, large, with an id, and not already a reference; the suffix runs
// from the first replaced entry to the end, ids only.
func TestMaintainHostPlan(t *testing.T) {
	st := memstore.New()
	big, small, user, big2 := tool("a", 20000), tool("b", 100), core.UserText(strings.Repeat("y", 20000), 1), tool("c", 20000)
	putMessages(t, st, []core.Message{big, small, user, big2}, []int{5000, 25, 5000, 5000})
	h := func(m core.Message) store.Hash { return records.HashRaw(m.Raw()) }
	entries := []store.HostEntry{
		{Seq: 2, Key: h(small), EntryID: "h0"},
		{Seq: 1, Key: h(big), EntryID: ""},          // no id
		{Seq: 1, Key: store.Hash{9}, EntryID: "h2"}, // already a reference
		{Seq: 3, Key: h(user), EntryID: "h3"},
		{Seq: 1, Key: h(big), EntryID: "h4"},
		{Seq: 4, Key: h(big2), EntryID: ""},
		{Seq: 4, Key: h(big2), EntryID: "h6"}, // the fresh tail
	}
	cands := view(t, st, func(r store.Reader) ([]orchestrate.Candidate, error) {
		return orchestrate.HostCandidates(r, conv, orchestrate.Config{FreshTailMessages: 1}, entries)
	})
	if len(cands) != 1 || cands[0].EntryID != "h4" || cands[0].Index != 4 || string(cands[0].Message.Raw()) != string(big.Raw()) {
		t.Fatalf("host candidates: %v, want h4", ids(cands))
	}
	_, _, first, err := orchestrate.Plan(cands, [][]byte{tool("a", 1).Raw()})
	if err != nil || first != 4 {
		t.Fatalf("plan: first %d, %v", first, err)
	}
	if got := orchestrate.HostSuffix(entries, first); !slices.Equal(got, []string{"h4", "h6"}) {
		t.Fatalf("suffix %v", got)
	}
	if _, err := orchestrate.HostCandidates(nil, conv, orchestrate.Config{FreshTailMessages: 10}, entries); err != nil {
		t.Fatalf("all entries in the tail: %v", err)
	}
}

// ContextSummaryText joins the context's summaries in order, in batches,
// and caps the text at 16,000 characters; a missing summary is an error.
func TestContextSummaryText(t *testing.T) {
	st := memstore.New()
	var items []dag.Item
	err := st.Update(context.Background(), func(tx store.Tx) error {
		for i := range 70 {
			id := fmt.Sprintf("s%03d", i)
			if err := tx.PutSummary(conv, dag.Summary{ID: id, Kind: dag.KindLeaf, Text: fmt.Sprintf("sum %d", i)}); err != nil {
				return err
			}
			items = append(items, dag.Item{Ref: dag.Ref{Kind: dag.RefSummary, ID: id}}, dag.Item{Ref: dag.MessageRef(uint64(i + 1)), Depth: -1})
		}
		return tx.PutSummary(conv, dag.Summary{ID: "long", Kind: dag.KindLeaf, Text: strings.Repeat("z", 20000)})
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	text, err := orchestrate.ContextSummaryText(ctx, st, conv, items)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(text, "\n\n")
	if len(parts) != 70 || parts[0] != "sum 0" || parts[64] != "sum 64" || parts[69] != "sum 69" {
		t.Fatalf("%d summaries joined (%q ... %q)", len(parts), parts[0], parts[len(parts)-1])
	}
	if text, err := orchestrate.ContextSummaryText(ctx, st, conv, nil); err != nil || text != "" {
		t.Fatalf("no items: %q, %v", text, err)
	}
	long, err := orchestrate.ContextSummaryText(ctx, st, conv, []dag.Item{{Ref: dag.Ref{Kind: dag.RefSummary, ID: "long"}}, items[0]})
	if err != nil || len(long) > 16000 || !strings.HasPrefix(long, "zzz") || strings.Contains(long, "sum") {
		t.Fatalf("capped text: %d chars, %v", len(long), err)
	}
	_, err = orchestrate.ContextSummaryText(ctx, st, conv, []dag.Item{{Ref: dag.Ref{Kind: dag.RefSummary, ID: "gone"}}})
	if err == nil || !strings.Contains(err.Error(), `"gone"`) {
		t.Fatalf("missing summary: %v", err)
	}
}

// HostKept: a conversation with a host checkpoint is the host's.
func TestHostKept(t *testing.T) {
	st := memstore.New()
	ctx := context.Background()
	if kept, err := orchestrate.HostKept(ctx, st, "main", conv); err != nil || kept {
		t.Fatalf("no checkpoint: %v, %v", kept, err)
	}
	if err := st.Update(ctx, func(tx store.Tx) error {
		return tx.PutHostCheckpoint("main", conv, store.HostCheckpoint{Conv: conv.String()})
	}); err != nil {
		t.Fatal(err)
	}
	if kept, err := orchestrate.HostKept(ctx, st, "main", conv); err != nil || !kept {
		t.Fatalf("checkpoint: %v, %v", kept, err)
	}
	if kept, err := orchestrate.HostKept(ctx, st, "other", conv); err != nil || kept {
		t.Fatalf("another agent's: %v, %v", kept, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := orchestrate.HostKept(ctx, st, "main", conv); err == nil {
		t.Fatal("a failed read is an answer")
	}
}

package transcript_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/lossless/internal/records"
	"github.com/lossless-engine/contextengine/lossless/transcript"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// fakeWriter plays the engine's door over a memstore: it refuses messages
// holding "refuse" (Reject), stores each distinct message once (by its
// bytes) with a context item at seq*PosStep, and applies the planned
// compactions by deleting the old items and putting the summary's.
type fakeWriter struct {
	st      *memstore.Store
	c       store.ConvID
	next    uint64
	seqs    map[string]uint64
	chunks  []int // messages per chunk
	comps   []*transcript.Compaction
	replace bool // apply the planned compactions
	o       transcript.Options
}

func newFakeWriter(st *memstore.Store) *fakeWriter {
	return &fakeWriter{st: st, c: store.ConvID{7}, next: 1, seqs: map[string]uint64{}, replace: true,
		o: transcript.Options{Workers: 3, BatchLines: 7, BatchBytes: 1 << 10, MaxMessageBytes: 1 << 20}}
}

func (w *fakeWriter) store(t *testing.T, msgs []core.Message) ([]uint64, int) {
	t.Helper()
	var seqs []uint64
	n := 0
	err := w.st.Update(context.Background(), func(tx store.Tx) error {
		for _, m := range msgs {
			seq, ok := w.seqs[string(m.Raw())]
			if !ok {
				seq = w.next
				w.next++
				w.seqs[string(m.Raw())] = seq
				n++
				if err := tx.PutItem(w.c, store.Item{Item: dag.Item{Pos: seq * records.PosStep, Ref: dag.MessageRef(seq), Tokens: 1}}); err != nil {
					return err
				}
			}
			seqs = append(seqs, seq)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seqs, n
}

func (w *fakeWriter) compact(t *testing.T, im *transcript.Import, ent core.Entry) {
	t.Helper()
	p, err := transcript.PlanCompaction(context.Background(), w.st, w.c, im.Tag(), ent)
	if err != nil {
		t.Fatal(err)
	}
	if p == nil {
		return
	}
	w.comps = append(w.comps, p)
	if !w.replace {
		return
	}
	err = w.st.Update(context.Background(), func(tx store.Tx) error {
		for _, it := range p.Old {
			if err := tx.DeleteItem(w.c, it.Pos); err != nil {
				return err
			}
		}
		if err := tx.PutSummary(w.c, p.Summary); err != nil {
			return err
		}
		return tx.PutItem(w.c, store.Item{Item: p.Item})
	})
	if err != nil {
		t.Fatal(err)
	}
	im.Summarized()
}

// run drives an import of path as the engine's door does, without
// reconciling (a test of that calls it itself).
func (w *fakeWriter) run(t *testing.T, path string) (*transcript.Import, transcript.Result) {
	t.Helper()
	ctx := context.Background()
	im, err := transcript.Open(ctx, w.st, nil, "main", "", path, w.o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	if im.Done() {
		res, err := im.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return im, res
	}
	need, err := im.Begin(ctx, w.c)
	if err != nil {
		t.Fatal(err)
	}
	if need {
		if err := im.BeginReconcile(ctx, w.next); err != nil {
			t.Fatal(err)
		}
	}
	for {
		ch, err := im.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ch == nil {
			break
		}
		w.chunks = append(w.chunks, len(ch.Messages))
		for i, m := range ch.Messages {
			if bytes.Contains(m.Raw(), []byte("refuse")) {
				ch.Reject(i, errors.New("refused"))
			}
		}
		seqs, n := w.store(t, ch.Valid())
		comp, err := im.Stored(ctx, ch, seqs, n)
		if err != nil {
			t.Fatal(err)
		}
		if comp != nil {
			w.compact(t, im, *comp)
		}
		if err := im.Checkpoint(ctx, ch, seqs); err != nil {
			t.Fatal(err)
		}
	}
	if im.Reconciling() {
		return im, im.Partial()
	}
	res, err := im.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return im, res
}

// tag returns the file tag of path's session (its header's id).
func (w *fakeWriter) tag(t *testing.T, path string) [8]byte {
	t.Helper()
	im, err := transcript.Open(context.Background(), w.st, nil, "main", "", path, w.o)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	return transcript.FileTag(im.SessionID())
}

func msgLine(i int, text string) string {
	return fmt.Sprintf(`{"type":"message","id":"m%d","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":%q}}`, i, text)
}

// TestImportChunksAndCheckpoint: an import names its session from the
// file's header, cuts the file into chunks of at most 512 messages that
// end at a compaction entry, reports malformed lines and rejected
// messages by line, maps every stored entry, plans the compaction entry
// over the messages before its first kept entry, and checkpoints the end
// of the file: a second run reads nothing, a run after an append reads
// only what was appended.
func TestImportChunksAndCheckpoint(t *testing.T) {
	var lines []string
	lines = append(lines, `{"type":"session","id":"sess-1","timestamp":"2026-01-01T00:00:00Z"}`)
	for i := 0; i < 1200; i++ {
		text := fmt.Sprintf("message %d", i)
		if i == 100 {
			text = "refuse this"
		}
		lines = append(lines, msgLine(i, text))
		if i == 50 {
			lines = append(lines, `{not json}`)
		}
		if i == 700 {
			lines = append(lines, `{"type":"compaction","id":"c1","summary":"what came before","firstKeptEntryId":"m600","timestamp":"2026-01-01T00:00:00Z"}`)
		}
	}
	path := filepath.Join(t.TempDir(), "file-name.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	w := newFakeWriter(st)
	im, res := w.run(t, path)
	if res.SessionID != "sess-1" || res.Imported != 1199 || res.Duplicates != 0 || res.Summaries != 1 || res.Resumed {
		t.Fatalf("result %+v", res)
	}
	if len(res.Malformed) != 2 || res.Malformed[0].Line != 53 || res.Malformed[1].Line != 103 ||
		res.Malformed[1].Err.Error() != "refused" {
		t.Fatalf("malformed %v, want lines 53 (not JSON) and 103 (refused)", res.Malformed)
	}
	total := 0
	for _, n := range w.chunks {
		if n > 512 {
			t.Fatalf("chunks %v: over 512 messages", w.chunks)
		}
		total += n
	}
	if total != 1200 || w.chunks[0] != 512 || w.chunks[1] != 701-512 {
		t.Fatalf("chunks %v, want 512 then the rest up to the compaction entry (1200 messages)", w.chunks)
	}
	// The compaction entry covers the messages before m600 (seqs 1..599:
	// m100 was refused, so m600 is seq 600).
	if len(w.comps) != 1 {
		t.Fatalf("%d compactions planned", len(w.comps))
	}
	p := w.comps[0]
	if len(p.Old) != 599 || p.Old[0].Ref.Seq != 1 || p.Old[598].Ref.Seq != 599 || p.Summary.Method != dag.MethodImported ||
		p.Summary.Text != "what came before" || !strings.HasPrefix(p.Summary.ID, "imp-") || p.Item.Pos != p.Old[0].Pos ||
		p.Summary.DescendantCount != 599 || p.Summary.DescendantTokens != 599 {
		t.Fatalf("compaction %d items [%v..%v], summary %+v", len(p.Old), p.Old[0].Ref, p.Old[len(p.Old)-1].Ref, p.Summary)
	}
	// The entry map: every stored message entry's index -> seq.
	tag := im.Tag()
	mapped := map[uint64]uint64{}
	err := st.View(context.Background(), func(r store.Reader) error {
		for e, err := range r.Entries(w.c, tag, store.EntriesCurrent, 0) {
			if err != nil {
				return err
			}
			mapped[e.Index] = e.Seq
		}
		x, err := r.EntryIndex(w.c, tag, "m600")
		if err != nil || x != 602 {
			return fmt.Errorf("entry m600 at index %d (%v), want 602", x, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(mapped) != 1199 || mapped[1] != 1 || mapped[602] != 600 {
		t.Fatalf("%d entries mapped (index 1 -> %d, 602 -> %d), want 1199, 1, 600", len(mapped), mapped[1], mapped[602])
	}

	// Again: nothing new.
	w2 := newFakeWriter(st)
	if _, res := w2.run(t, path); !res.Resumed || res.SessionID != "sess-1" || res.Imported != 0 || len(w2.chunks) != 0 {
		t.Fatalf("second run %+v, chunks %v", res, w2.chunks)
	}
	// Appended to: only the new lines are read.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "%s\n%s\n", msgLine(2000, "new a"), msgLine(2001, "new b"))
	f.Close()
	w.chunks = nil
	if _, res := w.run(t, path); !res.Resumed || res.Imported != 2 || res.SessionID != "sess-1" || len(w.chunks) != 1 || w.chunks[0] != 2 {
		t.Fatalf("run after append %+v, chunks %v", res, w.chunks)
	}
}

// TestImportSessionFromName: without a header the session is named after
// the file; the caller's session id comes first.
func TestImportSessionFromName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "abc-123.jsonl")
	if err := os.WriteFile(path, []byte(msgLine(1, "hi")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := memstore.New()
	im, err := transcript.Open(ctx, st, nil, "main", "", path, transcript.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	if im.Done() || im.SessionID() != "abc-123" {
		t.Fatalf("done %v, session %q, want abc-123", im.Done(), im.SessionID())
	}
	im2, err := transcript.Open(ctx, st, nil, "main", "given", path, transcript.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer im2.Close()
	if im2.SessionID() != "given" {
		t.Fatalf("session %q, want the caller's", im2.SessionID())
	}
}

// TestImportRewriteReconciles: a file rewritten since its checkpoint is
// read from the start; into a conversation that holds messages, Begin asks
// for its NextSeq, the read is reconciled, and its compaction entries wait
// for the reconciliation; a deleted entry's message is left out of the
// context (store.FlagSuperseded) and an inserted one moved between its
// neighbours in the file.
func TestImportRewriteReconciles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	write := func(lines ...string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(msgLine(0, "a"), msgLine(1, "b"), msgLine(2, "c"))
	st := memstore.New()
	w := newFakeWriter(st)
	if _, res := w.run(t, path); res.Imported != 3 {
		t.Fatalf("first run %+v", res)
	}
	// b deleted, x inserted after a; a compaction entry at the end.
	write(msgLine(0, "a"), msgLine(3, "x"), msgLine(2, "c"),
		`{"type":"compaction","id":"c1","summary":"s","firstKeptEntryId":"m2","timestamp":"2026-01-01T00:00:00Z"}`)
	im, res := w.run(t, path)
	if !im.Reconciling() || res.Imported != 1 || res.Duplicates != 2 || len(w.comps) != 0 {
		t.Fatalf("rewrite: reconciling %v, %+v, %d compactions before the reconciliation", im.Reconciling(), res, len(w.comps))
	}
	if d := im.Deferred(); len(d) != 1 || d[0].Summary != "s" {
		t.Fatalf("deferred %+v", d)
	}
	ctx := context.Background()
	if err := im.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	var items []store.Item
	err := st.View(ctx, func(r store.Reader) error {
		for it, err := range r.Items(w.c, 0, ^uint64(0), false) {
			if err != nil {
				return err
			}
			items = append(items, it)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, it := range items {
		s := fmt.Sprint(it.Ref.Seq)
		if it.Flags&store.FlagSuperseded != 0 {
			s += "(hidden)"
		}
		order = append(order, s)
	}
	// seqs: a=1 b=2 c=3 x=4: x moves between a and c, b is hidden.
	if got := strings.Join(order, " "); got != "1 4 2(hidden) 3" && got != "1 2(hidden) 4 3" {
		t.Fatalf("context after the reconciliation: %s, want a, x between a and c, b hidden", got)
	}
	for _, ent := range im.Deferred() {
		w.compact(t, im, ent)
	}
	// The compaction covers what precedes c in the file's order (a, x;
	// the hidden b sits among them).
	if len(w.comps) != 1 || len(w.comps[0].Old) != 3 {
		t.Fatalf("compactions %+v", w.comps)
	}
	res, err = im.Result(ctx)
	if err != nil || res.Summaries != 1 {
		t.Fatalf("result %+v, %v", res, err)
	}
	// The checkpoint no longer asks for a reconciliation: a third run
	// reads nothing.
	w.comps, w.chunks = nil, nil
	if _, res := w.run(t, path); !res.Resumed || len(w.chunks) != 0 {
		t.Fatalf("third run %+v, chunks %v", res, w.chunks)
	}
}

// TestImportFaultStopsBeforeCheckpoint: Options.Fault("stored") fails a
// rewrite read after its first chunk is stored and before that chunk's
// checkpoint, which then still asks for the reconciliation.
func TestImportFaultStopsBeforeCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(msgLine(0, "a")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	w := newFakeWriter(st)
	w.run(t, path)
	if err := os.WriteFile(path, []byte(msgLine(1, "b")+"\n"+msgLine(0, "a")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	boom := errors.New("boom")
	im, err := transcript.Open(ctx, st, nil, "main", "", path, transcript.Options{Fault: func(stage string) error {
		if stage == "stored" {
			return boom
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	need, err := im.Begin(ctx, w.c)
	if err != nil || !need {
		t.Fatalf("begin: need %v, %v", need, err)
	}
	if err := im.BeginReconcile(ctx, w.next); err != nil {
		t.Fatal(err)
	}
	ch, err := im.Next(ctx)
	if err != nil || ch == nil {
		t.Fatalf("next %v, %v", ch, err)
	}
	seqs, n := w.store(t, ch.Valid())
	if _, err := im.Stored(ctx, ch, seqs, n); err != nil {
		t.Fatal(err)
	}
	if err := im.Checkpoint(ctx, ch, seqs); !errors.Is(err, boom) {
		t.Fatalf("checkpoint: %v, want the fault", err)
	}
	err = st.View(ctx, func(r store.Reader) error {
		from, err := r.ReconcileFrom(w.c, store.FileTag(im.Tag()))
		if err != nil || from != 2 {
			return fmt.Errorf("reconcile record %d, %v; want 2", from, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestImportLongLineSkipped: a line longer than maxMessageBytes plus the
// margin is reported with its number and skipped, the lines around it
// imported; a re-import finds nothing new. (Moved from package lossless.)
func TestImportLongLineSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "long.jsonl")
	huge := `{"type":"message","id":"big","message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":"` +
		strings.Repeat("Q", 64<<10+transcript.LineMargin+10) + `"}],"timestamp":2}}`
	lines := []string{
		`{"type":"session","version":4,"id":"sess-long","timestamp":"2026-01-01T00:00:00Z"}`,
		`{"type":"message","id":"a","message":{"role":"user","content":"before","timestamp":1}}`,
		huge,
		`{"type":"message","id":"b","message":{"role":"assistant","content":[{"type":"text","text":"after"}],"timestamp":3}}`,
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := newFakeWriter(memstore.New())
	w.o.MaxMessageBytes = 64 << 10
	_, res := w.run(t, path)
	if res.Imported != 2 || len(res.Malformed) != 1 || res.Malformed[0].Line != 3 || !errors.Is(res.Malformed[0].Err, core.ErrTooLarge) {
		t.Fatalf("import with a long line: %+v", res)
	}
	if !strings.Contains(res.Malformed[0].Err.Error(), "over the") {
		t.Fatalf("error %q does not say why", res.Malformed[0].Err)
	}
	if _, res = w.run(t, path); res.Imported != 0 || !res.Resumed {
		t.Fatalf("re-import: %+v", res)
	}
}

// TestImportRefusesNonRegularFiles: a device or a directory is not a
// session file (ErrNotSessionFile), and a device is not opened (a named
// pipe would block). (Moved from package lossless.)
func TestImportRefusesNonRegularFiles(t *testing.T) {
	for _, p := range []string{"/dev/zero", t.TempDir()} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		_, err := transcript.Open(context.Background(), memstore.New(), nil, "main", "", p, transcript.DefaultOptions())
		if !errors.Is(err, transcript.ErrNotSessionFile) {
			t.Fatalf("import %s: %v, want ErrNotSessionFile", p, err)
		}
	}
}

// TestImportMalformedLines: lines that do not parse are reported by line
// number and skipped; an unknown role is accepted. (Moved from package
// lossless.)
func TestImportMalformedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	lines := []string{
		`{"type":"session","version":4,"id":"sess-1","timestamp":"2026-01-01T00:00:00Z"}`,
		`{"type":"message","id":"a","message":{"role":"user","content":"hi","timestamp":1}}`,
		`{"type":"message","id":"b","message":{not json}}`,
		`{"type":"message","id":"c","message":{"role":"wizard","content":"x"}}`,
		"{\"type\":\"message\",\"id\":\"d\",\"message\":{\"role\":\"user\",\"content\":\"\xff\"}}",
		`{"type":"message","id":"e","message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"timestamp":2}}`,
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, res := newFakeWriter(memstore.New()).run(t, path)
	// The unknown role (line 4) is accepted and stored; lines 3 and 5 are malformed.
	if res.SessionID != "sess-1" || res.Imported != 3 {
		t.Fatalf("%+v", res)
	}
	var got []int
	for _, le := range res.Malformed {
		got = append(got, le.Line)
	}
	if fmt.Sprint(got) != "[3 5]" {
		t.Fatalf("malformed lines %v, want 3 and 5", got)
	}
}

// TestImportCompactionsWindow: the compaction entries of a real session
// (pi-mono's before-compaction.jsonl, two of them) are planned over the
// messages before their first kept entries, so that after both the raw
// items are exactly the transcript's window (core.Transcript.Window) and
// the last summary is its compaction's; a re-import plans nothing.
func TestImportCompactionsWindow(t *testing.T) {
	path := testutil.PiMono(t)[0]
	st := memstore.New()
	w := newFakeWriter(st)
	_, res := w.run(t, path)
	if res.Summaries != 2 || len(w.comps) != 2 {
		t.Fatalf("summaries %d, %d planned; want 2", res.Summaries, len(w.comps))
	}
	var items []dag.Item
	err := st.View(context.Background(), func(r store.Reader) error {
		var err error
		items, err = records.ReadItems(context.Background(), r, w.c)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !items[0].IsSummary() || !items[1].IsSummary() || items[2].IsSummary() {
		t.Fatalf("items start %+v %+v %+v", items[0], items[1], items[2])
	}
	tr, err := core.ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	win := tr.Window()
	bySeq := map[uint64]string{}
	for raw, seq := range w.seqs {
		bySeq[seq] = raw
	}
	var winMsgs []string
	for _, ent := range win.Entries {
		if ent.Type == core.EntryMessage {
			winMsgs = append(winMsgs, string(ent.Message.Raw()))
		}
	}
	if len(items)-2 != len(winMsgs) {
		t.Fatalf("%d raw items, window has %d messages", len(items)-2, len(winMsgs))
	}
	for i, it := range items[2:] {
		if bySeq[it.Ref.Seq] != winMsgs[i] {
			t.Fatalf("item %d is not the window's message %d", i+2, i)
		}
	}
	if s := w.comps[1].Summary; s.Method != dag.MethodImported || s.Kind != dag.KindLeaf || s.Text != win.Compaction.Summary || items[1].Ref.ID != s.ID {
		t.Fatalf("summary 2: %+v", s)
	}
	// Re-import: nothing planned (the file's checkpoint; and the summaries
	// exist: PlanCompaction finds them by id).
	w.comps = nil
	if _, res := w.run(t, path); res.Summaries != 0 || res.Imported != 0 || len(w.comps) != 0 {
		t.Fatalf("re-import: %+v, %d planned", res, len(w.comps))
	}
	for _, ent := range tr.Entries {
		if ent.Type != core.EntryCompaction {
			continue
		}
		if p, err := transcript.PlanCompaction(context.Background(), st, w.c, w.tag(t, path), ent); err != nil || p != nil {
			t.Fatalf("plan of an imported compaction entry: %+v, %v; want none", p, err)
		}
	}
}

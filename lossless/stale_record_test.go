package lossless

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
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// TestStaleRecordRefusesWrites: issue 37 point 1. A conversation record
// older than the messages stored (a damaged Badger table brings back an
// older version of it) must not be written on: ingest, ingestBatch,
// commitTurn and import are refused with ErrCorrupt, naming the
// conversation, the record's next seq and the message found there, and
// store nothing; on the record put right, the same writes succeed and
// every message comes back byte for byte. On Badger, memstore and a
// shared memstore (whose check reads record and message in one Get).
func TestStaleRecordRefusesWrites(t *testing.T) {
	open := map[string]func(t *testing.T) *Engine{
		"badger": func(t *testing.T) *Engine { return openTest(t) },
		"memstore": func(t *testing.T) *Engine {
			e, err := OpenStore(context.Background(), testConfig(""), memstore.New(), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			return e
		},
		"shared": func(t *testing.T) *Engine { return openShared(t, 1)[0] },
	}
	for _, name := range []string{"badger", "memstore", "shared"} {
		t.Run(name, func(t *testing.T) { testStaleRecord(t, open[name](t)) })
	}
}

func testStaleRecord(t *testing.T, e *Engine) {
	ctx := context.Background()
	src := testutil.PiMono(t)[1]
	lines := readLines(t, src)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	// The first part of the transcript, then more of it (not all: the
	// rest is the refused import's), as the imports.
	writeLines(t, path, lines[:len(lines)/3], false)
	r1, err := e.Import(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	sid := r1.SessionID
	c, err := e.resolve(ctx, e.cfg.AgentID, sid, "", false)
	if err != nil {
		t.Fatal(err)
	}
	old := readRecord(t, e, c)
	part := lines[:len(lines)*2/3]
	writeLines(t, path, part, false)
	if _, err := e.Import(ctx, "", path); err != nil {
		t.Fatal(err)
	}
	full := readRecord(t, e, c)
	want := storedMessages(t, e, "", sid)
	if old.NextSeq >= full.NextSeq || int64(len(want)) != full.Messages {
		t.Fatalf("setup: old record %+v, full %+v, %d messages", old, full, len(want))
	}

	putRecord(t, e, c, old)
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s on a stale record: %v, want ErrCorrupt", what, err)
			return
		}
		for _, s := range []string{c.String(), fmt.Sprintf("next seq %d", old.NextSeq),
			fmt.Sprintf("message %d (", old.NextSeq), "lossless doctor --deep", "nothing is stored"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not say %q", what, err, s)
			}
		}
	}
	fresh := core.UserText("a message after the damage", 1_800_000_000_000)
	_, err = e.Ingest(ctx, core.IngestParams{SessionID: sid, Message: fresh})
	refused("ingest", err)
	_, err = e.IngestBatch(ctx, core.IngestBatchParams{SessionID: sid, Messages: commitTurnMsgs(90)})
	refused("ingestBatch", err)
	_, err = e.CommitTurn(ctx, commitParams(sid, "k1", 91))
	refused("commitTurn", err)
	writeLines(t, path, lines, false)
	_, err = e.Import(ctx, "", path)
	refused("import", err)
	// Compaction's summary replace: corruption, not a conflict to plan
	// again.
	conv, err := e.Conversation(ctx, "", sid)
	if err != nil {
		t.Fatal(err)
	}
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := dag.Summary{ID: "stale", Kind: dag.KindLeaf, Text: "x", Sources: []dag.Ref{items[0].Ref, items[1].Ref}}
	err = conv.Replace(ctx, items[:2], sum, dag.Item{Tokens: 1})
	refused("replace", err)
	if errors.Is(err, dag.ErrConflict) {
		t.Errorf("replace on a stale record: %v is a conflict", err)
	}

	// Nothing was written: with the record put right, every message reads
	// back as it was, and none of the refused ones is there.
	putRecord(t, e, c, full)
	got := storedMessages(t, e, "", sid)
	if len(got) != len(want) {
		t.Fatalf("%d messages after the refused writes, %d before", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d changed by a refused write:\n%s\nwas\n%s", i+1, got[i], want[i])
		}
	}
	if rec := readRecord(t, e, c); rec.NextSeq != full.NextSeq || rec.Messages != full.Messages || rec.Summaries != full.Summaries {
		t.Fatalf("record %+v after the refused writes, was %+v", rec, full)
	}
	if now, err := conv.Items(ctx); err != nil || len(now) != len(items) || now[0] != items[0] || now[1] != items[1] {
		t.Fatalf("items after the refused replace: %d, were %d; %v", len(now), len(items), err)
	}

	// On a healthy record the same writes work.
	if res, err := e.Import(ctx, "", path); err != nil || res.Imported == 0 {
		t.Fatalf("import on a healthy record: %+v, %v", res, err)
	}
	if got, want := storedMessages(t, e, "", sid), fileMessages(t, src); len(got) != len(want) {
		t.Fatalf("%d messages after the import, the file has %d", len(got), len(want))
	}
	if res, err := e.Ingest(ctx, core.IngestParams{SessionID: sid, Message: fresh}); err != nil || !res.Ingested {
		t.Fatalf("ingest on a healthy record: %+v, %v", res, err)
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: sid, Messages: commitTurnMsgs(90)}); err != nil {
		t.Fatalf("ingestBatch on a healthy record: %v", err)
	}
	if res, err := e.CommitTurn(ctx, commitParams(sid, "k1", 91)); err != nil || res.Status != core.CommitCommitted {
		t.Fatalf("commitTurn on a healthy record: %+v, %v", res, err)
	}
}

// putRecord stores rec as conversation c's record and drops the engine's
// cached copy, as a process started afresh would read it.
func putRecord(t *testing.T, e *Engine, c convID, rec convRecord) {
	t.Helper()
	if err := e.st.Update(context.Background(), func(tx store.Tx) error { return tx.PutConversation(c, rec) }); err != nil {
		t.Fatal(err)
	}
	s := e.lockLive(c)
	s.loaded = false
	s.unlock()
}

// TestStaleRecordAfterBitFlip is issue 37 point 1's setup on a real
// Badger store: the first part of a transcript imported, then all of it,
// each in its own open (two versions of the conversation record in two
// tables); one bit flipped inside the newest version's block in the
// newest table. Badger (the patched one in third_party/badger) verifies
// the block's checksum: reading the record fails with ErrCorrupt naming
// the damaged table, never returning the older version (which upstream
// Badger did, taking the damaged block for the table's end), and an
// ingest is refused with the same error, storing nothing. Nothing is
// lost: with the record written afresh, every message of the file reads
// back byte for byte.
func TestStaleRecordAfterBitFlip(t *testing.T) {
	ctx := context.Background()
	src := testutil.PiMono(t)[1]
	lines := readLines(t, src)
	want := fileMessages(t, src)
	var dir string
	open := func() *Engine {
		t.Helper()
		cfg := testConfig(dir)
		cfg.Recall.Enabled = new(bool) // the index is not what is tested here
		e, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	// setup imports half the file, then all of it, and returns the newest
	// table holding the newest record, or "" when Badger's compactor has
	// merged both versions into one table meanwhile (it runs on its own
	// schedule, so the two-table layout the issue describes is checked,
	// not assumed).
	var sid string
	var c convID
	var old, full convRecord
	setup := func() string {
		dir = t.TempDir()
		path := filepath.Join(t.TempDir(), "s.jsonl")
		for i, part := range [][][]byte{lines[:len(lines)/2], lines} {
			writeLines(t, path, part, false)
			e := open()
			res, err := e.Import(ctx, "", path)
			if err != nil {
				t.Fatal(err)
			}
			if sid = res.SessionID; i == 0 {
				if c, err = e.resolve(ctx, e.cfg.AgentID, sid, "", false); err != nil {
					t.Fatal(err)
				}
				old = readRecord(t, e, c)
			} else {
				full = readRecord(t, e, c)
			}
			if err := e.Close(); err != nil { // the memtable into a table
				t.Fatal(err)
			}
		}
		if old.NextSeq >= full.NextSeq || int64(len(want)) != full.Messages {
			t.Fatalf("setup: old record %+v, full %+v, %d messages in the file", old, full, len(want))
		}
		var newest string
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range ents {
			if n := en.Name(); strings.HasSuffix(n, ".sst") && n > newest { // %06d.sst
				newest = n
			}
		}
		olderElsewhere := false
		for _, en := range ents {
			if n := en.Name(); strings.HasSuffix(n, ".sst") && n != newest {
				b, err := os.ReadFile(filepath.Join(dir, n))
				if err != nil {
					t.Fatal(err)
				}
				olderElsewhere = olderElsewhere || bytes.Contains(b, fmt.Appendf(nil, `"nextSeq":%d,`, old.NextSeq))
			}
		}
		if !olderElsewhere {
			return ""
		}
		return newest
	}
	var newest string
	for try := 1; newest == "" && try <= 5; try++ {
		if newest = setup(); newest == "" {
			t.Logf("setup %d: the compactor merged the two versions of the record; again", try)
		}
	}
	if newest == "" {
		t.Fatal("setup: five times the compactor merged the two versions of the record into one table")
	}

	// One bit of the newest record, in the newest table.
	sst := filepath.Join(dir, newest)
	b, err := os.ReadFile(sst)
	if err != nil {
		t.Fatal(err)
	}
	needle := fmt.Appendf(nil, `"nextSeq":%d,`, full.NextSeq)
	at := bytes.Index(b, needle)
	if at < 0 {
		t.Fatalf("the newest record (%s) is not in the newest table %s", needle, newest)
	}
	b[at+len(needle)-2] ^= 0x01
	if err := os.WriteFile(sst, b, 0o644); err != nil {
		t.Fatal(err)
	}

	e := open()
	defer e.Close() // damaged on purpose: no invariants
	damaged := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "table "+newest) {
			t.Fatalf("%s after the flip: %v, want ErrCorrupt naming table %s", what, err, newest)
		}
	}
	var rec convRecord
	err = e.st.View(ctx, func(r store.Reader) error {
		var err error
		rec, err = r.Conversation(c)
		return err
	})
	if err == nil {
		t.Fatalf("after the flip the record reads next seq %d (the older version's is %d), want ErrCorrupt", rec.NextSeq, old.NextSeq)
	}
	damaged("reading the record", err)
	_, err = e.Ingest(ctx, core.IngestParams{SessionID: sid, Message: core.UserText("a message after the damage", 1_800_000_000_000)})
	damaged("ingest", err)
	putRecord(t, e, c, full)
	got := storedMessages(t, e, "", sid)
	if len(got) != len(want) {
		t.Fatalf("%d messages after the refused ingest, the file has %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d changed by the refused ingest:\n%s\nwas\n%s", i+1, got[i], want[i])
		}
	}
}

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
	"github.com/lossless-engine/contextengine/lossless/transcript"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// DropHostMap forgets a host-kept transcript's cursor and entry map (the
// next sync reads from the start) and leaves other conversations' alone;
// HostEntries reads the map in order.
func TestDropHostMap(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	a, b := store.ConvID{1}, store.ConvID{2}
	err := st.Update(ctx, func(tx store.Tx) error {
		for _, c := range []store.ConvID{a, b} {
			if err := tx.PutHostCheckpoint("main", c, store.HostCheckpoint{Conv: c.String(), Cursor: "x", Entries: 2}); err != nil {
				return err
			}
			for i := range uint64(2) {
				if err := tx.PutHostEntry(c, i, store.HostEntry{Seq: i + 1, EntryID: "e" + string(rune('0'+i))}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := transcript.HostEntries(ctx, st, a)
	if err != nil || len(entries) != 2 || entries[0].EntryID != "e0" || entries[1].Seq != 2 {
		t.Fatalf("HostEntries: %+v, %v", entries, err)
	}
	if err := transcript.DropHostMap(ctx, st, "main", a); err != nil {
		t.Fatal(err)
	}
	if entries, err := transcript.HostEntries(ctx, st, a); err != nil || len(entries) != 0 {
		t.Fatalf("after the drop: %+v, %v", entries, err)
	}
	err = st.View(ctx, func(r store.Reader) error {
		if _, err := r.HostCheckpoint("main", a); !errors.Is(err, store.ErrNotFound) {
			return errors.New("the dropped checkpoint is still there")
		}
		_, err := r.HostCheckpoint("main", b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if entries, err := transcript.HostEntries(ctx, st, b); err != nil || len(entries) != 2 {
		t.Fatalf("the other conversation's map: %+v, %v", entries, err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := transcript.DropHostMap(canceled, st, "main", b); !errors.Is(err, context.Canceled) {
		t.Fatalf("drop under a canceled context: %v", err)
	}
	if entries, _ := transcript.HostEntries(ctx, st, b); len(entries) != 0 {
		t.Fatal("a drop under a canceled context did not drop the map")
	}
}

// HostHasMessages tells why a host transcript has nothing to import, or
// hands back its first page; FirstPage serves that page once instead of
// asking the host again.
func TestHostFirstPage(t *testing.T) {
	ctx := context.Background()
	page := core.TranscriptPage{Kind: core.TranscriptPageKind, Entries: []core.TranscriptEntry{{EntryID: "e1", Message: core.UserText("hi", 1)}}}
	reads := 0
	read := func(_ context.Context, req core.TranscriptReadRequest) (core.TranscriptPage, error) {
		reads++
		return page, nil
	}
	first, reason, err := transcript.HostHasMessages(ctx, read)
	if err != nil || reason != "" || first == nil || reads != 1 {
		t.Fatalf("a transcript with a message: %v %q %v (%d reads)", first, reason, err, reads)
	}
	wrapped := transcript.FirstPage(first, read)
	if _, err := wrapped(ctx, core.TranscriptReadRequest{}); err != nil || reads != 1 {
		t.Fatalf("first read asked the host again (%d reads), %v", reads, err)
	}
	if _, err := wrapped(ctx, core.TranscriptReadRequest{}); err != nil || reads != 2 {
		t.Fatalf("second read: %d reads, %v", reads, err)
	}
	for _, tc := range []struct {
		page core.TranscriptPage
		want string
	}{
		{core.TranscriptPage{Kind: core.TranscriptMissingKind}, "no transcript yet"},
		{core.TranscriptPage{Kind: core.TranscriptUnavailableKind, Reason: "busy"}, "host transcript unavailable: busy"},
		{core.TranscriptPage{Kind: core.TranscriptPageKind}, "no message in the transcript yet: nothing stored"},
	} {
		page = tc.page
		if first, reason, err := transcript.HostHasMessages(ctx, read); err != nil || first != nil || reason != tc.want {
			t.Errorf("%s: %v %q %v, want reason %q", tc.page.Kind, first, reason, err, tc.want)
		}
	}
	boom := errors.New("boom")
	if _, _, err := transcript.HostHasMessages(ctx, func(context.Context, core.TranscriptReadRequest) (core.TranscriptPage, error) {
		return core.TranscriptPage{}, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("a failed read: %v", err)
	}
}

// BootstrapReason says why a sync read nothing.
func TestBootstrapReason(t *testing.T) {
	if r, ok := transcript.BootstrapReason(transcript.HostSyncResult{Missing: true}); !ok || r.Reason != "no transcript yet" || r.Bootstrapped {
		t.Fatalf("missing: %+v %v", r, ok)
	}
	if r, ok := transcript.BootstrapReason(transcript.HostSyncResult{Unavailable: "x"}); !ok || r.Reason != "host transcript unavailable: x" {
		t.Fatalf("unavailable: %+v %v", r, ok)
	}
	if _, ok := transcript.BootstrapReason(transcript.HostSyncResult{Imported: 3}); ok {
		t.Fatal("a sync that read the transcript has a reason")
	}
}

// ImportPath is the absolute path (the import lock's and checkpoint's key).
func TestImportPath(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got := transcript.ImportPath("s.jsonl"); got != filepath.Join(wd, "s.jsonl") {
		t.Fatalf("ImportPath: %q", got)
	}
	if got := transcript.ImportPath("/a/b/../s.jsonl"); got != "/a/s.jsonl" {
		t.Fatalf("ImportPath: %q", got)
	}
	if transcript.HostLockKey(store.ConvID{1}) == transcript.ImportPath("host") {
		t.Fatal("a host lock key names a file")
	}
}

// TestHostSync drives a sync of a host-kept transcript as the engine's
// door does, over a memstore: pages are read from the cursor, an entry the
// engine refuses is skipped and not mapped, every other entry is mapped to
// its message in transcript order, the cursor moves past each page, a
// "reset" answer drops the map and reads from the start, and a second
// sync reads from the cursor.
func TestHostSync(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	c := store.ConvID{3}
	msg := func(text string) core.Message {
		m, err := core.NewMessage(map[string]any{"role": "user", "content": text})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	entries := []core.TranscriptEntry{
		{EntryID: "e0", Message: msg("a")}, {EntryID: "e1", Message: msg("refuse")},
		{EntryID: "e2", Message: msg("b")}, {EntryID: "e3", Message: msg("c")},
	}
	var cursors []string
	reset := false
	read := func(_ context.Context, req core.TranscriptReadRequest) (core.TranscriptPage, error) {
		from := 0
		if req.Cursor != nil {
			cursors = append(cursors, *req.Cursor)
			fmt.Sscan(*req.Cursor, &from)
		} else {
			cursors = append(cursors, "")
		}
		if reset {
			reset = false
			return core.TranscriptPage{Kind: core.TranscriptResetKind, Reason: "rewritten"}, nil
		}
		to := min(from+2, len(entries))
		return core.TranscriptPage{Kind: core.TranscriptPageKind, Entries: entries[from:to],
			Cursor: []byte(fmt.Sprintf("%q", fmt.Sprint(to))), HasMore: to < len(entries)}, nil
	}
	seqs := map[string]uint64{}
	sync := func() transcript.HostSyncResult {
		t.Helper()
		h, err := transcript.OpenHost(ctx, st, nil, "main", c, read)
		if err != nil {
			t.Fatal(err)
		}
		for {
			p, err := h.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if p == nil {
				return h.Result()
			}
			for i, m := range p.Messages {
				if bytes.Contains(m.Raw(), []byte("refuse")) {
					p.Skip(c, i, errors.New("refused"))
				}
			}
			var ss []uint64
			var hs []store.Hash
			n := 0
			for _, m := range p.Valid() {
				s, ok := seqs[string(m.Raw())]
				if !ok {
					s = uint64(len(seqs) + 1)
					seqs[string(m.Raw())] = s
					n++
				}
				ss = append(ss, s)
				hs = append(hs, store.Hash{byte(s)})
			}
			if err := h.Stored(ctx, p, ss, hs, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(wantCursor string, wantSkipped int) {
		t.Helper()
		got, err := transcript.HostEntries(ctx, st, c)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range got {
			ids = append(ids, fmt.Sprintf("%s=%d", e.EntryID, e.Seq))
		}
		if s := strings.Join(ids, " "); s != "e0=1 e2=2 e3=3" {
			t.Fatalf("entry map %s, want e0=1 e2=2 e3=3 (e1 skipped)", s)
		}
		err = st.View(ctx, func(r store.Reader) error {
			cp, err := r.HostCheckpoint("main", c)
			if err != nil || cp.Cursor != wantCursor || cp.Entries != 3 || cp.Skipped != wantSkipped {
				return fmt.Errorf("checkpoint %+v, %v; want cursor %s, 3 entries, %d skipped", cp, err, wantCursor, wantSkipped)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if r := sync(); r.Imported != 3 || r.Entries != 4 {
		t.Fatalf("first sync %+v", r)
	}
	check("4", 1)
	if strings.Join(cursors, ",") != ",2" {
		t.Fatalf("cursors asked %q", cursors)
	}
	// From the cursor: nothing new.
	cursors = nil
	if r := sync(); r.Imported != 0 || r.Entries != 0 || strings.Join(cursors, ",") != "4" {
		t.Fatalf("second sync %+v, cursors %q", r, cursors)
	}
	// A reset: the map is dropped and rebuilt from the start, nothing
	// stored twice.
	reset, cursors = true, nil
	if r := sync(); r.Imported != 0 || r.Entries != 4 || strings.Join(cursors, ",") != "4,,2" {
		t.Fatalf("sync after a reset %+v, cursors %q", r, cursors)
	}
	check("4", 1)
}

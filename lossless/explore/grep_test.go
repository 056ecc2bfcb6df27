package explore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/tools"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

// TestGrepPage: paging through a search with a small scan bound finds
// exactly what Grep finds, each hit once.
func TestGrepPage(t *testing.T) {
	e := toolFixture(t)
	x := New(e)
	ctx := context.Background()
	key := func(h tools.GrepHit) string { return fmt.Sprintf("%s/%d/%s", h.Conversation, h.Seq, h.SummaryID) }
	for _, tc := range []struct {
		name string
		p    tools.GrepParams
	}{
		{"agent", tools.GrepParams{SessionID: "s1", Query: "zebra", Scope: tools.ScopeAgent}},
		{"conversation", tools.GrepParams{SessionID: "s1", Query: "routine", Limit: 200}},
		{"summaries", tools.GrepParams{SessionID: "s1", Query: "summarymark", Kind: "summary", Scope: tools.ScopeAgent}},
		{"regex", tools.GrepParams{SessionID: "s1", Query: `message \d+ about`, Regex: true, Limit: 200, Scope: tools.ScopeAgent}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all, err := e.Grep(ctx, tc.p)
			if err != nil || len(all) == 0 {
				t.Fatalf("Grep: %d %v", len(all), err)
			}
			want := map[string]bool{}
			for _, h := range all {
				want[key(h)] = true
			}
			// Bounded by the scan (7 items a call) and by the time (a
			// nanosecond: one item a call).
			for _, bound := range []GrepPageParams{{MaxScan: 7}, {MaxTime: time.Nanosecond}} {
				got := map[string]bool{}
				pp := bound
				pp.GrepParams = tc.p
				pp.Limit = 3
				maxRead := 7
				if bound.MaxTime > 0 {
					maxRead = 1
				}
				for pages := 0; ; pages++ {
					if pages > 500 {
						t.Fatal("no end")
					}
					res, err := x.GrepPage(ctx, pp)
					if err != nil {
						t.Fatal(err)
					}
					if res.Scanned > maxRead || len(res.Hits) > 3 || (res.Next != "" && res.Scanned == 0) {
						t.Fatalf("page %d: %d scanned, %d hits, next %q", pages, res.Scanned, len(res.Hits), res.Next)
					}
					for _, h := range res.Hits {
						if got[key(h)] {
							t.Fatalf("hit %s twice", key(h))
						}
						got[key(h)] = true
					}
					if res.Next == "" {
						break
					}
					pp.Cursor = res.Next
				}
				if len(got) != len(want) {
					t.Fatalf("%+v: pages found %d hits, Grep %d", bound, len(got), len(want))
				}
				for k := range want {
					if !got[k] {
						t.Fatalf("pages missed %s", k)
					}
				}
			}
		})
	}
	// Newest first within a conversation.
	res, err := x.GrepPage(ctx, GrepPageParams{GrepParams: tools.GrepParams{SessionID: "s1", Query: "routine", Kind: "message", Limit: 5}})
	if err != nil || len(res.Hits) != 5 || res.Next == "" {
		t.Fatalf("first page: %+v %v", res, err)
	}
	for i := 1; i < len(res.Hits); i++ {
		if res.Hits[i].Seq >= res.Hits[i-1].Seq {
			t.Fatalf("not newest first: %d after %d", res.Hits[i].Seq, res.Hits[i-1].Seq)
		}
	}
	for _, bad := range []string{"x", "0011223344556677:q", "0011223344556677:m0", "nothex:m3"} {
		if _, err := x.GrepPage(ctx, GrepPageParams{GrepParams: tools.GrepParams{SessionID: "s1", Query: "a"}, Cursor: bad}); !errors.Is(err, lossless.ErrBadToolArgs) {
			t.Fatalf("cursor %q: %v", bad, err)
		}
	}
	if _, err := x.GrepPage(ctx, GrepPageParams{GrepParams: tools.GrepParams{SessionID: "s1", Query: "a"}, Cursor: "0011223344556677:m3"}); !errors.Is(err, lossless.ErrBadToolArgs) {
		t.Fatalf("cursor of another conversation: %v", err)
	}
}

// TestGrepEscapedText: a message's raw JSON may spell its text with
// escapes (\u003c for <, \u00e9 for é, \" and \/): words with such
// characters still match, as the text holds them, and a word missing
// from the raw bytes is not searched for in the parsed text.
func TestGrepEscapedText(t *testing.T) {
	e := openTest(t)
	x := New(e)
	ctx := context.Background()
	var msgs []core.Message
	for _, raw := range []string{
		`{"role":"user","content":"the \u003cb\u003eBOLD\u003c/b\u003e tag and caf\u00e9 \"quoted\" a\/b","timestamp":1}`,
		`{"role":"assistant","content":[{"type":"text","text":"plain words only"}],"timestamp":2}`,
	} {
		m, err := core.ParseMessage([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "esc", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q    string
		want int
	}{
		{"<b>bold</b>", 1}, {"café", 1}, {`"quoted"`, 1}, {"a/b", 1}, {"bold tag", 1},
		{"plain WORDS", 1}, {"plain bold", 0}, {"user:", 1}, {"assistant: plain", 1},
	} {
		hits, err := e.Grep(ctx, tools.GrepParams{SessionID: "esc", Query: tc.q})
		if err != nil || len(hits) != tc.want {
			t.Errorf("grep %q: %d hits, want %d (%v)", tc.q, len(hits), tc.want, err)
		}
		page, err := x.GrepPage(ctx, GrepPageParams{GrepParams: tools.GrepParams{SessionID: "esc", Query: tc.q}})
		if err != nil || len(page.Hits) != tc.want {
			t.Errorf("grep page %q: %d hits, want %d (%v)", tc.q, len(page.Hits), tc.want, err)
		}
	}
}

// TestGrepPageFailsOnMissingMessage: a message gone from the store makes
// GrepPage fail with lossless.ErrCorrupt and the missing range, for every
// scope and time bound, instead of answering from the messages left
// (issue 27: 45 of 61 hits with exit 0), as Grep does (package lossless's
// TestGrepFailsOnMissingMessage). The message is deleted through the
// Badger store itself, the engine closed.
func TestGrepPageFailsOnMissingMessage(t *testing.T) {
	ctx := context.Background()
	for _, lost := range []uint64{4, 10} { // one inside, the last
		t.Run(fmt.Sprint(lost), func(t *testing.T) {
			cfg := config.Default()
			cfg.StoreDir = t.TempDir()
			cfg.Tokenizer = core.CounterChars4
			withoutRecall(&cfg)
			e, err := lossless.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []core.Message
			for i := 0; i < 10; i++ {
				msgs = append(msgs, core.UserText(fmt.Sprintf("needle %d", i), int64(i+1)))
			}
			if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: msgs}); err != nil {
				t.Fatal(err)
			}
			conv, err := e.Conversation(ctx, "", "s")
			if err != nil {
				t.Fatal(err)
			}
			healthy, err := New(e).GrepPage(ctx, GrepPageParams{GrepParams: tools.GrepParams{SessionID: "s", Query: "needle", Limit: 50}})
			if err != nil || len(healthy.Hits) != 10 {
				t.Fatalf("healthy grep page: %d hits, %v", len(healthy.Hits), err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			st, err := badgerstore.Open(ctx, badgerstore.Options{Dir: cfg.StoreDir})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Update(ctx, func(tx store.Tx) error { return tx.DeleteMessage(conv.StoreID(), lost) }); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			e, err = lossless.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close() // damaged on purpose: no check at the end
			x := New(e)
			want := fmt.Sprintf("messages %d-%d are missing", lost, lost)
			for _, p := range []tools.GrepParams{
				{SessionID: "s", Query: "needle", Limit: 50},
				{SessionID: "s", Query: "needle", Limit: 50, Since: 1, Until: 100},
				{SessionID: "s", Query: "needle", Limit: 50, Scope: tools.ScopeAgent},
			} {
				res, err := x.GrepPage(ctx, GrepPageParams{GrepParams: p})
				if !errors.Is(err, lossless.ErrCorrupt) || !strings.Contains(err.Error(), want) {
					t.Errorf("grep page %+v: %d hits, err %v", p, len(res.Hits), err)
				}
			}
		})
	}
}

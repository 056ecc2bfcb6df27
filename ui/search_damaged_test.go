package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/memstore"
)

// TestSearchFailsOnDamagedStore: when a stored message cannot be read, the
// explorer's search answers an error naming the missing range, for a
// session's search and the agent's, never a short list with 200.
func TestSearchFailsOnDamagedStore(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	cfg := config.Default()
	cfg.Tokenizer = core.CounterChars4
	e, err := lossless.OpenStore(ctx, cfg, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var msgs []core.Message
	for i := 0; i < 10; i++ {
		msgs = append(msgs, core.UserText(fmt.Sprintf("needle %d", i), int64(i+1)))
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	f := serve(t, e)
	var g grepAnswer
	f.getJSON(t, "/api/grep", q("q", "needle", "session", "s", "limit", "50"), &g)
	if len(g.Items) != 10 {
		t.Fatalf("healthy search: %d hits", len(g.Items))
	}
	infos, err := e.Sessions(ctx, "")
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions: %+v %v", infos, err)
	}
	id, ok := store.ParseConvID(infos[0].ID)
	if !ok {
		t.Fatalf("conversation id %q", infos[0].ID)
	}
	if err := st.Update(ctx, func(tx store.Tx) error { return tx.DeleteMessage(id, 7) }); err != nil {
		t.Fatal(err)
	}
	for _, params := range []map[string]string{
		{"q": "needle", "session": "s", "limit": "50"},
		{"q": "needle", "limit": "50"},
		{"q": "needle", "session": "s", "limit": "50", "regex": "1"},
	} {
		var kv []string
		for k, v := range params {
			kv = append(kv, k, v)
		}
		msg := f.wantError(t, "/api/grep", q(kv...), http.StatusInternalServerError)
		if !strings.Contains(msg, "messages 7-7 are missing") {
			t.Errorf("search %v on a damaged store: %q", params, msg)
		}
	}
}

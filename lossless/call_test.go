package lossless

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// texts returns the texts of msgs.
func texts(msgs []core.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text())
	}
	return out
}

// TestAssembleResolutionRepointed: a session id that moves to another
// conversation (a later call pairs it with the session key of another)
// is assembled from that one, though an assemble resolved it to the first
// before (the cached resolution is forgotten with the move).
func TestAssembleResolutionRepointed(t *testing.T) {
	e := openTest(t, withoutRecall)
	ctx := context.Background()
	ingest := func(sid, key, text string) {
		t.Helper()
		if _, err := e.Ingest(ctx, core.IngestParams{SessionID: sid, SessionKey: key, Message: core.UserText(text, time.Now().UnixMilli())}); err != nil {
			t.Fatal(err)
		}
	}
	ingest("s1", "", "first conversation")
	p := core.AssembleParams{SessionID: "s1", TokenBudget: 1000}
	if res, err := e.Assemble(ctx, p); err != nil || len(res.Messages) != 1 {
		t.Fatalf("first assemble: %q, %v", texts(res.Messages), err)
	}
	ingest("s2", "agent:main:k", "second conversation")
	ingest("s1", "agent:main:k", "s1 joins the second")
	res, err := e.Assemble(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(texts(res.Messages), "|"); !strings.Contains(got, "second conversation") || strings.Contains(got, "first conversation") {
		t.Fatalf("assemble of s1 after it moved to the keyed conversation: %q", got)
	}
}

// TestSharedAssembleDeletedPostgres: an engine whose assemble resolved a
// session (cached) that another process then deleted (retention) hands
// the host's messages back, as for a session never stored, instead of
// failing on the missing record; and assembles the conversation once it
// is made again.
func TestSharedAssembleDeletedPostgres(t *testing.T) {
	url := pgtest.NewDB(t)
	ctx := context.Background()
	a, err := openPG(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := openPG(ctx, url, func(c *config.Config) { c.Retention.MaxAgeDays = 1 })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	old := time.Now().Add(-48 * time.Hour).UnixMilli()
	if _, err := a.Ingest(ctx, core.IngestParams{SessionID: "gone", SessionKey: "agent:main:gone", Message: core.UserText("the old conversation", old)}); err != nil {
		t.Fatal(err)
	}
	host := []core.Message{core.UserText("what the host holds", time.Now().UnixMilli())}
	p := core.AssembleParams{SessionID: "gone", SessionKey: "agent:main:gone", TokenBudget: 1000, Messages: host}
	if res, err := a.Assemble(ctx, p); err != nil || len(res.Messages) != 1 || res.Messages[0].Text() != "the old conversation" {
		t.Fatalf("first assemble: %q, %v", texts(res.Messages), err)
	}
	if res, err := b.Retain(ctx, time.Time{}); err != nil || len(res.Deleted) != 1 {
		t.Fatalf("retention deleted %+v, %v; want the old conversation", res.Deleted, err)
	}
	res, err := a.Assemble(ctx, p)
	if err != nil {
		t.Fatalf("assemble of a session another process deleted: %v", err)
	}
	if got := texts(res.Messages); len(got) != 1 || got[0] != "what the host holds" {
		t.Fatalf("assemble of a session another process deleted: %q, want the host's messages", got)
	}
	if _, err := b.Ingest(ctx, core.IngestParams{SessionID: "gone", SessionKey: "agent:main:gone", Message: core.UserText("the new conversation", time.Now().UnixMilli())}); err != nil {
		t.Fatal(err)
	}
	if res, err := a.Assemble(ctx, p); err != nil || len(res.Messages) != 1 || res.Messages[0].Text() != "the new conversation" {
		t.Fatalf("assemble once made again: %q, %v", texts(res.Messages), err)
	}
}

package lossless

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// Sessions reports when a conversation took place (its messages' own
// timestamps), and retention ages a conversation by its last message: an
// imported history of two months ago is old on the day it is stored, one of
// yesterday is not, and one whose messages carry no plausible time ages by
// its last write.
func TestRetentionAgesByMessageTime(t *testing.T) {
	e := openTest(t, func(c *Config) { c.Retention.MaxAgeDays = 30 })
	ctx := context.Background()
	now := time.Now()
	at := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	ingest := func(session string, times ...int64) {
		t.Helper()
		var msgs []core.Message
		for i, ts := range times {
			msgs = append(msgs, core.UserText(fmt.Sprintf("%s message %d", session, i), ts))
		}
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: session, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	day := 24 * time.Hour
	ingest("imported-old", at(70*day), at(65*day), at(60*day))
	ingest("imported-recent", at(3*day), at(1*day))
	ingest("no-time", 0, 42) // no timestamp, then one in 1970 (implausible)

	infos, err := e.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]SessionInfo{}
	for _, in := range infos {
		got[in.SessionIDs[0]] = in
	}
	if in := got["imported-old"]; in.FirstMessage != at(70*day) || in.LastMessage != at(60*day) || in.Updated < now.UnixMilli()-60_000 {
		t.Errorf("imported-old: first %d last %d updated %d, want %d %d and about now", in.FirstMessage, in.LastMessage, in.Updated, at(70*day), at(60*day))
	}
	if in := got["no-time"]; in.FirstMessage != 42 || in.LastMessage != 42 {
		t.Errorf("no-time: first %d last %d, want 42 42", in.FirstMessage, in.LastMessage)
	}

	res, err := e.Retain(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 1 || res.Deleted[0].Reason != "age" || res.Deleted[0].ID != got["imported-old"].ID {
		t.Fatalf("retain at now deleted %+v, want imported-old by age", res.Deleted)
	}
	// A month later the recent import is old too; the conversation without
	// a plausible message time is old only a month after its last write.
	res, err = e.Retain(ctx, now.Add(30*day))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 1 || res.Deleted[0].ID != got["imported-recent"].ID {
		t.Fatalf("retain a month later deleted %+v, want imported-recent", res.Deleted)
	}
	res, err = e.Retain(ctx, now.Add(31*day+time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 1 || res.Deleted[0].ID != got["no-time"].ID {
		t.Fatalf("retain 31 days after the writes deleted %+v, want no-time", res.Deleted)
	}
}

package lossless

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/inspect"
)

// The engine stores an imported history's own timestamps (Sessions reports
// them) while its record's Updated is the write's, and Retain ages it by
// the former: a history of two months ago is old on the day it is
// stored, one of yesterday is not. (How a pass ages a conversation, an
// implausible time included, is lossless/retention's TestPlanAgesByMessageTime;
// the times Sessions reports, lossless/inspect's TestSessionsReportMessageTimes.)
func TestRetentionAgesByMessageTime(t *testing.T) {
	e := openTest(t, func(c *config.Config) { c.Retention.MaxAgeDays = 30 })
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

	infos, err := e.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]inspect.SessionInfo{}
	for _, in := range infos {
		got[in.SessionIDs[0]] = in
	}
	if in := got["imported-old"]; in.FirstMessage != at(70*day) || in.LastMessage != at(60*day) || in.Updated < now.UnixMilli()-60_000 {
		t.Errorf("imported-old: first %d last %d updated %d, want %d %d and about now", in.FirstMessage, in.LastMessage, in.Updated, at(70*day), at(60*day))
	}

	res, err := e.Retain(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 1 || res.Deleted[0].Reason != "age" || res.Deleted[0].ID != got["imported-old"].ID {
		t.Fatalf("retain at now deleted %+v, want imported-old by age", res.Deleted)
	}
}

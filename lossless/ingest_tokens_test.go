package lossless

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/tokens"
)

// base64Run returns n characters of base64 without a space.
func base64Run(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b := make([]byte, n)
	for j := range b {
		b[j] = alpha[rng.IntN(len(alpha))]
	}
	return string(b)
}

// TestIngestCancelledDuringCount: ingesting a 30 MiB message without
// spaces (seconds of counting, about 480 slices of 64K runes) stops soon
// after the request is cancelled, with the context's error, and stores
// nothing. "Soon" is measured in this machine's own units, so that a
// loaded CI machine does not fail it: at most the time of 16 slices (the
// slices in flight on the cores and in the queue) plus a second, where the
// whole count takes about 480/cores slices. BenchmarkCancelLatency gives
// the figure on a quiet machine.
func TestIngestCancelledDuringCount(t *testing.T) {
	if testing.Short() {
		t.Skip("counts a 30 MiB message")
	}
	e := openTest(t, func(c *config.Config) { c.Tokenizer = core.EncodingO200k })
	f, err := tokens.NewO200k()
	if err != nil {
		t.Fatal(err)
	}
	slice := base64Run(tokens.MaxPieceRunes, 3)
	var perSlice time.Duration
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		f.CountText(slice)
		perSlice = max(perSlice, time.Since(t0))
	}
	bound := time.Second + 16*perSlice
	m := core.ToolResult("c", "read", base64Run(30<<20, 5), false, 1) // under maxMessageBytes (32 MiB) with its JSON
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled time.Time
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancelled = time.Now()
		cancel()
	}()
	_, err = e.Ingest(ctx, core.IngestParams{SessionID: "big", Message: m})
	after := time.Since(cancelled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ingest of a cancelled request: %v", err)
	}
	if after > bound {
		t.Fatalf("ingest ended %v after the cancel (bound %v: one 64K-rune slice counts in %v here)", after, bound, perSlice)
	}
	t.Logf("ended %v after the cancel (bound %v)", after, bound)
	if n := countMessages(t, e); n != 0 {
		t.Fatalf("%d messages stored by a cancelled ingest", n)
	}
}

// BenchmarkCancelLatency cancels the ingest of a 30 MiB message without
// spaces 100 ms into its count and reports how long after the cancel the
// call returned (ms-after-cancel; the target: under 100 ms).
func BenchmarkCancelLatency(b *testing.B) {
	e := openTest(b, func(c *config.Config) { c.Tokenizer = core.EncodingO200k })
	m := core.ToolResult("c", "read", base64Run(30<<20, 5), false, 1)
	b.ReportAllocs()
	var worst time.Duration
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		var cancelled time.Time
		timer := time.AfterFunc(100*time.Millisecond, func() { cancelled = time.Now(); cancel() })
		_, err := e.Ingest(ctx, core.IngestParams{SessionID: "big", Message: m})
		after := time.Since(cancelled)
		timer.Stop()
		cancel()
		if !errors.Is(err, context.Canceled) {
			b.Fatalf("ingest: %v", err)
		}
		worst = max(worst, after)
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "ms-after-cancel")
}

package dag_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
)

// words counts a token per whitespace-separated word: deterministic and
// fast, so expected outputs are readable.
type words struct{}

func (words) Name() string           { return "words" }
func (words) CountText(s string) int { return len(strings.Fields(s)) }

// fakeSum is a scripted summarizer.
type fakeSum struct {
	mode     string        // ok, fail, empty, think, longer, hang, aggronly, mixed
	delay    time.Duration // sleep per call
	calls    atomic.Int64
	inflight atomic.Int64
	maxIn    atomic.Int64
	mu       sync.Mutex
	reqs     []core.SummarizeRequest
}

func (f *fakeSum) Name() string { return "fake:" + f.mode }

func (f *fakeSum) Summarize(ctx context.Context, req core.SummarizeRequest) (string, error) {
	n := f.calls.Add(1)
	cur := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxIn.Load()
		if cur <= m || f.maxIn.CompareAndSwap(m, cur) {
			break
		}
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	mode := f.mode
	if mode == "mixed" {
		modes := []string{"ok", "fail", "empty", "think", "longer", "hang", "aggronly"}
		mode = modes[int(n)%len(modes)]
	}
	switch mode {
	case "fail":
		return "", fmt.Errorf("fake: boom: %w", core.ErrSummarizerFailed)
	case "empty":
		return " \n\t", nil
	case "think":
		return "<think>" + prefixWords(req.Text, req.TargetTokens) + "</think>", nil
	case "longer":
		return req.Text + " " + req.Text, nil
	case "hang":
		<-ctx.Done()
		return "", ctx.Err()
	case "aggronly":
		if !req.Aggressive {
			return req.Text + " more", nil
		}
	}
	n2 := req.TargetTokens
	if req.Aggressive {
		n2 = n2/2 + 1
	}
	return "<think>plan</think>S: " + prefixWords(req.Text, n2-1), nil
}

func prefixWords(s string, n int) string {
	f := strings.Fields(s)
	if n < 0 {
		n = 0
	}
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

// seqIDs returns a NewID func giving sum_001, sum_002, ...
func seqIDs() func() string {
	var n atomic.Int64
	return func() string { return fmt.Sprintf("sum_%03d", n.Add(1)) }
}

func fixedNow() time.Time { return time.UnixMilli(1_700_000_000_000).UTC() }

// appendMsgs appends n messages cycling through roles, each of tokens words.
func appendMsgs(m *dag.Memory, n, tokens int, roles []string, ts0 int64) (first, last uint64) {
	for i := 0; i < n; i++ {
		role := roles[i%len(roles)]
		seq := uint64(len(m.MessageSeqs()) + 1)
		text := role + fmt.Sprint(seq) + strings.Repeat(" w", tokens-1)
		s := m.Append(role, text, tokens, ts0+int64(seq)*1000)
		if i == 0 {
			first = s
		}
		last = s
	}
	return first, last
}

package lossless

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

// TestSimulation runs random ingest / batch / afterTurn / assemble / reopen
// sequences against a simple in-memory model (per session: the ordered list
// of distinct messages) and compares after every step. Steps:
// $LOSSLESS_SIM_STEPS (default 300); seed $LOSSLESS_SIM_SEED.
func TestSimulation(t *testing.T) {
	steps := 300
	if v, err := strconv.Atoi(os.Getenv("LOSSLESS_SIM_STEPS")); err == nil && v > 0 {
		steps = v
	}
	seed := int64(42)
	if v, err := strconv.ParseInt(os.Getenv("LOSSLESS_SIM_SEED"), 10, 64); err == nil {
		seed = v
	}
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	cfg := testConfig(dir)
	e, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	ctx := context.Background()

	// A pool of messages, some repeated, so that duplicates happen often.
	pool := make([]core.Message, 60)
	for i := range pool {
		switch i % 3 {
		case 0:
			pool[i] = core.UserText(fmt.Sprintf("user %d", i), int64(i))
		case 1:
			pool[i] = core.AssistantText(fmt.Sprintf("assistant %d", i), int64(i))
		default:
			pool[i] = core.ToolResult(fmt.Sprintf("c%d", i), "read", fmt.Sprintf("result %d", i), false, int64(i))
		}
	}
	model := map[string][]core.Message{}
	known := map[string]map[string]bool{}
	add := func(s string, msgs []core.Message) int {
		if known[s] == nil {
			known[s] = map[string]bool{}
		}
		n := 0
		for _, m := range msgs {
			if !known[s][string(m.Raw())] {
				known[s][string(m.Raw())] = true
				model[s] = append(model[s], m)
				n++
			}
		}
		return n
	}
	pick := func() []core.Message {
		k := 1 + rng.Intn(8)
		out := make([]core.Message, k)
		for i := range out {
			out[i] = pool[rng.Intn(len(pool))]
		}
		return out
	}
	sessions := []string{"a", "b", "c"}
	for step := 0; step < steps; step++ {
		s := sessions[rng.Intn(len(sessions))]
		switch op := rng.Intn(10); {
		case op < 3:
			m := pool[rng.Intn(len(pool))]
			want := add(s, []core.Message{m}) == 1
			r, err := e.Ingest(ctx, core.IngestParams{SessionID: s, Message: m})
			if err != nil || r.Ingested != want {
				t.Fatalf("step %d ingest: %v %v, want %v", step, r, err, want)
			}
		case op < 6:
			msgs := pick()
			want := add(s, msgs)
			r, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: s, Messages: msgs})
			if err != nil || r.IngestedCount != want {
				t.Fatalf("step %d batch: %v %v, want %d", step, r, err, want)
			}
		case op < 8:
			view := append(append([]core.Message{}, model[s]...), pick()...)
			pre := rng.Intn(len(view) + 1)
			add(s, view[pre:])
			if err := e.AfterTurn(ctx, core.AfterTurnParams{SessionID: s, Messages: view, PrePromptMessageCount: pre}); err != nil {
				t.Fatalf("step %d afterTurn: %v", step, err)
			}
		case op < 9:
			if len(model[s]) == 0 {
				continue
			}
			out, err := e.Assemble(ctx, core.AssembleParams{SessionID: s, TokenBudget: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			// Everything fits: the model's messages, minus leading tool
			// results (their calls are not in this synthetic history).
			want, _ := dropLeadingToolResults(model[s])
			if len(out.Messages) != len(want) {
				t.Fatalf("step %d assemble: %d messages, want %d", step, len(out.Messages), len(want))
			}
		default:
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if e, err = Open(ctx, cfg); err != nil {
				t.Fatalf("step %d reopen: %v", step, err)
			}
		}
		if step%25 == 0 || step == steps-1 {
			for _, s := range sessions {
				if len(model[s]) == 0 {
					continue
				}
				got := storedMessages(t, e, "", s)
				if len(got) != len(model[s]) {
					t.Fatalf("step %d session %s: %d stored, model %d", step, s, len(got), len(model[s]))
				}
				for i := range got {
					if !bytes.Equal(got[i], model[s][i].Raw()) {
						t.Fatalf("step %d session %s: message %d differs", step, s, i)
					}
				}
			}
			if err := checkInvariants(e); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
}

// TestConcurrentSessions ingests and assembles 32 sessions from many
// goroutines at once (and the same turn from two goroutines per session,
// which must be stored once).
func TestConcurrentSessions(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	const sessions, turns = 32, 12
	var wg sync.WaitGroup
	errs := make(chan error, sessions*2)
	for s := 0; s < sessions; s++ {
		for dup := 0; dup < 2; dup++ {
			wg.Add(1)
			go func(s int) {
				defer wg.Done()
				sid := fmt.Sprintf("agent:a%d:s%d", s%4, s)
				var view []core.Message
				for i := 0; i < turns; i++ {
					tr := turn(i)
					view = append(view, tr...)
					if err := e.AfterTurn(ctx, core.AfterTurnParams{SessionID: sid, SessionKey: sid, Messages: view, PrePromptMessageCount: len(view) - len(tr)}); err != nil {
						errs <- err
						return
					}
					out, err := e.Assemble(ctx, core.AssembleParams{SessionID: sid, SessionKey: sid, TokenBudget: 2000})
					if err != nil {
						errs <- err
						return
					}
					if out.EstimatedTokens > 2000 {
						errs <- fmt.Errorf("over budget: %d", out.EstimatedTokens)
						return
					}
				}
			}(s)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st, err := e.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Agents) != 4 {
		t.Fatalf("agents %v", st.Agents)
	}
	for a, as := range st.Agents {
		if as.Conversations != sessions/4 || as.Messages != sessions/4*turns*4 {
			t.Fatalf("agent %s: %+v", a, as)
		}
	}
}

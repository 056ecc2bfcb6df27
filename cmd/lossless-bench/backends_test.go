package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/internal/pgtest"
)

// TestMain lets the test binary be a writer process of the backends
// comparison (runWriters starts os.Executable() writer-child …).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "writer-child" {
		os.Exit(writerChild(context.Background(), os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestBackends runs the backends comparison at a tiny size on a real
// PostgreSQL server, with synchronous commits (the writer processes too):
// every figure of both backends is there and plausible,
// the writer processes ran (two at once on PostgreSQL), and the run left no
// database behind.
func TestBackends(t *testing.T) {
	server := pgtest.ServerURL(t)
	jsonPath := filepath.Join(t.TempDir(), "b.json")
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"--store", server, "--sizes", "300,600", "--messages", "400",
		"--writers", "1,2", "--writer-messages", "200", "--sync-writes", "--json", jsonPath}, &out, &errb, false, nil, nil)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"batched ingest msgs/s", "assemble p50/p99 ms at 600, no prompt (no recall)",
		"assemble p50/p99 ms at 600, with a prompt (recall)", "recall p50/p99 ms at 300",
		"compaction s", "disk bytes per message", "2 writer processes msgs/s", "syncWrites (Badger fsyncs, PostgreSQL's synchronous commits)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	var rep struct {
		Backends []backendFigures `json:"backends"`
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Backends) != 2 || rep.Backends[0].Backend != "badger" || rep.Backends[1].Backend != "postgres" {
		t.Fatalf("backends %+v", rep.Backends)
	}
	for _, f := range rep.Backends {
		if f.IngestMsgsPerS <= 0 || f.DiskBytesPerMsg <= 0 || f.CompactS <= 0 {
			t.Errorf("%s: ingest %v msgs/s, disk %v B/msg, compaction %v s", f.Backend, f.IngestMsgsPerS, f.DiskBytesPerMsg, f.CompactS)
		}
		if f.CompactTokens[1] >= f.CompactTokens[0] || f.CompactTokens[0] == 0 {
			t.Errorf("%s: compaction tokens %v: not reduced", f.Backend, f.CompactTokens)
		}
		for _, n := range []string{"300", "600"} {
			a, ar, r := f.Assemble, f.AssembleRecall, f.Recall
			if !(a.P50Ms[n] > 0 && a.P99Ms[n] >= a.P50Ms[n] && r.P99Ms[n] >= r.P50Ms[n] && r.P50Ms[n] > 0) {
				t.Errorf("%s at %s: assemble %v/%v, recall %v/%v ms", f.Backend, n, a.P50Ms[n], a.P99Ms[n], r.P50Ms[n], r.P99Ms[n])
			}
			if !(ar.P50Ms[n] > 0 && ar.P99Ms[n] >= ar.P50Ms[n]) {
				t.Errorf("%s at %s: assemble with recall %v/%v ms", f.Backend, n, ar.P50Ms[n], ar.P99Ms[n])
			}
			// The prompts name turns of the history: recall finds some.
			if f.RecallBlocks[n] <= 0 {
				t.Errorf("%s at %s: no assemble with a prompt carried a recall block", f.Backend, n)
			}
		}
		if f.WritersMsgsPerS["1"] <= 0 {
			t.Errorf("%s: one writer process: %v msgs/s", f.Backend, f.WritersMsgsPerS)
		}
	}
	if rep.Backends[1].WritersMsgsPerS["2"] <= 0 {
		t.Errorf("postgres: two writer processes: %v", rep.Backends[1].WritersMsgsPerS)
	}
	if _, ok := rep.Backends[0].WritersMsgsPerS["2"]; ok {
		t.Errorf("badger reports two writer processes on one store")
	}
	// Every database the run made is gone.
	ctx := t.Context()
	conn, err := pgxConnect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var left int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname LIKE 'lbench_%'").Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d lbench_ databases left behind", left)
	}
}

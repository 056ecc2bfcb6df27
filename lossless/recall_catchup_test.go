package lossless

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/pgstore"
)

// openPG opens an engine on the PostgreSQL database at url, as package
// lossless/postgres does (the store and its recall), its configuration
// changed by mutate.
func openPG(ctx context.Context, url string, mutate ...func(*config.Config)) (*Engine, error) {
	return openPGHooked(ctx, url, testHooks{}, mutate...)
}

// openPGHooked is openPG with the tests' seams h.
func openPGHooked(ctx context.Context, url string, h testHooks, mutate ...func(*config.Config)) (*Engine, error) {
	cfg := testConfig("")
	cfg.StoreURL = url
	for _, f := range mutate {
		f(&cfg)
	}
	st, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		return nil, err
	}
	rec, err := pgstore.OpenRecall(ctx, st.Pool(), pgstore.RecallOptions{})
	if err != nil {
		st.Close()
		return nil, err
	}
	return openStoreHooked(ctx, cfg, h, st, rec)
}

// catchUpText is the text of message i of the catch-up tests: one rare
// term (its number) for recall to find it by.
func catchUpText(session string, i int) string {
	return fmt.Sprintf("in %s we settled order %d for the warehouse", session, 70_000+i)
}

// TestRecallCatchUpChild is the child of TestRecallCatchUpAfterKill: it
// opens the database, says "ready", waits for a line on stdin, ingests
// batches into two sessions (acknowledging each message as "ack <session>
// <i>"), says "done", and waits to be killed.
func TestRecallCatchUpChild(t *testing.T) {
	url := os.Getenv("LOSSLESS_CATCHUP_URL")
	if url == "" {
		t.Skip("child of TestRecallCatchUpAfterKill only")
	}
	ctx := context.Background()
	e, err := openPG(ctx, url)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	if err := e.WaitRecallIndex(ctx); err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		os.Exit(3)
	}
	for _, session := range []string{"killed-1", "killed-2"} {
		for b := 0; b < 3; b++ {
			var msgs []core.Message
			for i := b * 10; i < b*10+10; i++ {
				msgs = append(msgs, core.UserText(catchUpText(session, i), int64(1_700_000_000_000+i)))
			}
			if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: session, Messages: msgs}); err != nil {
				fmt.Println("error:", err)
				os.Exit(4)
			}
			for i := b * 10; i < b*10+10; i++ {
				fmt.Printf("ack %s %d\n", session, i)
			}
		}
	}
	// A compaction of killed-2: its summaries' docs are queued (held back
	// too), and no mark tracks them.
	res, err := e.Compact(ctx, core.CompactParams{SessionID: "killed-2", TokenBudget: 120, Force: true})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(4)
	}
	if res.Result != nil {
		var d orchestrate.CompactDetails
		if err := json.Unmarshal(res.Result.Details, &d); err != nil {
			fmt.Println("error:", err)
			os.Exit(4)
		}
		for _, id := range d.NewSummaryIDs {
			fmt.Printf("summary %s\n", id)
		}
	}
	fmt.Println("done")
	select {}
}

// TestRecallCatchUpAfterKill: a process SIGKILLed with the recall docs of
// messages it acknowledged still queued (its recall writes held back by a
// lock on the recall's stats row) leaves those messages out of recall
// until another engine catches up: one running already, once it writes
// to one of the conversations (the gap its write finds), and one opened
// afterwards, for every conversation (at open). Each acknowledged message
// is then indexed once, and found by recall.
func TestRecallCatchUpAfterKill(t *testing.T) {
	if os.Getenv("LOSSLESS_CATCHUP_URL") != "" {
		t.Skip("in the child")
	}
	url := pgtest.NewDB(t)
	ctx := context.Background()
	fastCatchUp := testHooks{catchUpEvery: 100 * time.Millisecond}
	running, err := openPGHooked(ctx, url, fastCatchUp)
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestRecallCatchUpChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), "LOSSLESS_CATCHUP_URL="+url)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the child exited")
			}
			return l
		case <-time.After(60 * time.Second):
			t.Fatal("the child said nothing for 60 s")
		}
		return ""
	}
	if l := next(); l != "ready" {
		t.Fatalf("child: %s", l)
	}
	// Hold every recall write back: they all lock the stats row first.
	hold, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close(ctx)
	tx, err := hold.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM recall_stats WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	acked := map[string][]int{}
	var summaries []string // of killed-2
	for l := next(); l != "done"; l = next() {
		if id, ok := strings.CutPrefix(l, "summary "); ok {
			summaries = append(summaries, id)
			continue
		}
		var s string
		var i int
		if _, err := fmt.Sscanf(l, "ack %s %d", &s, &i); err != nil {
			t.Fatalf("child: %s", l)
		}
		acked[s] = append(acked[s], i)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The killed process's connections are closed, as its death closes
	// them (a backend waiting for the held lock would only notice once
	// it got it, then commit what was sent before the kill).
	if _, err := tx.Exec(ctx, `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if len(acked["killed-1"]) != 30 || len(acked["killed-2"]) != 30 {
		t.Fatalf("acknowledged %d and %d messages, want 30 each", len(acked["killed-1"]), len(acked["killed-2"]))
	}
	if len(summaries) == 0 {
		t.Fatal("the child's compaction of killed-2 made no summary")
	}
	convOf := func(session string) convID {
		t.Helper()
		var c convID
		if err := running.st.View(ctx, func(r store.Reader) error {
			var ok bool
			var err error
			if c, ok, err = convByName(r, store.Name{Agent: "main", Kind: store.NameSessionID, Value: session}); err == nil && !ok {
				err = fmt.Errorf("no conversation of session %s", session)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return c
	}
	docs := func(session string) int {
		t.Helper()
		var n int
		if err := hold.QueryRow(ctx, `SELECT count(*) FROM recall_docs WHERE conversation = $1`, convOf(session).String()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := docs("killed-1") + docs("killed-2"); n != 0 {
		t.Fatalf("%d docs of the killed process written before it was killed (its writes were held back)", n)
	}
	// Message i of a session is its seq i+1.
	found := func(e *Engine, session string, i int) bool {
		t.Helper()
		items, err := e.Recall(ctx, core.AssembleParams{SessionID: "asker", Prompt: fmt.Sprintf("which warehouse order was %d?", 70_000+i)}, 8)
		if err != nil {
			t.Fatal(err)
		}
		want := messageDocID(convOf(session), uint64(i+1))
		for _, it := range items {
			if !it.Neighbour && it.ID == want {
				return true
			}
		}
		return false
	}

	// The running engine writes to killed-1: its write finds the gap, and
	// its next catch-up indexes what the killed process left.
	if _, err := running.Ingest(ctx, core.IngestParams{SessionID: "killed-1", Message: core.UserText(catchUpText("killed-1", 30), 1_700_000_000_030)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for docs("killed-1") < 31 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := docs("killed-1"); n != 31 {
		t.Fatalf("killed-1: %d docs 30 s after a write found the gap, want 31", n)
	}
	for _, i := range []int{0, 14, 29, 30} {
		if !found(running, "killed-1", i) {
			t.Errorf("killed-1 message %d not recalled by the running engine", i)
		}
	}
	if n := docs("killed-2"); n != 0 {
		t.Errorf("killed-2: %d docs before any engine looked at it", n)
	}

	// An engine opened now catches up every conversation.
	opened, err := openPGHooked(ctx, url, fastCatchUp)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	if err := opened.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if n := docs("killed-2"); n != 30+len(summaries) {
		t.Fatalf("killed-2: %d docs after an engine opened, want 30 messages and %d summaries", n, len(summaries))
	}
	for _, id := range summaries {
		var text string
		if err := hold.QueryRow(ctx, `SELECT text FROM recall_docs WHERE id = $1`, summaryDocID(convOf("killed-2"), id)).Scan(&text); err != nil {
			t.Errorf("killed-2's summary %s: its doc after an engine opened: %v", id, err)
		} else if text == "" {
			t.Errorf("killed-2's summary %s: its doc has no text", id)
		}
	}
	for _, i := range acked["killed-2"] {
		if !found(opened, "killed-2", i) {
			t.Errorf("killed-2 message %d not recalled by the engine opened after the kill", i)
		}
	}
	var dups, postings, lexemes int64
	if err := hold.QueryRow(ctx, `SELECT (SELECT count(*) - count(DISTINCT id) FROM recall_docs),
		(SELECT coalesce(sum(cardinality(docs)), 0) FROM recall_blocks),
		(SELECT coalesce(sum(length(text_tsv) + length(ctx_tsv)), 0) FROM recall_docs)`).Scan(&dups, &postings, &lexemes); err != nil {
		t.Fatal(err)
	}
	if dups != 0 || postings != lexemes {
		t.Errorf("%d doubled docs, %d postings for %d terms of docs", dups, postings, lexemes)
	}
}

package lossless

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/synth"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
)

// tailRaw returns the raw bytes of the context's messages after its last
// summary.
func tailRaw(t testing.TB, conv *Conversation) [][]byte {
	t.Helper()
	ctx := context.Background()
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, it := range items {
		if it.IsSummary() {
			out = out[:0]
			continue
		}
		m, err := conv.Message(ctx, it.Ref.Seq)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m.Raw())
	}
	return out
}

func checkConvDAG(t testing.TB, e *Engine, session string) {
	t.Helper()
	conv, err := e.Conversation(context.Background(), "", session)
	if err != nil {
		t.Fatal(err)
	}
	if err := dag.Check(context.Background(), conv, allSeqs(t, e, "", session)); err != nil {
		t.Fatal(err)
	}
}

func TestRotate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "first.jsonl")
	info, err := synth.WriteSessionFile(path, 7, 300)
	if err != nil {
		t.Fatal(err)
	}
	e := openTest(t, func(c *config.Config) { c.RotateBytes = info.Bytes; c.FreshTailMessages = 10 })
	if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: info.ID, SessionFile: path}); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)
	stored := countMessages(t, e)

	res, err := e.Compact(ctx, core.CompactParams{SessionID: info.ID, SessionFile: path, TokenBudget: 30000})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Result
	if !res.OK || r == nil || r.SessionID == "" || r.SessionID == info.ID || r.SessionFile != filepath.Join(dir, r.SessionID+".jsonl") {
		t.Fatalf("no rotation: %+v %+v", res, r)
	}
	var target map[string]string
	if err := json.Unmarshal(r.SessionTarget, &target); err != nil || target["sessionId"] != r.SessionID || target["sessionFile"] != r.SessionFile {
		t.Fatalf("sessionTarget %s: %v", r.SessionTarget, err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, old) {
		t.Fatal("the old transcript changed")
	}
	tr, err := core.ReadTranscript(r.SessionFile)
	if err != nil {
		t.Fatal(err)
	}
	if h := tr.Header; h == nil || h.Version != core.CurrentTranscriptVersion || h.ID != r.SessionID || h.ParentSession != path || len(tr.Malformed) != 0 {
		t.Fatalf("successor header %+v, malformed %v", tr.Header, tr.Malformed)
	}
	comp := tr.Entries[0]
	if comp.Type != core.EntryCompaction || comp.Summary == "" || comp.FirstKeptEntryID != tr.Entries[1].ID || comp.FirstKeptEntryID != r.FirstKeptEntryID || comp.TokensBefore != r.TokensBefore {
		t.Fatalf("compaction entry %+v", comp)
	}
	conv, err := e.Conversation(ctx, "", info.ID)
	if err != nil {
		t.Fatal(err)
	}
	win := tr.Window()
	msgs := win.Messages()
	if len(msgs) == 0 || msgs[0].Role() != core.RoleCompactionSummary {
		t.Fatalf("successor window does not start with the summary")
	}
	tail := tailRaw(t, conv)
	if len(msgs)-1 != len(tail) || len(tail) == 0 {
		t.Fatalf("successor keeps %d messages, the context's tail has %d", len(msgs)-1, len(tail))
	}
	for i, m := range msgs[1:] {
		if !bytes.Equal(m.Raw(), tail[i]) {
			for k := range tail {
				t.Logf("tail %d: %.100s", k, tail[k])
			}
			for k, mm := range msgs {
				t.Logf("win %d: %.100s", k, mm.Raw())
			}
			t.Fatalf("kept message %d differs from the stored tail", i)
		}
	}
	// The new id names the same conversation; the next turn works.
	conv2, err := e.Conversation(ctx, "", r.SessionID)
	if err != nil || conv2.ID() != conv.ID() {
		t.Fatalf("new session id maps to %v (%v), want %s", conv2, err, conv.ID())
	}
	itemsBefore, _ := conv.Items(ctx)
	if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: r.SessionID, SessionFile: r.SessionFile}); err != nil {
		t.Fatal(err)
	}
	if n := countMessages(t, e); n != stored {
		t.Fatalf("bootstrapping the successor changed the stored messages: %d -> %d", stored, n)
	}
	// The successor's compaction entry is not re-imported as a summary over
	// the kept tail: the context is unchanged.
	if itemsAfter, _ := conv.Items(ctx); len(itemsAfter) != len(itemsBefore) || itemsAfter[len(itemsAfter)-1] != itemsBefore[len(itemsBefore)-1] {
		t.Fatalf("bootstrapping the successor changed the context: %d items -> %d", len(itemsBefore), len(itemsAfter))
	}
	// What the host appends to the successor is imported.
	appended := core.AssistantText("appended by the host to the successor", 1_899_000_000_000)
	if err := core.AppendTranscript(r.SessionFile, map[string]any{"type": "message", "id": "host0001", "parentId": tr.Entries[len(tr.Entries)-1].ID,
		"timestamp": core.NowTimestamp(), "message": json.RawMessage(appended.Raw())}); err != nil {
		t.Fatal(err)
	}
	if br, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: r.SessionID, SessionFile: r.SessionFile}); err != nil || br.ImportedMessages != 1 {
		t.Fatalf("bootstrap after an append to the successor: %+v %v", br, err)
	}
	stored++
	next := core.UserText("first message of the new session", 1_900_000_000_000)
	if ir, err := e.Ingest(ctx, core.IngestParams{SessionID: r.SessionID, Message: next}); err != nil || !ir.Ingested {
		t.Fatalf("ingest on the new session: %+v %v", ir, err)
	}
	a, err := e.Assemble(ctx, core.AssembleParams{SessionID: r.SessionID, TokenBudget: 30000})
	if err != nil || len(a.Messages) == 0 || !bytes.Equal(a.Messages[len(a.Messages)-1].Raw(), next.Raw()) {
		t.Fatalf("assemble on the new session: %v", err)
	}
	if n := countMessages(t, e); n != stored+1 {
		t.Fatalf("stored messages after the successor's append and a new message: %d, want %d", n, stored+1)
	}
	checkConvDAG(t, e, info.ID)
	// A rotated session rotates again on request.
	rot, err := e.Rotate(ctx, orchestrate.RotateParams{SessionID: r.SessionID, SessionFile: r.SessionFile, TokenBudget: 30000})
	if err != nil {
		t.Fatal(err)
	}
	tr3, err := core.ReadTranscript(rot.SessionFile)
	if err != nil || tr3.Header.ParentSession != r.SessionFile {
		t.Fatalf("second rotation: %+v %v", tr3, err)
	}
}

// TestRotateCrashChild is the child of TestRotateCrash: it appends turns to
// the current transcript, ingests them, and rotates, printing "rotated
// <id> <file>" after each acknowledged rotation, until killed.
func TestRotateCrashChild(t *testing.T) {
	dir := os.Getenv("LOSSLESS_ROTATE_DIR")
	if dir == "" {
		t.Skip("child of TestRotateCrash only")
	}
	sid, file := os.Getenv("LOSSLESS_ROTATE_SID"), os.Getenv("LOSSLESS_ROTATE_FILE")
	round, _ := strconv.Atoi(os.Getenv("LOSSLESS_ROTATE_ROUND"))
	cfg := testConfig(filepath.Join(dir, "store"))
	cfg.FreshTailMessages = 6
	e, err := Open(context.Background(), cfg)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	ctx := context.Background()
	if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: sid, SessionFile: file}); err != nil {
		fmt.Println("bootstrap error:", err)
		os.Exit(4)
	}
	fmt.Println("ready")
	rc := &core.RuntimeContext{Values: map[string]json.RawMessage{orchestrate.RuntimeContextRotate: json.RawMessage("true")}}
	for turn := 0; ; turn++ {
		var lines []any
		var msgs []core.Message
		for i := 0; i < 6; i++ {
			m := core.UserText(fmt.Sprintf("round %d turn %d message %d %s", round, turn, i, strings.Repeat("words ", 40)), int64(2_000_000_000_000+round*1_000_000+turn*10+i))
			if i%2 == 1 {
				m = core.AssistantText(fmt.Sprintf("answer round %d turn %d %d %s", round, turn, i, strings.Repeat("reply ", 30)), int64(2_000_000_000_000+round*1_000_000+turn*10+i))
			}
			msgs = append(msgs, m)
			lines = append(lines, map[string]any{"type": "message", "id": core.NewEntryID(), "timestamp": core.NowTimestamp(), "message": json.RawMessage(m.Raw())})
		}
		if err := core.AppendTranscript(file, lines...); err != nil {
			fmt.Println("append error:", err)
			os.Exit(5)
		}
		if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: sid, Messages: msgs}); err != nil {
			fmt.Println("ingest error:", err)
			os.Exit(6)
		}
		res, err := e.Compact(ctx, core.CompactParams{SessionID: sid, SessionFile: file, TokenBudget: 4000, RuntimeContext: rc})
		if err != nil || res.Result == nil || res.Result.SessionID == "" {
			fmt.Println("compact error:", err, res.Reason)
			os.Exit(7)
		}
		sid, file = res.Result.SessionID, res.Result.SessionFile
		fmt.Printf("rotated %s %s\n", sid, file)
	}
}

// TestRotateCrash SIGKILLs a child while it appends, ingests and rotates,
// then reopens: every transcript parses, the original is untouched, every
// session id the store maps has its file, every message of every file is
// in the store after a bootstrap, and the DAG invariants hold. Rounds:
// $LOSSLESS_ROTATE_ROUNDS (default 2).
func TestRotateCrash(t *testing.T) {
	if os.Getenv("LOSSLESS_ROTATE_DIR") != "" {
		t.Skip("in the child")
	}
	rounds := 2
	if v, err := strconv.Atoi(os.Getenv("LOSSLESS_ROTATE_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	if testing.Short() {
		rounds = 1
	}
	dir := t.TempDir()
	first := filepath.Join(dir, "origin.jsonl")
	info, err := synth.WriteSessionFile(first, 11, 200)
	if err != nil {
		t.Fatal(err)
	}
	frozen := map[string][32]byte{} // files rotated away from: never written again
	sid, file := info.ID, first
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	rotations := 0
	for r := 0; r < rounds; r++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRotateCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), "LOSSLESS_ROTATE_DIR="+dir, "LOSSLESS_ROTATE_SID="+sid,
			"LOSSLESS_ROTATE_FILE="+file, fmt.Sprintf("LOSSLESS_ROTATE_ROUND=%d", r))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 64)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		var killAt <-chan time.Time
		roundStart := rotations
		deadline := time.After(60 * time.Second)
	loop:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break loop
				}
				switch {
				case l == "ready":
					// Fallback when rotations are slow (-race, a loaded machine).
					killAt = time.After(20 * time.Second)
				case strings.HasPrefix(l, "rotated "):
					f := strings.Fields(l)
					frozen[file] = fileSum(t, file)
					sid, file = f[1], f[2]
					if rotations++; rotations == roundStart+1 {
						// Kill somewhere in the next cycles: mid-append,
						// mid-ingest, mid-compaction or mid-rotation.
						killAt = time.After(time.Duration(rng.Intn(1500)) * time.Millisecond)
					}
				default:
					_ = cmd.Process.Signal(syscall.SIGKILL)
					t.Fatalf("child: %s", l)
				}
			case <-killAt:
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killAt = nil
			case <-deadline:
				_ = cmd.Process.Signal(syscall.SIGKILL)
				t.Fatal("child did not finish in 60s")
			}
		}
		_ = cmd.Wait()
		verifyRotations(t, dir, first, frozen, info.ID)
	}
	t.Logf("%d rounds, %d acknowledged rotations", rounds, rotations)
}

func fileSum(t testing.TB, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func verifyRotations(t *testing.T, dir, first string, frozen map[string][32]byte, origID string) {
	t.Helper()
	ctx := context.Background()
	cfg := testConfig(filepath.Join(dir, "store"))
	e, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer e.Close()
	if err := checkInvariants(e); err != nil {
		t.Fatal(err)
	}
	for p, sum := range frozen {
		if fileSum(t, p) != sum {
			t.Fatalf("%s changed after it was rotated away from", p)
		}
	}
	conv, err := e.Conversation(ctx, "", origID)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := e.Sessions(ctx, "")
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions %+v %v (want the one conversation)", infos, err)
	}
	files := map[string]string{origID: first}
	for _, id := range infos[0].SessionIDs {
		if id == origID {
			continue
		}
		p := filepath.Join(dir, id+".jsonl")
		tr, err := core.ReadTranscript(p)
		if err != nil {
			t.Fatalf("session %s is mapped but its transcript is missing: %v", id, err)
		}
		if tr.Header == nil || tr.Header.ID != id || tr.Header.ParentSession == "" || len(tr.Malformed) != 0 {
			t.Fatalf("transcript %s: header %+v, malformed %v", p, tr.Header, tr.Malformed)
		}
		files[id] = p
	}
	// Successor files the store never mapped (a kill between write and
	// map) are harmless; they must still parse.
	all, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, p := range all {
		if _, err := core.ReadTranscript(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	// Bootstrapping every mapped session loses nothing: each file's
	// messages are all stored.
	for id, p := range files {
		if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: id, SessionFile: p}); err != nil {
			t.Fatalf("bootstrap %s: %v", id, err)
		}
	}
	have := map[string]bool{}
	for _, raw := range storedMessages(t, e, "", origID) {
		have[string(raw)] = true
	}
	for id, p := range files {
		for _, raw := range fileMessages(t, p) {
			if !have[string(raw)] {
				t.Fatalf("a message of %s (%s) is not stored: %.80s", id, p, raw)
			}
		}
	}
	if err := dag.Check(ctx, conv, allSeqs(t, e, "", origID)); err != nil {
		t.Fatal(err)
	}
}

// TestRotateImportsFirst: messages in the transcript that the store lacks
// (their afterTurn failed) are imported before the rotation, so none is
// hidden behind the successor's checkpoint.
func TestRotateImportsFirst(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "first.jsonl")
	info, err := synth.WriteSessionFile(path, 7, 300)
	if err != nil {
		t.Fatal(err)
	}
	e := openTest(t, func(c *config.Config) { c.RotateBytes = info.Bytes; c.FreshTailMessages = 10 })
	if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: info.ID, SessionFile: path}); err != nil {
		t.Fatal(err)
	}
	// A turn the host wrote whose afterTurn never reached the engine.
	var lost []core.Message
	var lines [][]byte
	for i := 0; i < 3; i++ {
		m := core.UserText(fmt.Sprintf("turn that failed to ingest %d", i), int64(1_800_000_000_000+i))
		lost = append(lost, m)
		lines = append(lines, []byte(fmt.Sprintf(`{"type":"message","id":"lost%d","message":%s}`, i, m.Raw())))
	}
	writeLines(t, path, lines, true)
	res, err := e.Compact(ctx, core.CompactParams{SessionID: info.ID, SessionFile: path, TokenBudget: 30000})
	if err != nil || res.Result == nil || res.Result.SessionFile == "" {
		t.Fatalf("compact: %+v %v", res, err)
	}
	stored := map[string]bool{}
	for _, raw := range storedMessages(t, e, "", info.ID) {
		stored[string(raw)] = true
	}
	for i, m := range lost {
		if !stored[string(m.Raw())] {
			t.Fatalf("message %d of the failed turn is not stored after rotation", i)
		}
	}
}

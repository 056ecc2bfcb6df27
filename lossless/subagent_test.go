package lossless

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/orchestrate"
	"github.com/lossless-engine/contextengine/lossless/tools"
	"github.com/lossless-engine/contextengine/store"
)

const (
	parentKey = "agent:main:main"
	childKey  = "agent:main:subagent:c1"
)

// parentMsgs ingests n messages (user/assistant pairs) into the parent
// session and returns them.
func ingestParent(t testing.TB, e *Engine, from, n int) []core.Message {
	t.Helper()
	var msgs []core.Message
	for i := from; i < from+n; i++ {
		ts := int64(1_700_000_000_000 + i*1000)
		if i%2 == 0 {
			msgs = append(msgs, core.UserText(fmt.Sprintf("parent question %d about the zebra-%d project", i, i), ts))
		} else {
			msgs = append(msgs, core.AssistantText(fmt.Sprintf("parent answer %d", i), ts))
		}
	}
	if _, err := e.IngestBatch(context.Background(), core.IngestBatchParams{SessionID: "parent", SessionKey: parentKey, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	return msgs
}

func rawsOf(msgs []core.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Raw())
	}
	return out
}

func assembleChild(t testing.TB, e *Engine, budget int, host ...core.Message) core.AssembleResult {
	t.Helper()
	res, err := e.Assemble(context.Background(), core.AssembleParams{SessionID: "child", SessionKey: childKey,
		TokenBudget: budget, Messages: host})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The kinds of subagent records subKeys counts (named after their
// badgerstore key prefixes).
const (
	pSub      = 'G' // subagent records
	pSubAlias = 'g' // child session id -> subagent
	pForkItem = 'Y' // fork snapshot items
	pSubLink  = 'K' // parent -> ended child links
)

// subKeys counts the store's subagent records of each kind, through the
// store interface: records, fork items of every snapshot (orphans
// included), links of every conversation, and aliases of every subagent's
// child session id and of every session id a conversation has had.
func subKeys(t testing.TB, e *Engine) map[byte]int {
	t.Helper()
	out := map[byte]int{}
	err := e.st.View(context.Background(), func(r store.Reader) error {
		type alias struct{ agent, id string }
		ids := map[alias]bool{}
		for rec, err := range r.Subagents() {
			if err != nil {
				return err
			}
			out[pSub]++
			if rec.ChildSessionID != "" {
				ids[alias{rec.Agent, rec.ChildSessionID}] = true
			}
		}
		for n, err := range r.Names() {
			if err != nil {
				return err
			}
			if n.Kind == store.NameSessionID {
				ids[alias{n.Agent, n.Value}] = true
			}
		}
		for a := range ids {
			_, err := r.SubagentByChild(a.agent, a.id)
			if err == nil {
				out[pSubAlias]++
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		for s, err := range r.ForkSnapshots() {
			if err != nil {
				return err
			}
			for _, err := range r.ForkItems(s) {
				if err != nil {
					return err
				}
				out[pForkItem]++
			}
		}
		for c, err := range r.Conversations() {
			if err != nil {
				return err
			}
			for _, err := range r.SubagentLinks(c.ID) {
				if err != nil {
					return err
				}
				out[pSubLink]++
			}
		}
		for k, n := range out {
			if n == 0 {
				delete(out, k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// parentState is everything stored of the parent: items and messages.
func parentState(t testing.TB, e *Engine) string {
	t.Helper()
	ctx := context.Background()
	conv, err := e.ConversationFor(ctx, "", "parent", parentKey)
	if err != nil {
		t.Fatal(err)
	}
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%+v\n", items)
	for _, r := range storedMessages(t, e, "", "parent") {
		sb.Write(r)
		sb.WriteByte('\n')
	}
	return sb.String()
}

func TestSubagentFork(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	before := ingestParent(t, e, 0, 10)
	state := parentState(t, e)
	prep, err := e.PrepareSubagentSpawn(ctx, core.SubagentSpawnParams{ParentSessionKey: parentKey, ParentSessionID: "parent",
		ChildSessionKey: childKey, ChildSessionID: "child", ContextMode: core.ContextModeFork})
	if err != nil || prep == nil || prep.Rollback == nil {
		t.Fatalf("prepare: %v %v", prep, err)
	}
	if got := parentState(t, e); got != state {
		t.Fatal("preparing a fork changed the parent")
	}
	// The parent goes on after the spawn: the child does not see it.
	ingestParent(t, e, 10, 4)

	// Before the child stored anything: the parent's context at the spawn,
	// then the host's messages for the child.
	task := core.UserText("child task: summarise the zebra project", 1_800_000_000_000)
	res := assembleChild(t, e, 100000, task)
	want := append(rawsOf(before), string(task.Raw()))
	if got := rawsOf(res.Messages); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("child context:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if res.EstimatedTokens != core.CountMessages(e.tc, res.Messages) {
		t.Fatalf("estimate %d, messages count %d", res.EstimatedTokens, core.CountMessages(e.tc, res.Messages))
	}

	// The child's own messages are stored under the child, not the parent.
	own := []core.Message{task, core.AssistantText("the zebra project is about stripes", 1_800_000_000_001)}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "child", SessionKey: childKey, Messages: own}); err != nil {
		t.Fatal(err)
	}
	if got := storedMessages(t, e, "", "child"); len(got) != 2 {
		t.Fatalf("child stores %d messages, want its own 2", len(got))
	}
	if got := storedMessages(t, e, "", "parent"); len(got) != 14 {
		t.Fatalf("parent stores %d messages, want 14", len(got))
	}
	res = assembleChild(t, e, 100000)
	want = append(rawsOf(before), rawsOf(own)...)
	if got := rawsOf(res.Messages); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("child context after its turn:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A compaction of the parent after the spawn does not change the
	// child's view: the snapshot references the parent's messages, which
	// compaction never deletes.
	if _, err := e.Compact(ctx, core.CompactParams{SessionID: "parent", SessionKey: parentKey, TokenBudget: 60, Force: true}); err != nil {
		t.Fatal(err)
	}
	if res2 := assembleChild(t, e, 100000); strings.Join(rawsOf(res2.Messages), "\n") != strings.Join(want, "\n") {
		t.Fatal("the parent's compaction changed the child's context")
	}

	// A small budget keeps the child's own messages and the newest of the
	// parent's that fit.
	ownTok := core.CountMessages(e.tc, own)
	lastTok := core.CountMessage(e.tc, before[9])
	res = assembleChild(t, e, ownTok+lastTok)
	if got := rawsOf(res.Messages); len(got) != 3 || got[0] != string(before[9].Raw()) {
		t.Fatalf("small budget: %q", got)
	}
	if res.EstimatedTokens > ownTok+lastTok {
		t.Fatalf("estimate %d over the budget %d", res.EstimatedTokens, ownTok+lastTok)
	}
	info, ok, err := e.Subagent(ctx, childKey)
	if err != nil || !ok || info.State != SubagentActive || info.SnapshotItems != 10 || info.ParentConv == "" {
		t.Fatalf("record %+v %v %v", info, ok, err)
	}
}

func TestSubagentIsolated(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	ingestParent(t, e, 0, 6)
	if _, err := e.PrepareSubagentSpawn(ctx, core.SubagentSpawnParams{ParentSessionKey: parentKey, ParentSessionID: "parent",
		ChildSessionKey: childKey, ContextMode: core.ContextModeIsolated}); err != nil {
		t.Fatal(err)
	}
	task := core.UserText("isolated task", 1)
	res := assembleChild(t, e, 100000, task)
	if got := rawsOf(res.Messages); len(got) != 1 || got[0] != string(task.Raw()) {
		t.Fatalf("isolated child sees %q", got)
	}
	if k := subKeys(t, e); k[pForkItem] != 0 || k[pSub] != 1 {
		t.Fatalf("keys %v", k)
	}
	// The door refuses what lossless/internal/subagent's CheckSpawn
	// refuses (TestCheckSpawnRefusesBadParams: the cases), as ErrBadParams.
	if _, err := e.PrepareSubagentSpawn(ctx, core.SubagentSpawnParams{ChildSessionKey: "agent:main:subagent:x", ContextMode: "clone"}); !errors.Is(err, ErrBadParams) {
		t.Fatalf("unknown mode: %v", err)
	}
}

func TestSubagentEnded(t *testing.T) {
	for _, reason := range []string{core.SubagentDeleted, core.SubagentSwept, core.SubagentCompleted, core.SubagentReleased} {
		t.Run(reason, func(t *testing.T) {
			ctx := context.Background()
			e := openTest(t, func(c *config.Config) { c.LargeContentTokens = 200 })
			ingestParent(t, e, 0, 6)
			if _, err := e.PrepareSubagentSpawn(ctx, core.SubagentSpawnParams{ParentSessionKey: parentKey, ParentSessionID: "parent",
				ChildSessionKey: childKey, ChildSessionID: "child", ContextMode: core.ContextModeFork}); err != nil {
				t.Fatal(err)
			}
			big := core.ToolResult("call_1", "read", "quokka-report "+strings.Repeat("line of the quokka report\n", 80), false, 5)
			own := []core.Message{core.UserText("find the okapi-7731 marker", 3),
				core.AssistantToolCall("call_1", "read", map[string]any{"path": "report.txt"}, 4), big}
			if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "child", SessionKey: childKey, Messages: own}); err != nil {
				t.Fatal(err)
			}
			state := parentState(t, e)
			if err := e.OnSubagentEnded(ctx, core.SubagentEndedParams{ChildSessionKey: childKey, Reason: reason}); err != nil {
				t.Fatal(err)
			}
			if got := parentState(t, e); got != state {
				t.Fatal("the end of a subagent changed the parent")
			}
			// The child's own history is kept in every case.
			if got := storedMessages(t, e, "", "child"); len(got) != 3 {
				t.Fatalf("child has %d messages", len(got))
			}
			hits, err := e.Grep(ctx, tools.GrepParams{SessionID: "parent", SessionKey: parentKey, Query: "okapi-7731"})
			if err != nil {
				t.Fatal(err)
			}
			largeID := LargeRefPrefix + hashHex(big)
			page, expErr := e.ExpandSummary(ctx, tools.ExpandParams{SessionID: "parent", SessionKey: parentKey, ID: largeID})
			keys := subKeys(t, e)
			switch reason {
			case core.SubagentDeleted, core.SubagentSwept:
				if keys[pSub]+keys[pSubAlias]+keys[pForkItem]+keys[pSubLink] != 0 {
					t.Fatalf("prepared state left: %v", keys)
				}
				if len(hits) != 0 || expErr == nil {
					t.Fatalf("a %s child is still linked: %d hits, expand %v", reason, len(hits), expErr)
				}
				// The child no longer gets the parent's context.
				if res := assembleChild(t, e, 100000); len(res.Messages) != 3 { // its own three
					t.Fatalf("%s child assembles %d messages", reason, len(res.Messages))
				}
			default:
				info, ok, err := e.Subagent(ctx, childKey)
				if err != nil || !ok || info.State != SubagentEnded || info.EndReason != reason {
					t.Fatalf("record %+v %v %v", info, ok, err)
				}
				if keys[pSubLink] != 1 {
					t.Fatalf("no link: %v", keys)
				}
				if len(hits) != 1 || hits[0].Kind != "message" {
					t.Fatalf("parent grep: %+v", hits)
				}
				if expErr != nil || len(page.Messages) != 1 || string(page.Messages[0].Message.Raw()) != string(big.Raw()) {
					t.Fatalf("parent expand of the child's large content: %v %+v", expErr, page)
				}
				kids, err := e.LinkedChildren(ctx, "parent", parentKey)
				if err != nil || len(kids) != 1 {
					t.Fatalf("linked children %v %v", kids, err)
				}
			}
			// Ending again is harmless.
			if err := e.OnSubagentEnded(ctx, core.SubagentEndedParams{ChildSessionKey: childKey, Reason: reason}); err != nil {
				t.Fatal(err)
			}
		})
	}
	e := openTest(t)
	if err := e.OnSubagentEnded(context.Background(), core.SubagentEndedParams{ChildSessionKey: childKey, Reason: "vanished"}); !errors.Is(err, ErrBadParams) {
		t.Fatalf("unknown reason: %v", err)
	}
	if err := e.OnSubagentEnded(context.Background(), core.SubagentEndedParams{ChildSessionKey: "agent:main:never", Reason: core.SubagentCompleted}); err != nil {
		t.Fatalf("never prepared: %v", err)
	}
}

func hashHex(m core.Message) string {
	h := hashRaw(m.Raw())
	return fmt.Sprintf("%x", h[:])
}

func TestSubagentForkExpandsParentSummary(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	ingestParent(t, e, 0, 40)
	res, err := e.Compact(ctx, core.CompactParams{SessionID: "parent", SessionKey: parentKey, TokenBudget: 200, Force: true})
	if err != nil || !res.Compacted {
		t.Fatalf("compact: %+v %v", res, err)
	}
	if _, err := e.PrepareSubagentSpawn(ctx, core.SubagentSpawnParams{ParentSessionKey: parentKey, ParentSessionID: "parent",
		ChildSessionKey: childKey, ChildSessionID: "child", ContextMode: core.ContextModeFork}); err != nil {
		t.Fatal(err)
	}
	out := assembleChild(t, e, 100000, core.UserText("task", 1))
	if !strings.Contains(out.Messages[0].Text(), "<lcm_summary") {
		t.Fatalf("the child's context does not start with the parent's summary: %s", out.Messages[0].Raw())
	}
	var details orchestrate.CompactDetails
	if err := json.Unmarshal(res.Result.Details, &details); err != nil || len(details.NewSummaryIDs) == 0 {
		t.Fatalf("details %s: %v", res.Result.Details, err)
	}
	// The child can expand the parent's summaries it sees.
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "child", SessionKey: childKey, Messages: []core.Message{core.UserText("task", 1)}}); err != nil {
		t.Fatal(err)
	}
	page, err := e.ExpandSummary(ctx, tools.ExpandParams{SessionID: "child", SessionKey: childKey, ID: details.NewSummaryIDs[0]})
	if err != nil || len(page.Messages) == 0 {
		t.Fatalf("child expands the parent's summary: %v %+v", err, page)
	}
}

func TestSubagentRollback(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	ingestParent(t, e, 0, 8)
	state := parentState(t, e)
	params := core.SubagentSpawnParams{ParentSessionKey: parentKey, ParentSessionID: "parent",
		ChildSessionKey: childKey, ChildSessionID: "child", ContextMode: core.ContextModeFork, TTLMs: 60_000}
	prep, err := e.PrepareSubagentSpawn(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if k := subKeys(t, e); k[pSub] != 1 || k[pSubAlias] != 1 || k[pForkItem] != 8 {
		t.Fatalf("prepared keys %v", k)
	}
	// The launch failed: the host rolls back, twice for good measure.
	for i := 0; i < 2; i++ {
		if err := prep.Rollback(ctx); err != nil {
			t.Fatalf("rollback %d: %v", i, err)
		}
		if k := subKeys(t, e); len(k) != 0 && k[pSub]+k[pSubAlias]+k[pForkItem]+k[pSubLink] != 0 {
			t.Fatalf("rollback %d left %v", i, k)
		}
	}
	if got := parentState(t, e); got != state {
		t.Fatal("prepare+rollback changed the parent")
	}
	if res := assembleChild(t, e, 100000, core.UserText("t", 1)); len(res.Messages) != 1 {
		t.Fatalf("rolled-back child still forks: %d messages", len(res.Messages))
	}
	// A rollback of an older preparation leaves a newer one alone.
	old, err := e.PrepareSubagentSpawn(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.PrepareSubagentSpawn(ctx, params); err != nil {
		t.Fatal(err)
	}
	if err := old.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if k := subKeys(t, e); k[pSub] != 1 || k[pForkItem] != 8 {
		t.Fatalf("an old rollback removed the new preparation: %v", k)
	}
}

func TestSubagentTTL(t *testing.T) {
	ctx := context.Background()
	e := openTest(t)
	ingestParent(t, e, 0, 4)
	prepare := func(key string, ttl int64) {
		t.Helper()
		if _, err := e.PrepareSubagentSpawn(ctx, core.SubagentSpawnParams{ParentSessionKey: parentKey, ParentSessionID: "parent",
			ChildSessionKey: key, ContextMode: core.ContextModeFork, TTLMs: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	prepare("agent:main:subagent:never", 30)   // never starts: swept
	prepare("agent:main:subagent:started", 30) // stores a message in time: kept
	prepare("agent:main:subagent:lazy", 30)    // assembled after expiry: swept on access
	prepare("agent:main:subagent:forever", 0)  // no TTL: kept
	prepare("agent:main:subagent:longlived", 60_000)
	if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "started", SessionKey: "agent:main:subagent:started", Message: core.UserText("hi", 1)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond)
	res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "lazy", SessionKey: "agent:main:subagent:lazy", TokenBudget: 100000,
		Messages: []core.Message{core.UserText("late start", 2)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 {
		t.Fatalf("an expired preparation still forks: %d messages", len(res.Messages))
	}
	if _, ok, _ := e.Subagent(ctx, "agent:main:subagent:lazy"); ok {
		t.Fatal("the expired preparation met on access was not removed")
	}
	n, err := e.SweepSubagents(ctx)
	if err != nil || n != 1 {
		t.Fatalf("sweep removed %d (%v), want 1", n, err)
	}
	for key, want := range map[string]bool{"never": false, "started": true, "forever": true, "longlived": true} {
		if _, ok, _ := e.Subagent(ctx, "agent:main:subagent:"+key); ok != want {
			t.Fatalf("%s: present %v, want %v", key, ok, want)
		}
	}
	if k := subKeys(t, e); k[pForkItem] != 3*4 {
		t.Fatalf("snapshots left %d, want 12", k[pForkItem])
	}
	if n, _ := e.SweepSubagents(ctx); n != 0 {
		t.Fatalf("a second sweep removed %d", n)
	}
	// A snapshot left without a record is swept too: lossless/internal/subagent's
	// TestSweep.
}

// TestSubagentCrashChild is the child of TestSubagentCrash: it prepares a
// fork, prints "prepared", and waits to be killed.
func TestSubagentCrashChild(t *testing.T) {
	dir := os.Getenv("LOSSLESS_SUB_CRASH_DIR")
	if dir == "" {
		t.Skip("child of TestSubagentCrash only")
	}
	ctx := context.Background()
	e, err := Open(ctx, testConfig(dir))
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	var ttl int64
	fmt.Sscan(os.Getenv("LOSSLESS_SUB_CRASH_TTL"), &ttl)
	if _, err := e.PrepareSubagentSpawn(ctx, core.SubagentSpawnParams{ParentSessionKey: parentKey, ParentSessionID: "parent",
		ChildSessionKey: childKey, ChildSessionID: "child", ContextMode: core.ContextModeFork, TTLMs: ttl}); err != nil {
		fmt.Println("error:", err)
		os.Exit(4)
	}
	fmt.Println("prepared")
	select {}
}

// TestSubagentCrash SIGKILLs a process right after PrepareSubagentSpawn
// returned, reopens the store and checks that nothing of the parent
// changed and that the preparation is usable (long TTL) or swept after
// its TTL (short TTL).
func TestSubagentCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	for _, tc := range []struct {
		name string
		ttl  int64
	}{{"usable", 3_600_000}, {"expired", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			e, err := Open(ctx, testConfig(dir))
			if err != nil {
				t.Fatal(err)
			}
			before := ingestParent(t, e, 0, 12)
			state := parentState(t, e)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run", "^TestSubagentCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "LOSSLESS_SUB_CRASH_DIR="+dir, fmt.Sprintf("LOSSLESS_SUB_CRASH_TTL=%d", tc.ttl))
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stdout)
			got := ""
			for sc.Scan() {
				got = sc.Text()
				if got == "prepared" {
					break
				}
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			if got != "prepared" {
				t.Fatalf("child said %q", got)
			}
			time.Sleep(5 * time.Millisecond)
			e, err = Open(ctx, testConfig(dir))
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if err := checkInvariants(e); err != nil {
				t.Fatal(err)
			}
			if s := parentState(t, e); s != state {
				t.Fatal("the parent changed")
			}
			res := assembleChild(t, e, 100000, core.UserText("task", 1))
			switch tc.name {
			case "usable":
				want := append(rawsOf(before), string(core.UserText("task", 1).Raw()))
				if strings.Join(rawsOf(res.Messages), "\n") != strings.Join(want, "\n") {
					t.Fatalf("preparation not usable after the crash: %d messages", len(res.Messages))
				}
			case "expired":
				if len(res.Messages) != 1 {
					t.Fatalf("expired preparation still forks: %d messages", len(res.Messages))
				}
				if k := subKeys(t, e); k[pSub]+k[pSubAlias]+k[pForkItem] != 0 {
					t.Fatalf("expired preparation not swept: %v", k)
				}
			}
		})
	}
}

// TestSubagentRecall: with recall on, a forked child's context has the
// parent's snapshot exactly once (the recall path assembles twice), and a
// completed child's history — committed with CommitTurn — is recalled in
// the parent's session.
func TestSubagentRecall(t *testing.T) {
	ctx := context.Background()
	e := openTest(t, withRecall)
	before := ingestParent(t, e, 0, 6)
	if _, err := e.PrepareSubagentSpawn(ctx, core.SubagentSpawnParams{ParentSessionKey: parentKey, ParentSessionID: "parent",
		ChildSessionKey: childKey, ChildSessionID: "child", ContextMode: core.ContextModeFork}); err != nil {
		t.Fatal(err)
	}
	task := core.UserText("find where the walrus-9 backups are kept", 1_800_000_000_000)
	res, err := e.Assemble(ctx, core.AssembleParams{SessionID: "child", SessionKey: childKey, TokenBudget: 100000,
		Messages: []core.Message{task}, Prompt: "walrus-9 backups"})
	if err != nil {
		t.Fatal(err)
	}
	got := rawsOf(res.Messages)
	if len(got) < 7 || strings.Join(got[:6], "\n") != strings.Join(rawsOf(before), "\n") || got[6] != string(task.Raw()) {
		t.Fatalf("child context with recall on: %d messages\n%s", len(got), strings.Join(got, "\n"))
	}
	turn := []core.Message{task, core.AssistantText("The walrus-9 backups are kept in bucket s3://cold-archive/walrus9, snapshotted nightly.", 1_800_000_000_001)}
	if r, err := e.CommitTurn(ctx, core.CommitTurnParams{AdvancementKey: "child-1", SessionID: "child", SessionKey: childKey, Messages: turn}); err != nil || r.Status != core.CommitCommitted {
		t.Fatalf("commit: %+v %v", r, err)
	}
	if err := e.OnSubagentEnded(ctx, core.SubagentEndedParams{ChildSessionKey: childKey, Reason: core.SubagentCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitRecallIndex(ctx); err != nil {
		t.Fatal(err)
	}
	kids, err := e.LinkedChildren(ctx, "parent", parentKey)
	if err != nil || len(kids) != 1 {
		t.Fatalf("linked %v %v", kids, err)
	}
	items, err := e.Recall(ctx, core.AssembleParams{SessionID: "parent", SessionKey: parentKey, Prompt: "where are the walrus-9 backups kept?"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range items {
		if it.Conversation == kids[0] && !it.Neighbour {
			found = true
		}
	}
	if !found {
		t.Fatalf("the parent's recall does not find the child's history: %+v", items)
	}
}

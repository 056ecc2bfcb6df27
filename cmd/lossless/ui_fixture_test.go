package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// The explorer's browser test reads a store holding both pi-mono
// transcripts, imported and compacted (summaries at depths 0 and 1 beside
// the two imported ones), and compares what the page shows with what the
// command prints for the same store: assemble --json, export.

// uiBudget and uiPrompt are the context view's inputs and assemble's flags.
const (
	uiBudget = 16000
	uiPrompt = "TruncatedText ellipsis theme tokens"
	// uiIdent occurs in before-compaction.jsonl only (7 lines): the search
	// view's grep must find it there.
	uiIdent = "getUserMessageText"
)

// uiConversation is one conversation of the fixture store as `lossless
// sessions --json` lists it, with its export and what assemble gave.
type uiConversation struct {
	Agent      string   `json:"agent"`
	ID         string   `json:"id"`
	SessionIDs []string `json:"sessionIds"`
	Messages   int      `json:"messages"`

	file   string   // the transcript it was imported from
	export [][]byte // `lossless export` lines, in order
}

// has reports whether s names the conversation (an id the page may use).
func (c uiConversation) has(s string) bool {
	if s == c.ID {
		return true
	}
	for _, id := range c.SessionIDs {
		if id == s {
			return true
		}
	}
	return false
}

// uiAssembled is the part of `lossless assemble --json` the test compares.
type uiAssembled struct {
	EstimatedTokens int `json:"estimatedTokens"`
	Messages        []struct {
		Tokens int `json:"tokens"`
	} `json:"messages"`
	Parts []struct {
		Part   string `json:"part"`
		Tokens int    `json:"tokens"`
	} `json:"parts"`
	SystemPromptAdditionTokens int `json:"systemPromptAdditionTokens"`
	Recall                     struct {
		Status string `json:"status"`
	} `json:"recall"`
}

// uiFixture is the store and what the command says about it.
type uiFixture struct {
	store string
	convs []uiConversation // before-compaction first, then large-session
	// plain is assemble --json for large-session without a budget or a
	// prompt (the context view's first figures); asm within uiBudget for
	// uiPrompt.
	plain, asm uiAssembled
}

// buildUIFixture imports both transcripts into a new store (chars4 counts,
// as runCLI's commands), compacts each to uiBudget, and records sessions,
// export and assemble as the command prints them. It skips without the
// shared data.
// openUIEngine opens the store as runCLI's commands do (chars4 counts) and
// waits until its recall index holds everything stored.
func openUIEngine(t *testing.T, store string) *lossless.Engine {
	t.Helper()
	cfg := config.Default()
	cfg.StoreDir = store
	cfg.Tokenizer = core.CounterChars4
	e, err := lossless.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WaitRecallIndex(context.Background()); err != nil {
		e.Close()
		t.Fatal(err)
	}
	return e
}

func buildUIFixture(t *testing.T) *uiFixture {
	t.Helper()
	files := testutil.PiMono(t)
	f := &uiFixture{store: filepath.Join(t.TempDir(), "store")}
	runCLI(t, "", nil, append([]string{"import", "--store", f.store}, files...)...).want(t, 0, "2 summaries")
	var convs []uiConversation
	r := runCLI(t, "", nil, "sessions", "--store", f.store, "--json")
	r.want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &convs); err != nil || len(convs) != 2 {
		t.Fatalf("sessions --json: %v, %d conversations\n%s", err, len(convs), r.stdout)
	}
	for _, file := range files {
		header, msgs := messageObjects(t, file)
		var c *uiConversation
		for i := range convs {
			if convs[i].has(header) {
				c = &convs[i]
			}
		}
		if c == nil {
			t.Fatalf("no conversation has %s's session %s", filepath.Base(file), header)
		}
		c.file = file
		runCLI(t, "", nil, "compact", "--store", f.store, "--session", header, "--budget", strconv.Itoa(uiBudget), "--force").
			want(t, 0, "compacted session")
		r := runCLI(t, "", nil, "export", "--store", f.store, "--session", header)
		r.want(t, 0)
		c.export = bytes.Split(bytes.TrimSuffix([]byte(r.stdout), []byte("\n")), []byte("\n"))
		if len(c.export) != len(msgs) || len(c.export) != c.Messages {
			t.Fatalf("%s: export gave %d lines, the file has %d messages, sessions says %d", filepath.Base(file), len(c.export), len(msgs), c.Messages)
		}
		f.convs = append(f.convs, *c)
	}
	// The waits for the recall index here and in the test: an
	// assemble while the index catches up ranks on what it holds so far.
	// Its segments merged into one, the index ranks the same from here on
	// (no write follows): the explorer's figures with a prompt must be
	// exactly the command's (CompactRecallIndex says why not otherwise).
	e := openUIEngine(t, f.store)
	err := e.CompactRecallIndex(context.Background())
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	f.plain = assembleCLI(t, f.store, f.convs[1].SessionIDs[0], 0, "")
	f.asm = assembleCLI(t, f.store, f.convs[1].SessionIDs[0], uiBudget, uiPrompt)
	return f
}

// assembleCLI runs lossless assemble --json for the session (budget 0
// and prompt "": none given).
func assembleCLI(t *testing.T, store, session string, budget int, prompt string) uiAssembled {
	t.Helper()
	args := []string{"assemble", "--store", store, "--session", session, "--json"}
	if budget > 0 {
		args = append(args, "--budget", strconv.Itoa(budget))
	}
	if prompt != "" {
		args = append(args, "--prompt", prompt)
	}
	r := runCLI(t, "", nil, args...)
	r.want(t, 0)
	var a uiAssembled
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil || a.EstimatedTokens <= 0 || len(a.Parts) == 0 {
		t.Fatalf("assemble --json: %v\n%s", err, r.stdout)
	}
	return a
}

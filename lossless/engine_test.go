package lossless

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	contextengine "github.com/lossless-engine/contextengine"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

func TestInfoAndRegistration(t *testing.T) {
	e := openTest(t)
	info := e.Info()
	if err := info.Validate(); err != nil || info.ID != "lossless" || info.Name != "Lossless Context Engine" || !info.OwnsCompaction {
		t.Fatalf("info %+v %v", info, err)
	}
	found := false
	for _, id := range contextengine.Engines() {
		found = found || id == EngineID
	}
	if !found {
		t.Fatalf("lossless not registered: %v", contextengine.Engines())
	}
	if owner, _ := contextengine.Default().Owner(EngineID); owner != Owner {
		t.Fatalf("owner %q", owner)
	}
}

func TestCloseIdempotentAndErrClosed(t *testing.T) {
	cfg := testConfig(t.TempDir())
	e, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	calls := map[string]error{}
	_, calls["ingest"] = e.Ingest(ctx, core.IngestParams{SessionID: "s", Message: core.UserText("x", 1)})
	_, calls["batch"] = e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s"})
	calls["afterTurn"] = e.AfterTurn(ctx, core.AfterTurnParams{SessionID: "s"})
	_, calls["assemble"] = e.Assemble(ctx, core.AssembleParams{SessionID: "s"})
	_, calls["compact"] = e.Compact(ctx, core.CompactParams{SessionID: "s"})
	_, calls["bootstrap"] = e.Bootstrap(ctx, core.BootstrapParams{SessionID: "s", SessionFile: "/nonexistent"})
	_, calls["import"] = e.Import(ctx, "", "/nonexistent")
	_, calls["sessions"] = e.Sessions(ctx, "")
	_, calls["stats"] = e.Stats(ctx)
	for name, err := range calls {
		if !errors.Is(err, core.ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	cfg := testConfig(t.TempDir())
	ctx := context.Background()
	e, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: turn(1)}); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, err = Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// Appends continue after the stored sequence; replays stay duplicates.
	if r, err := e.IngestBatch(ctx, core.IngestBatchParams{SessionID: "s", Messages: append(turn(1), turn(2)...)}); err != nil || r.IngestedCount != 4 {
		t.Fatalf("after reopen: %v %v", r, err)
	}
	if got := storedMessages(t, e, "", "s"); len(got) != 8 {
		t.Fatalf("stored %d", len(got))
	}
	if err := checkInvariants(e); err != nil {
		t.Fatal(err)
	}
}

func TestFormatVersion(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	ctx := context.Background()
	write := func(m metaRecord) {
		st, err := badgerstore.Open(ctx, badgerstore.Options{Dir: cfg.StoreDir})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Update(ctx, func(tx store.Tx) error { return tx.PutMeta(m) }); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	write(metaRecord{Format: FormatVersion + 1, Engine: EngineID})
	if _, err := Open(ctx, cfg); !errors.Is(err, core.ErrFormatTooNew) {
		t.Fatalf("newer format: %v", err)
	}
	write(metaRecord{Format: FormatVersion, Engine: "other"})
	if _, err := Open(ctx, cfg); err == nil || !strings.Contains(err.Error(), `engine "other"`) {
		t.Fatalf("other engine: %v", err)
	}
	// An older format is migrated.
	write(metaRecord{Format: 0, Engine: EngineID})
	e, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("older format: %v", err)
	}
	var m metaRecord
	if err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		m, err = r.Meta()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if m.Format != FormatVersion || m.Tokenizer == "" || m.Since != 0 {
		t.Fatalf("not migrated (or Since set: records written before format 3 have no checksum): %+v", m)
	}
	// A new store records that it was created at this format: every
	// record of it has a checksum (badgerstore refuses one without).
	e = openTest(t)
	if err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		m, err = r.Meta()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if m.Since != FormatVersion {
		t.Fatalf("new store's format record %+v, want since %d", m, FormatVersion)
	}
}

func TestFactoryConfig(t *testing.T) {
	agentDir := t.TempDir()
	raw := json.RawMessage(`{"tokenizer":"chars4","freshTailMessages":10,"recall":{"enabled":true},"badger":{"memTableSize":4194304}}`)
	eng, err := Factory(context.Background(), core.FactoryOptions{Config: raw, AgentDir: agentDir})
	if err != nil {
		t.Fatal(err)
	}
	e := eng.(*Engine)
	defer e.Close()
	c := e.Config()
	if c.StoreDir != filepath.Join(agentDir, "lossless") || c.FreshTailMessages != 10 || !c.RecallEnabled() ||
		c.Badger.MemTableSize != 4<<20 || c.DefaultTokenBudget != config.DefaultTokenBudget || c.Tokenizer != "chars4" {
		t.Fatalf("config %+v", c)
	}
	if _, err := config.Parse(json.RawMessage(`{"storDir":"typo"}`)); err == nil {
		t.Fatal("unknown field accepted")
	}
	if _, err := Factory(context.Background(), core.FactoryOptions{Config: json.RawMessage(`{"storeDir":"` + t.TempDir() + `","tokenizer":"nope"}`)}); err == nil {
		t.Fatal("bad tokenizer accepted")
	}
	t.Setenv("XDG_DATA_HOME", "/data")
	if d, _ := config.DefaultStoreDir(""); d != "/data/lossless" {
		t.Fatalf("default dir %q", d)
	}
}

func TestBootstrap(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	r, err := e.Bootstrap(ctx, core.BootstrapParams{SessionID: "new", SessionFile: filepath.Join(t.TempDir(), "missing.jsonl")})
	if err != nil || r.Bootstrapped {
		t.Fatalf("missing file: %+v %v", r, err)
	}
	if _, err := e.Bootstrap(ctx, core.BootstrapParams{SessionFile: "x"}); !errors.Is(err, core.ErrEmptySessionID) {
		t.Fatalf("empty session: %v", err)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	var lines [][]byte
	lines = append(lines, []byte(`{"type":"session","version":4,"id":"hdr","timestamp":"2026-01-01T00:00:00Z"}`))
	for i, m := range turn(1) {
		b, _ := json.Marshal(map[string]any{"type": "message", "id": string(rune('a' + i)), "message": json.RawMessage(m.Raw())})
		lines = append(lines, b)
	}
	writeLines(t, path, lines, false)
	r, err = e.Bootstrap(ctx, core.BootstrapParams{SessionID: "hdr", SessionKey: "agent:x:y", SessionFile: path})
	if err != nil || !r.Bootstrapped || r.ImportedMessages != 4 {
		t.Fatalf("bootstrap: %+v %v", r, err)
	}
	r, err = e.Bootstrap(ctx, core.BootstrapParams{SessionID: "hdr", SessionKey: "agent:x:y", SessionFile: path})
	if err != nil || r.ImportedMessages != 0 {
		t.Fatalf("second bootstrap: %+v %v", r, err)
	}
	out, err := e.Assemble(ctx, core.AssembleParams{SessionID: "hdr", SessionKey: "agent:x:y"})
	if err != nil || len(out.Messages) != 4 {
		t.Fatalf("assemble after bootstrap: %d %v", len(out.Messages), err)
	}
	if infos, _ := e.Sessions(ctx, "x"); len(infos) != 1 {
		t.Fatalf("sessions of agent x: %+v", infos)
	}
}

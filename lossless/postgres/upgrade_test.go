package postgres_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/lossless/tools"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/pgstore"
)

// The PostgreSQL upgrade goldens (issue #38 point 5): testdata/upgrade holds
// pg_dump's output of a database at each schema version a binary wrote,
// made by the `lossless` binary built at the last commit of that version
// (the Badger goldens' transcript, ../testdata/upgrade/session.jsonl,
// imported and compacted); testdata/upgrade/README.md says how. Schema 1 was
// never written by a binary (no command reached PostgreSQL before 0002): its
// database is the schema-2 dump without 0002's recall tables, which is what
// 0001 alone creates.

const (
	pgUpgradeSession = "577ef81f-791e-440d-a02e-88da4143c03f"
	pgUpgradeAgent   = "main"
)

// pgUpgradeGoldens are the schema versions, the dump each is restored
// from, the store format its binary wrote and the summaries its compaction
// made.
var pgUpgradeGoldens = []struct {
	schema    int
	dump      string
	format    int
	summaries int
}{
	{1, "schema2.sql.gz", 2, 3},
	{2, "schema2.sql.gz", 2, 3},
	{3, "schema3.sql.gz", 2, 3},
	{4, "schema4.sql.gz", 2, 3},
	{5, "schema5.sql.gz", 3, 2},
}

// pgTranscript returns the raw message bytes of the goldens' transcript,
// read without the engine.
func pgTranscript(t testing.TB) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "upgrade", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Type    string          `json:"type"`
			Message json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("session.jsonl: %v", err)
		}
		if e.Type == "message" {
			out = append(out, bytes.Clone(e.Message))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) != 100 {
		t.Fatalf("session.jsonl holds %d messages, want 100", len(out))
	}
	return out
}

// restoreDump runs the gzipped plain pg_dump file in database url on a
// connection of its own (the dump empties search_path), leaving out psql's
// meta-commands (\restrict).
func restoreDump(t testing.TB, url, dump string) {
	t.Helper()
	ctx := context.Background()
	f, err := os.Open(filepath.Join("testdata", "upgrade", dump))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", dump, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", dump, err)
	}
	var sql strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(line, `\`) {
			sql.WriteString(line)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.PgConn().Exec(ctx, sql.String()).ReadAll(); err != nil {
		t.Fatalf("restore %s: %v", dump, err)
	}
}

// execSQL runs sql on database url.
func execSQL(t testing.TB, url, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// queryInts returns the integers sql selects in database url.
func queryInts(t testing.TB, url, sql string) []int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// columns lists database url's tables and columns with their types, one
// "table.column type" a line, sorted.
func columns(t testing.TB, url string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name || '.' || column_name || ' ' || data_type
		FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// migratedTo returns the URL of a fresh database that Migrations()[:n]
// alone brought to schema n, as Migrate records it.
func migratedTo(t testing.TB, n int) string {
	t.Helper()
	u := pgtest.NewDB(t)
	execSQL(t, u, `CREATE TABLE lossless_schema (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	for _, m := range pgstore.Migrations()[:n] {
		execSQL(t, u, m.SQL)
		execSQL(t, u, `INSERT INTO lossless_schema (version, name) VALUES ($1, $2)`, m.Version, m.Name)
	}
	return u
}

// atSchema returns the URL of a fresh database holding what the binary of
// schema n left (restored from its dump), checked to have exactly the
// tables and columns Migrations()[:n] creates.
func atSchema(t testing.TB, n int, dump string) string {
	t.Helper()
	u := pgtest.NewDB(t)
	restoreDump(t, u, dump)
	if n == 1 {
		// What 0001 alone leaves: 0002 only adds these tables (and the
		// recall_stats row).
		execSQL(t, u, `DROP TABLE recall_docs, recall_terms, recall_stats`)
		execSQL(t, u, `DELETE FROM lossless_schema WHERE version > 1`)
	}
	if v := queryInts(t, u, `SELECT max(version) FROM lossless_schema`); !slices.Equal(v, []int{n}) {
		t.Fatalf("%s: schema version %v, want %d", dump, v, n)
	}
	if got, want := columns(t, u), columns(t, migratedTo(t, n)); !slices.Equal(got, want) {
		t.Fatalf("%s (schema %d): tables differ from Migrations()[:%d]'s:\n got %q\nwant %q", dump, n, n, got, want)
	}
	return u
}

func pgConfig(url string) config.Config {
	cfg := config.Default()
	cfg.StoreURL, cfg.Tokenizer = url, core.CounterChars4
	return cfg
}

func pgMeta(t testing.TB, e *lossless.Engine) store.Meta {
	t.Helper()
	var m store.Meta
	if err := e.View(context.Background(), func(r store.Reader) error {
		var err error
		m, err = r.Meta()
		return err
	}); err != nil {
		t.Fatalf("read the format record: %v", err)
	}
	return m
}

// pgCheck checks the golden's content through e: every message byte for
// byte (want), the context with each summary expanded is every message in
// order, the summaries reachable from it, and a deep Check.
func pgCheck(t *testing.T, e *lossless.Engine, want [][]byte, summaries int) {
	t.Helper()
	ctx := context.Background()
	var got [][]byte
	if err := e.Messages(ctx, pgUpgradeAgent, pgUpgradeSession, func(seq uint64, m core.Message) error {
		if seq != uint64(len(got)+1) {
			return fmt.Errorf("message seq %d after %d messages", seq, len(got))
		}
		got = append(got, bytes.Clone(m.Raw()))
		return nil
	}); err != nil {
		t.Fatalf("Messages: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d messages read back, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d differs:\n got %.200s\nwant %.200s", i+1, got[i], want[i])
		}
	}
	conv, err := e.Conversation(ctx, pgUpgradeAgent, pgUpgradeSession)
	if err != nil {
		t.Fatalf("Conversation: %v", err)
	}
	items, err := conv.Items(ctx)
	if err != nil {
		t.Fatalf("Items: %v", err)
	}
	var seen [][]byte
	nsum := 0
	var count func(id string) int
	count = func(id string) int {
		s, err := conv.Summary(ctx, id)
		if err != nil {
			t.Fatalf("summary %s: %v", id, err)
		}
		if strings.TrimSpace(s.Text) == "" || len(s.Sources) == 0 {
			t.Fatalf("summary %s: empty text or no sources", id)
		}
		n := 1
		for _, src := range s.Sources {
			if src.Kind == dag.RefSummary {
				n += count(src.ID)
			}
		}
		return n
	}
	for _, it := range items {
		if it.Ref.Kind != dag.RefSummary {
			m, err := conv.Message(ctx, it.Ref.Seq)
			if err != nil {
				t.Fatalf("message %d of the context: %v", it.Ref.Seq, err)
			}
			seen = append(seen, m.Raw())
			continue
		}
		nsum += count(it.Ref.ID)
		cursor := ""
		for {
			page, err := e.ExpandSummary(ctx, tools.ExpandParams{AgentID: pgUpgradeAgent, SessionID: pgUpgradeSession, ID: it.Ref.ID, Cursor: cursor})
			if err != nil {
				t.Fatalf("expand %s: %v", it.Ref.ID, err)
			}
			for _, m := range page.Messages {
				seen = append(seen, m.Message.Raw())
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
	}
	if nsum != summaries {
		t.Fatalf("%d summaries reachable from the context, want the %d the old binary's compaction made", nsum, summaries)
	}
	if len(seen) != len(want) {
		t.Fatalf("the context with its summaries expanded holds %d messages, want %d", len(seen), len(want))
	}
	for i := range want {
		if !bytes.Equal(seen[i], want[i]) {
			t.Fatalf("the context's message %d (summaries expanded) differs:\n got %.200s\nwant %.200s", i+1, seen[i], want[i])
		}
	}
	res, err := e.Check(ctx, true)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if len(res.Problems) != 0 || res.Messages != int64(len(want)) {
		t.Fatalf("Check: %d messages, problems %+v; want %d messages and none", res.Messages, res.Problems, len(want))
	}
}

// TestUpgradeSchemas: a database at each schema version, holding what the
// binary of that version wrote, opens with this build: read-only only at
// this build's version (an older one is ErrSchemaTooOld, changing
// nothing), read-write migrated to this build's schema and store format
// with every message, summary and expansion unchanged; an ingest after it
// reads back after a reopen.
func TestUpgradeSchemas(t *testing.T) {
	pgtest.ServerURL(t)
	want := pgTranscript(t)
	ctx := context.Background()
	if pgstore.SchemaVersion() != 5 {
		t.Fatalf("this build's schema is %d: add a golden of schema 5's successor's predecessor (testdata/upgrade/README.md)", pgstore.SchemaVersion())
	}
	for _, g := range pgUpgradeGoldens {
		t.Run(fmt.Sprintf("schema%d", g.schema), func(t *testing.T) {
			u := atSchema(t, g.schema, g.dump)

			ro := pgConfig(u)
			ro.ReadOnly = true
			e, err := lossless.Open(ctx, ro)
			if g.schema < pgstore.SchemaVersion() {
				if err == nil {
					e.Close()
					t.Fatalf("a read-only open of a schema-%d database succeeded", g.schema)
				}
				if !errors.Is(err, pgstore.ErrSchemaTooOld) {
					t.Fatalf("read-only open at schema %d: %v, want ErrSchemaTooOld", g.schema, err)
				}
				if v := queryInts(t, u, `SELECT max(version) FROM lossless_schema`); !slices.Equal(v, []int{g.schema}) {
					t.Fatalf("the refused read-only open changed the schema version to %v", v)
				}
			} else {
				if err != nil {
					t.Fatalf("read-only open: %v", err)
				}
				if m := pgMeta(t, e); m.Format != g.format {
					t.Fatalf("format record %+v, want format %d", m, g.format)
				}
				pgCheck(t, e, want, g.summaries)
				e.Close()
			}

			e, err = lossless.Open(ctx, pgConfig(u))
			if err != nil {
				t.Fatalf("open the schema-%d database: %v", g.schema, err)
			}
			if v := queryInts(t, u, `SELECT version FROM lossless_schema ORDER BY 1`); len(v) != pgstore.SchemaVersion() || v[len(v)-1] != pgstore.SchemaVersion() {
				t.Fatalf("after the open, lossless_schema holds %v, want 1..%d", v, pgstore.SchemaVersion())
			}
			if m := pgMeta(t, e); m.Format != lossless.FormatVersion || m.Engine != lossless.EngineID {
				t.Fatalf("after a read-write open the format record says %+v, want format %d", m, lossless.FormatVersion)
			}
			pgCheck(t, e, want, g.summaries)
			msg := core.UserText(fmt.Sprintf("written at schema %d after the upgrade", pgstore.SchemaVersion()), 1767700000000)
			res, err := e.Ingest(ctx, core.IngestParams{SessionID: pgUpgradeSession, Message: msg})
			if err != nil || !res.Ingested {
				t.Fatalf("ingest on the upgraded database: %+v, %v", res, err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			more := append(append([][]byte(nil), want...), msg.Raw())
			e, err = lossless.Open(ctx, pgConfig(u))
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer e.Close()
			pgCheck(t, e, more, g.summaries)
		})
	}
}

// TestNewerDatabaseRefused: a database at a schema version after this
// build's, or whose format record says a format after this build's, is
// refused read-write and read-only with an error naming both versions and
// saying to upgrade, and nothing in it changes.
func TestNewerDatabaseRefused(t *testing.T) {
	pgtest.ServerURL(t)
	ctx := context.Background()
	want := pgTranscript(t)
	newer := pgstore.SchemaVersion() + 1
	cases := []struct {
		name, setup, undo string
		is                error
		says              []string
	}{
		{"schema", fmt.Sprintf(`INSERT INTO lossless_schema (version, name) VALUES (%d, 'future')`, newer),
			fmt.Sprintf(`DELETE FROM lossless_schema WHERE version = %d`, newer),
			pgstore.ErrSchemaTooNew,
			[]string{fmt.Sprintf("schema version %d", newer), fmt.Sprintf("up to %d", pgstore.SchemaVersion()), "upgrade lossless"}},
		{"format", fmt.Sprintf(`UPDATE lossless_meta SET rec = '{"format":%d,"engine":"lossless","tokenizer":"chars4","since":%d}'`, lossless.FormatVersion+1, lossless.FormatVersion+1),
			fmt.Sprintf(`UPDATE lossless_meta SET rec = '{"format":%d,"engine":"lossless","tokenizer":"chars4","since":%d}'`, lossless.FormatVersion, lossless.FormatVersion),
			core.ErrFormatTooNew,
			[]string{fmt.Sprintf("format %d", lossless.FormatVersion+1), fmt.Sprintf("up to %d", lossless.FormatVersion), "upgrade lossless"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := atSchema(t, pgstore.SchemaVersion(), fmt.Sprintf("schema%d.sql.gz", pgstore.SchemaVersion()))
			execSQL(t, u, c.setup)
			before := columns(t, u)
			for _, readOnly := range []bool{false, true} {
				cfg := pgConfig(u)
				cfg.ReadOnly = readOnly
				e, err := lossless.Open(ctx, cfg)
				if err == nil {
					e.Close()
					t.Fatalf("open (read-only %t) of a newer database succeeded", readOnly)
				}
				ok := errors.Is(err, c.is)
				for _, s := range c.says {
					ok = ok && strings.Contains(err.Error(), s)
				}
				if !ok {
					t.Errorf("open (read-only %t) of a newer database: %v\nwant %v naming %q", readOnly, err, c.is, c.says)
				}
			}
			if got := columns(t, u); !slices.Equal(got, before) {
				t.Fatalf("the refused opens changed the tables")
			}
			if v := queryInts(t, u, `SELECT max(version) FROM lossless_schema`); c.name == "schema" && !slices.Equal(v, []int{newer}) {
				t.Fatalf("the refused opens changed the schema version to %v", v)
			}
			// Put back, this build reads everything as it was.
			execSQL(t, u, c.undo)
			cfg := pgConfig(u)
			cfg.ReadOnly = true
			e, err := lossless.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			pgCheck(t, e, want, 2)
		})
	}
}

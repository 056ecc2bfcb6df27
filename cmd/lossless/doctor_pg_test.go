package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/pgstore"
)

// TestDoctorOnPostgres: doctor --store postgres://… checks a database the
// CLI imported into and compacted: clean, it reports no problem; with a
// summary deleted it exits 1 naming it, and changes no row of any table.
func TestDoctorOnPostgres(t *testing.T) {
	url := pgtest.NewDB(t)
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-pg", 40)
	runCLI(t, "", nil, "import", "--store", url, file).want(t, 0)
	runCLI(t, "", nil, "compact", "--store", url, "--session", "sess-pg", "--budget", "300", "--force").want(t, 0)
	// Its size is PostgreSQL's, not du's (issue #37).
	r := runCLI(t, "", nil, "doctor", "--store", url, "--deep")
	r.want(t, 0, "0 problem(s)", "(its tables and indexes, as PostgreSQL counts them)")
	if strings.Contains(r.stdout, "as du counts") {
		t.Fatalf("doctor on PostgreSQL: %s", r.stdout)
	}

	st, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(ctx, func(tx store.Tx) error {
		for r, err := range tx.Conversations() {
			if err != nil {
				return err
			}
			for it, err := range tx.Items(r.ID, 0, ^uint64(0), false) {
				if err != nil {
					return err
				}
				if it.IsSummary() {
					return tx.DeleteSummary(r.ID, it.Ref.ID)
				}
			}
		}
		t.Fatal("no summary in the context: compact made none")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	before := digestTables(t, url)
	r = runCLI(t, "", nil, "doctor", "--store", url, "--deep", "--json")
	if r.code != 1 {
		t.Fatalf("doctor exit %d, want 1 (a problem):\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	if !strings.Contains(strings.Join(rep.Problems, "\n"), "referenced but not stored") {
		t.Fatalf("doctor problems %q, want the deleted summary", rep.Problems)
	}
	if after := digestTables(t, url); after != before {
		t.Fatalf("doctor changed the database:\nbefore %s\nafter  %s", before, after)
	}
}

// digestTables is a digest of every row of every table of the database.
func digestTables(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 10 {
		t.Fatalf("only %d tables: %v", len(tables), tables)
	}
	var b strings.Builder
	for _, tbl := range tables {
		var d *string
		q := "SELECT md5(string_agg(x::text, '|' ORDER BY x::text)) FROM " + pgx.Identifier{tbl}.Sanitize() + " x"
		if err := conn.QueryRow(ctx, q).Scan(&d); err != nil {
			t.Fatalf("%s: %v", tbl, err)
		}
		v := "empty"
		if d != nil {
			v = *d
		}
		b.WriteString(tbl + "=" + v + " ")
	}
	return b.String()
}

package pgstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lossless-engine/contextengine/internal/pgtest"
	"github.com/lossless-engine/contextengine/store"
)

func TestOpenBadURL(t *testing.T) {
	for _, u := range []string{
		"postgres://lossless:s3cret-pw@host:notaport/db",
		"host=/tmp port=x password=s3cret-pw",
	} {
		_, err := Open(context.Background(), Options{URL: u})
		if err == nil {
			t.Fatalf("Open(%q) succeeded", u)
		}
		msg := err.Error()
		if strings.Contains(msg, "s3cret-pw") {
			t.Errorf("the error shows the password: %v", err)
		}
		if !strings.Contains(msg, "bad database URL") || !strings.Contains(msg, "xxxxx") {
			t.Errorf("Open(%q) = %v; want it to say the URL is bad and show it redacted", u, err)
		}
	}
	if _, err := Open(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "no database URL") {
		t.Errorf("Open without a URL = %v", err)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db?sslmode=disable": "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgres://u@h/db?password=pw":             "postgres://u@h/db?password=xxxxx",
		"postgres://u@h/db":                         "postgres://u@h/db",
		"host=h password=pw user=u":                 "host=h password=xxxxx user=u",
		"host=h password='p w' user=u":              "host=h password=xxxxx user=u",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenUnreachable(t *testing.T) {
	// Port 1 on the loopback: nothing listens there.
	_, err := Open(context.Background(), Options{URL: "postgres://u:pw@127.0.0.1:1/db?connect_timeout=5", ConnectTimeout: 5 * time.Second})
	if err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "cannot reach") || !strings.Contains(msg, "127.0.0.1:1") {
		t.Errorf("Open of an unreachable server = %v; want it to say so, naming the host", err)
	}
}

// TestSchemaTooNew: a database a newer binary migrated is refused, read-write
// and read-only, and left as it is.
func TestSchemaTooNew(t *testing.T) {
	u := pgtest.NewDB(t)
	s := openTest(t, Options{URL: u})
	if _, err := s.Pool().Exec(t.Context(), "INSERT INTO lossless_schema (version, name) VALUES (999, 'future')"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, ro := range []bool{false, true} {
		_, err := Open(t.Context(), Options{URL: u, ReadOnly: ro})
		if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "999") {
			t.Errorf("Open (read-only %t) of a database at schema 999 = %v, want ErrSchemaTooNew naming the version", ro, err)
		}
	}
}

// TestReadOnlyFresh: a read-only open of a database never migrated is
// refused with ErrSchemaTooOld, and creates nothing.
func TestReadOnlyFresh(t *testing.T) {
	u := pgtest.NewDB(t)
	_, err := Open(t.Context(), Options{URL: u, ReadOnly: true})
	if !errors.Is(err, ErrSchemaTooOld) {
		t.Fatalf("read-only Open of an empty database = %v, want ErrSchemaTooOld", err)
	}
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").Scan(&n); err != nil || n != 0 {
		t.Errorf("after a read-only open: %d tables, %v; want none", n, err)
	}
}

// TestReadOnlySessions: a read-only store's sessions refuse writes in the
// server too (default_transaction_read_only), not only in Update.
func TestReadOnlySessions(t *testing.T) {
	u := pgtest.NewDB(t)
	openTest(t, Options{URL: u}).Close()
	ro := openTest(t, Options{URL: u, ReadOnly: true})
	_, err := ro.Pool().Exec(t.Context(), "INSERT INTO lossless_meta (id, rec) VALUES (1, '{}')")
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("an INSERT on a read-only store's pool = %v, want a read-only transaction error", err)
	}
}

// TestOpenConcurrently: processes opening a fresh database at once all
// succeed, and the schema is applied once.
func TestOpenConcurrently(t *testing.T) {
	u := pgtest.NewDB(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	stores := make([]*Store, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = Open(t.Context(), Options{URL: u})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
			continue
		}
		defer stores[i].Close()
	}
	if t.Failed() {
		return
	}
	var versions []int
	rows, err := stores[0].Pool().Query(t.Context(), "SELECT version FROM lossless_schema ORDER BY version")
	if err == nil {
		versions, err = pgx.CollectRows(rows, pgx.RowTo[int])
	}
	if err != nil || len(versions) != SchemaVersion() {
		t.Errorf("lossless_schema after %d concurrent opens: %v, %v; want each of %d versions once", n, versions, err, SchemaVersion())
	}
	// Every store works on it.
	for i, s := range stores {
		if err := s.Update(t.Context(), func(tx store.Tx) error { return tx.PutMeta(store.Meta{Format: i}) }); err != nil {
			t.Errorf("store %d: %v", i, err)
		}
	}
}

// TestSize: the size grows with what is written.
func TestSize(t *testing.T) {
	s := openTest(t, Options{URL: pgtest.NewDB(t)})
	before, err := s.Size(t.Context())
	if err != nil || before <= 0 {
		t.Fatalf("Size() = %d, %v; want the empty tables' size", before, err)
	}
	raw := []byte(strings.Repeat("x", 1<<20))
	err = s.Update(t.Context(), func(tx store.Tx) error {
		for seq := range uint64(8) {
			raw := append([]byte{byte(seq)}, raw...)
			if err := tx.PutMessage(store.ConvID{1}, store.Message{Seq: seq, Raw: raw}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Size(t.Context())
	if err != nil || after <= before {
		t.Errorf("Size() after writing 8 MiB = %d, %v; before %d", after, err, before)
	}
}

// TestAsyncCommit: AsyncCommit turns synchronous_commit off for the
// store's sessions (the default leaves the server's on), and Sync's
// synchronous commit runs.
func TestAsyncCommit(t *testing.T) {
	u := pgtest.NewDB(t)
	ctx := t.Context()
	for _, async := range []bool{false, true} {
		s := openTest(t, Options{URL: u, AsyncCommit: async})
		var got string
		if err := s.Pool().QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil || (got == "off") != async {
			t.Errorf("AsyncCommit %t: synchronous_commit = %q, %v", async, got, err)
		}
		if err := s.Update(ctx, func(tx store.Tx) error { return tx.PutMeta(store.Meta{Format: 1}) }); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(ctx); err != nil {
			t.Errorf("AsyncCommit %t: Sync: %v", async, err)
		}
		s.Close()
	}
	// The URL's synchronous_commit=off is AsyncCommit (Sync flushes).
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	s := openTest(t, Options{URL: u + sep + "synchronous_commit=off"})
	var got string
	if err := s.Pool().QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil || got != "off" || !s.opts.AsyncCommit {
		t.Errorf("synchronous_commit=off in the URL: synchronous_commit = %q (%v), AsyncCommit %t", got, err, s.opts.AsyncCommit)
	}
}

// TestPoolMaxConnsFromURL: the URL's pool_max_conns sizes the pool unless
// Options.MaxConns is set.
func TestPoolMaxConnsFromURL(t *testing.T) {
	u := testDB(t)
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	s := openTest(t, Options{URL: u + sep + "pool_max_conns=3"})
	if got := s.Pool().Config().MaxConns; got != 3 {
		t.Errorf("pool_max_conns=3 in the URL: MaxConns %d", got)
	}
	s2 := openTest(t, Options{URL: u + sep + "pool_max_conns=3", MaxConns: 5})
	if got := s2.Pool().Config().MaxConns; got != 5 {
		t.Errorf("MaxConns 5 beside pool_max_conns=3: %d", got)
	}
	s3 := openTest(t, Options{URL: u})
	if got := s3.Pool().Config().MaxConns; got != DefaultMaxConns {
		t.Errorf("no setting: MaxConns %d, want %d", got, DefaultMaxConns)
	}
}

// Package pgtest gives tests of the PostgreSQL backend a fresh database of
// their own on a server named by LOSSLESS_TEST_PG_URL.
//
// .ci/run starts a throwaway server itself (.ci/postgres.sh). To run these
// tests by hand:
//
//	eval "$(.ci/postgres.sh start)"
//	go test ./store/pgstore/ ./lossless/ ./cmd/lossless/
//	.ci/postgres.sh stop "$LOSSLESS_PG_DIR"
//
// Without LOSSLESS_TEST_PG_URL the tests skip, saying so; with
// LOSSLESS_TEST_PG_REQUIRED=1 (as in CI) they fail instead.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable holding the server's URL (any database on it:
// the tests create their own).
const EnvURL = "LOSSLESS_TEST_PG_URL"

// EnvRequired, set to 1, makes a missing server a failure instead of a skip.
const EnvRequired = "LOSSLESS_TEST_PG_REQUIRED"

// How says how to run the PostgreSQL tests.
const How = `no PostgreSQL server for this test: set ` + EnvURL + `, e.g. with eval "$(.ci/postgres.sh start)" (starts a throwaway server; .ci/postgres.sh stop "$LOSSLESS_PG_DIR" stops it)`

// ServerURL returns the server's URL, skipping t (failing it when
// EnvRequired is 1) when there is none.
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		if os.Getenv(EnvRequired) == "1" {
			t.Fatal(How)
		}
		t.Skip(How)
	}
	return u
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// NewDB creates a fresh, empty database for t and returns its URL; the
// database is dropped when t ends (kept when LOSSLESS_TEST_PG_KEEP=1, to
// look at after a failure).
func NewDB(t testing.TB) string {
	t.Helper()
	base := ServerURL(t)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := strings.ToLower(t.Name())
	name = unsafeName.ReplaceAllString(name, "_")
	if len(name) > 40 {
		name = name[:40]
	}
	name = "t_" + name + "_" + hex.EncodeToString(rnd[:])
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := exec(ctx, base, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	dbURL, err := WithDatabase(base, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if os.Getenv("LOSSLESS_TEST_PG_KEEP") == "1" {
			t.Logf("pgtest: kept database %s", dbURL)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := exec(ctx, base, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest: drop database %s: %v", name, err)
		}
	})
	return dbURL
}

// WithDatabase returns u naming database db instead of its own.
func WithDatabase(u, db string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("pgtest: parse %s: %w", EnvURL, err)
	}
	p.Path = "/" + db
	return p.String(), nil
}

func exec(ctx context.Context, u, sql string) error {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

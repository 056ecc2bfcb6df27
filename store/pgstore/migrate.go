package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The schema: migrations/NNNN_name.sql, applied in order, each once. A
// migration is never edited once released; a change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory lock key under which migrations run, so that
// processes opening a fresh database at once apply each migration once
// ("lossless" in ASCII).
const migrationLock int64 = 0x6c6f73736c657373

// Migration is one schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the embedded schema steps in version order.
func Migrations() []Migration {
	ents, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		panic(err) // embedded at build time
	}
	var out []Migration
	for _, e := range ents {
		name := strings.TrimSuffix(e.Name(), ".sql")
		num, rest, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic(fmt.Sprintf("pgstore: migration file %s is not NNNN_name.sql", e.Name()))
		}
		b, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			panic(err)
		}
		out = append(out, Migration{Version: v, Name: rest, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			panic(fmt.Sprintf("pgstore: migration %d is missing (found %d)", i+1, m.Version))
		}
	}
	return out
}

// SchemaVersion is the schema version this binary writes.
func SchemaVersion() int { return len(Migrations()) }

// Migrate brings the database's schema to this binary's version, applying
// the missing steps in one transaction under an advisory lock (two processes
// migrating a fresh database at once both succeed, and each step runs once),
// and records each step in lossless_schema. It returns the version found
// before and after. A database at a newer version is ErrSchemaTooNew;
// nothing is changed then.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (before, after int, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("pgstore: migrate: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
		return 0, 0, fmt.Errorf("pgstore: migrate: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS lossless_schema (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, 0, fmt.Errorf("pgstore: migrate: create lossless_schema: %w", err)
	}
	before, err = currentVersion(ctx, tx)
	if err != nil {
		return 0, 0, err
	}
	ms := Migrations()
	if before > len(ms) {
		return before, before, fmt.Errorf("%w: the database is at schema version %d, this binary knows versions up to %d (upgrade lossless, or point it at another database)", ErrSchemaTooNew, before, len(ms))
	}
	for _, m := range ms[before:] {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return before, before, fmt.Errorf("pgstore: migrate: step %04d_%s: %w", m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO lossless_schema (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
			return before, before, fmt.Errorf("pgstore: migrate: record step %d: %w", m.Version, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return before, before, fmt.Errorf("pgstore: migrate: commit: %w", err)
	}
	return before, len(ms), nil
}

// CheckSchema reports whether the database is at this binary's schema
// version, without changing anything (read-only opens): ErrSchemaTooOld
// or ErrSchemaTooNew when not.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('lossless_schema') IS NOT NULL").Scan(&exists); err != nil {
		return 0, fmt.Errorf("pgstore: read schema version: %w", err)
	}
	v := 0
	if exists {
		var err error
		if v, err = currentVersion(ctx, pool); err != nil {
			return 0, err
		}
	}
	switch want := SchemaVersion(); {
	case v > want:
		return v, fmt.Errorf("%w: the database is at schema version %d, this binary knows versions up to %d (upgrade lossless)", ErrSchemaTooNew, v, want)
	case v < want:
		return v, fmt.Errorf("%w: the database is at schema version %d, this binary needs %d (open it read-write once, or run `lossless migrate --store URL`)", ErrSchemaTooOld, v, want)
	}
	return v, nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func currentVersion(ctx context.Context, q querier) (int, error) {
	var v int
	if err := q.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM lossless_schema").Scan(&v); err != nil {
		return 0, fmt.Errorf("pgstore: read schema version: %w", err)
	}
	return v, nil
}

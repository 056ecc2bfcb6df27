package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lossless-engine/contextengine/store"
)

// Options configures Open.
type Options struct {
	// URL is the database's connection string: a postgres:// URL or a
	// key=value DSN, as libpq takes them (host, port, user, password,
	// dbname, sslmode, ...).
	URL string
	// ReadOnly opens the store for reading only: every session is opened
	// with default_transaction_read_only, the schema is checked but never
	// migrated, and Update and NewBatch fail with store.ErrReadOnly.
	ReadOnly bool
	// MaxConns bounds the pool of connections transactions run on
	// (default DefaultMaxConns). Named locks (Lock, TryLock) hold
	// connections of a second pool of their own, so that held locks never
	// starve transactions.
	MaxConns int32
	// MaxLockConns bounds the connections held by locks at once (default
	// DefaultMaxLockConns): past it, Lock waits for one to be unlocked.
	MaxLockConns int32
	// LockConnIdle is how long a connection of the lock pool stays open
	// unused before it is closed (default DefaultLockConnIdle), so that a
	// burst of writes to many conversations does not keep a connection
	// per conversation open against the server's max_connections.
	LockConnIdle time.Duration
	// ConnectTimeout bounds connecting and the first ping at Open
	// (default 10 s).
	ConnectTimeout time.Duration
	// AsyncCommit lets a commit return before the server flushed it to
	// disk (synchronous_commit off for the store's sessions), as the
	// engine's default Badger store does without SyncWrites: a crash of a
	// client process loses nothing it was told was committed, a crash of
	// the server (or of its machine) may lose the last commits (about
	// three times wal_writer_delay: 600 ms by default), never part of
	// one. Sync then flushes them. Default false: the server's setting
	// (on, unless its administrator chose otherwise), or the URL's
	// synchronous_commit parameter (=off is the same as AsyncCommit).
	AsyncCommit bool
}

// Defaults of Options.
const (
	DefaultMaxConns     = 16
	DefaultMaxLockConns = 64
	DefaultLockConnIdle = time.Minute
	defaultConnect      = 10 * time.Second
)

// MaxTxnBytes is what one Update may write, about (store.Store.MaxTxnBytes):
// 8 MiB of keys and values, as queued. PostgreSQL itself has no such
// limit (a bytea holds up to 1 GiB); the bound keeps what an Update
// queues in memory (it sends its writes with its next read or its
// commit) and the server's WAL for one commit moderate, and is far above
// what the engine's batched ingest writes at once (1,024 messages). An
// Update fails with store.ErrTooBig when it writes more than twice
// MaxTxnBytes besides its largest record: the margin is for the engine's
// estimates, and one message of any size the engine accepts commits.
const MaxTxnBytes = 8 << 20

// Store is a store.Store on PostgreSQL.
type Store struct {
	opts   Options
	pool   *pgxpool.Pool
	locks  *pgxpool.Pool
	closed atomic.Bool
	// held are the connections of held locks (Close closes them).
	mu   sync.Mutex
	held map[*heldLock]struct{}
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Locker = (*Store)(nil)
)

// Open connects to the database at o.URL, checks that it answers, and
// migrates its schema to this binary's version (Migrate), or checks it
// when read-only (CheckSchema): a database whose schema is newer than
// the binary is refused with ErrSchemaTooNew.
func Open(ctx context.Context, o Options) (*Store, error) {
	// The URL's own pool_max_conns stands unless MaxConns is set.
	urlConns := o.MaxConns <= 0 && strings.Contains(o.URL, "pool_max_conns=")
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxLockConns <= 0 {
		o.MaxLockConns = DefaultMaxLockConns
	}
	if o.LockConnIdle <= 0 {
		o.LockConnIdle = DefaultLockConnIdle
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = defaultConnect
	}
	if o.URL == "" {
		return nil, errors.New("pgstore: open: no database URL")
	}
	cfg, err := pgxpool.ParseConfig(o.URL)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: bad database URL %s: %w", RedactURL(o.URL), err)
	}
	if !urlConns {
		cfg.MaxConns = o.MaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
	}
	if o.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if o.AsyncCommit {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	} else if strings.EqualFold(cfg.ConnConfig.RuntimeParams["synchronous_commit"], "off") {
		o.AsyncCommit = true // the URL's synchronous_commit=off: Sync flushes
	}
	where := serverName(cfg)
	s := &Store{opts: o, held: map[*heldLock]struct{}{}}
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("pgstore: open %s: %w", where, err)
	}
	lcfg := cfg.Copy()
	lcfg.MaxConns = o.MaxLockConns
	lcfg.MinConns = 0
	lcfg.MaxConnIdleTime = o.LockConnIdle
	lcfg.HealthCheckPeriod = min(lcfg.HealthCheckPeriod, o.LockConnIdle)
	if s.locks, err = pgxpool.NewWithConfig(ctx, lcfg); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("pgstore: open %s: %w", where, err)
	}
	pctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	if err := s.pool.Ping(pctx); err != nil {
		s.closePools()
		return nil, fmt.Errorf("pgstore: open: cannot reach the PostgreSQL server at %s: %w", where, err)
	}
	if o.ReadOnly {
		_, err = CheckSchema(ctx, s.pool)
	} else {
		_, _, err = Migrate(ctx, s.pool)
	}
	if err != nil {
		s.closePools()
		return nil, fmt.Errorf("pgstore: open %s: %w", where, err)
	}
	return s, nil
}

// serverName names the server and database of cfg for errors.
func serverName(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	host := c.Host
	if c.Port != 0 && (len(host) == 0 || host[0] != '/') {
		host = fmt.Sprintf("%s:%d", host, c.Port)
	}
	return fmt.Sprintf("host %s, database %q", host, c.Database)
}

var dsnPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)

// RedactURL returns a connection string with its password replaced by
// "xxxxx", for messages.
func RedactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	// Not a URL: a key=value DSN, or a URL that does not parse.
	s = dsnPassword.ReplaceAllString(s, "${1}xxxxx")
	return regexp.MustCompile(`(://[^:/@]*:)[^@/]*@`).ReplaceAllString(s, "${1}xxxxx@")
}

// Pool returns the store's connection pool (for the recall index, which
// keeps its tables in the same database).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

func (s *Store) closePools() {
	s.locks.Close()
	s.pool.Close()
}

func (s *Store) enter(op string) error {
	if s.closed.Load() {
		return fmt.Errorf("pgstore: %s: %w", op, store.ErrClosed)
	}
	return nil
}

// Transactions begin with their first statement, in the same round trip
// (a View or Update that reads nothing and writes nothing sends nothing).
const (
	beginView   = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
	beginUpdate = "BEGIN ISOLATION LEVEL REPEATABLE READ"
	beginBatch  = "BEGIN"
)

// acquire returns a connection of the pool.
func (s *Store) acquire(ctx context.Context, op string) (*pgxpool.Conn, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, wrapErr(op+": acquire a connection", err)
	}
	return c, nil
}

// release gives a connection back, ending the transaction left open on it
// (the pool drops a connection it cannot clean).
func release(ctx context.Context, c *pgxpool.Conn) {
	pc := c.Conn().PgConn()
	if !pc.IsClosed() && pc.TxStatus() != 'I' && !pc.IsBusy() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, _ = c.Exec(ctx, "ROLLBACK")
		cancel()
	}
	c.Release()
}

// View implements store.Store: fn runs in a REPEATABLE READ, READ ONLY
// transaction (one snapshot for all its reads).
func (s *Store) View(ctx context.Context, fn func(store.Reader) error) error {
	if err := s.enter("view"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pgstore: view: %w", err)
	}
	c, err := s.acquire(ctx, "view")
	if err != nil {
		return err
	}
	defer release(ctx, c)
	r := &reader{ctx: ctx, conn: c.Conn(), begin: beginView}
	err = fn(r)
	r.done = true
	return err // release ends the transaction (a read-only one: nothing to commit)
}

// Update implements store.Store: fn runs in a REPEATABLE READ read-write
// transaction whose writes are queued and sent as a few pipelined
// statements with its next read, or with the COMMIT. It commits when fn
// returns nil and the context is live; a serialization failure or
// deadlock is returned wrapped with store.ErrConflict, never retried here:
// fn may have changed its caller's state.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := s.enter("update"); err != nil {
		return err
	}
	if s.opts.ReadOnly {
		return fmt.Errorf("pgstore: update: %w", store.ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pgstore: update: %w", err)
	}
	c, err := s.acquire(ctx, "update")
	if err != nil {
		return err
	}
	defer release(ctx, c)
	t := &txn{reader: reader{ctx: ctx, conn: c.Conn(), begin: beginUpdate}}
	t.writer = writer{q: &queue{}, limit: 2 * MaxTxnBytes, check: t.check}
	t.reader.w = &t.writer
	err = fn(t)
	t.reader.done = true
	if err != nil {
		return conflict(err)
	}
	if err := t.writer.failed; err != nil {
		return conflict(fmt.Errorf("pgstore: commit refused after a failed write: %w", err))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pgstore: update: %w", err)
	}
	if t.reader.begin != "" && t.writer.q.empty() {
		return nil // nothing read, nothing written: nothing begun
	}
	// A serialization failure or deadlock is wrapped with store.ErrConflict
	// (the caller may run its Update again); it is never retried here: fn
	// may have changed its caller's state.
	return conflict(t.writer.q.commit(ctx, t.reader.conn, t.reader.begin, "COMMIT"))
}

// txn is the store.Tx of an Update.
type txn struct {
	reader
	writer
}

func (t *txn) check() error {
	if t.reader.done {
		return errEnded
	}
	return nil
}

// MaxTxnBytes implements store.Store (see the constant MaxTxnBytes).
func (s *Store) MaxTxnBytes() int64 { return MaxTxnBytes }

// Sync implements store.Store. Without Options.AsyncCommit it has nothing
// to do: a commit returns once the server made it durable. With it, Sync
// commits a transaction of its own synchronously (it takes a transaction
// id, so that its commit is a WAL record), which flushes the WAL up to it,
// every earlier commit of every session included.
func (s *Store) Sync(ctx context.Context) error {
	if err := s.enter("sync"); err != nil {
		return err
	}
	if !s.opts.AsyncCommit || s.opts.ReadOnly {
		return nil
	}
	c, err := s.acquire(ctx, "sync")
	if err != nil {
		return err
	}
	defer release(ctx, c)
	var b pgx.Batch
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = on")
	b.Queue("SELECT txid_current()")
	b.Queue("COMMIT")
	if err := c.SendBatch(ctx, &b).Close(); err != nil {
		return wrapErr("sync", err)
	}
	return nil
}

// Size implements store.Store: the bytes of the database's tables in the
// current schema (the store's, the recall index's and any other's there),
// indexes and TOAST included.
func (s *Store) Size(ctx context.Context) (int64, error) {
	if err := s.enter("size"); err != nil {
		return 0, err
	}
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p', 'm') AND n.nspname = current_schema()`).Scan(&n)
	if err != nil {
		return 0, wrapErr("size", err)
	}
	return n, nil
}

// Close implements store.Store: it releases the held locks (closing their
// connections) and closes the pools. Later calls fail with
// store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return fmt.Errorf("pgstore: close: %w", store.ErrClosed)
	}
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	for h := range held {
		h.drop()
	}
	s.closePools()
	return nil
}

// NewBatch implements store.Store. A batch queues its writes and sends
// them in parts, each its own transaction, when it grows past flushBytes
// and at Flush; its deletions by prefix run in order with its other
// writes, at Flush (so they also delete what the batch wrote before
// them).
func (s *Store) NewBatch(ctx context.Context) (store.Batch, error) {
	if err := s.enter("batch"); err != nil {
		return nil, err
	}
	if s.opts.ReadOnly {
		return nil, fmt.Errorf("pgstore: batch: %w", store.ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: batch: %w", err)
	}
	b := &batch{s: s, ctx: ctx}
	b.writer = writer{q: &queue{}, check: b.check, grown: b.part}
	return b, nil
}

type batch struct {
	writer
	s    *Store
	ctx  context.Context
	done bool
}

func (b *batch) check() error {
	if b.done {
		return errors.New("pgstore: batch used after Flush or Cancel")
	}
	return b.s.enter("batch")
}

// part commits what the batch holds, in one round trip.
func (b *batch) part() error {
	if b.q.empty() {
		return nil
	}
	if err := b.s.enter("batch"); err != nil {
		return err
	}
	c, err := b.s.acquire(b.ctx, "batch")
	if err != nil {
		return err
	}
	defer release(b.ctx, c)
	return b.q.commit(b.ctx, c.Conn(), beginBatch, "COMMIT")
}

// Flush implements store.Batch.
func (b *batch) Flush() error {
	if b.failed != nil {
		return b.failed
	}
	if err := b.check(); err != nil {
		return err
	}
	err := b.part()
	b.done = true
	return err
}

// Cancel implements store.Batch.
func (b *batch) Cancel() {
	b.done = true
	b.q.reset()
}

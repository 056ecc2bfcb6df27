package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/lossless-engine/contextengine/third_party/badger"
	"github.com/lossless-engine/contextengine/third_party/badger/options"

	"github.com/lossless-engine/contextengine/core"
)

type quietLogger struct{}

func (quietLogger) Errorf(string, ...any)   {}
func (quietLogger) Warningf(string, ...any) {}
func (quietLogger) Infof(string, ...any)    {}
func (quietLogger) Debugf(string, ...any)   {}

// rawBadger writes every message's raw bytes under an 8-byte sequence key
// with one Badger WriteBatch, with small options like an embedded store
// (8 MiB memtables, ZSTD level 1, values over 1 KiB in the value log), and
// returns the rate including the final flush.
func rawBadger(ctx context.Context, dir string, msgs []core.Message, p Progress) (Rate, error) {
	opts := badger.DefaultOptions(dir).WithLogger(quietLogger{}).
		WithMemTableSize(8 << 20).WithNumMemtables(2).WithValueLogFileSize(64 << 20).
		WithBlockCacheSize(8 << 20).WithIndexCacheSize(4 << 20).
		WithCompression(options.ZSTD).WithZSTDCompressionLevel(1).WithValueThreshold(1 << 10)
	db, err := badger.Open(opts)
	if err != nil {
		return Rate{}, fmt.Errorf("bench: raw badger: %w", err)
	}
	defer db.Close()
	var bytes int64
	alloc := totalAlloc()
	start := time.Now()
	wb := db.NewWriteBatch()
	for i, m := range msgs {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				wb.Cancel()
				return Rate{}, err
			}
		}
		key := binary.BigEndian.AppendUint64([]byte{'m'}, uint64(i))
		if err := wb.Set(key, m.Raw()); err != nil {
			wb.Cancel()
			return Rate{}, fmt.Errorf("bench: raw badger: %w", err)
		}
		bytes += int64(len(m.Raw()))
		p.Add(1)
	}
	if err := wb.Flush(); err != nil {
		return Rate{}, fmt.Errorf("bench: raw badger: %w", err)
	}
	return newRate(len(msgs), bytes, time.Since(start).Seconds(), totalAlloc()-alloc), nil
}

// rawBleve indexes every message's search text (core.Message.SearchText) in
// a scorch index with the default mapping and the engine's index setting
// (unsafe_batch: segments persisted in the background and at Close), in
// batches of 1,000, and returns the rate including the close (which
// persists the segments).
func rawBleve(ctx context.Context, dir string, msgs []core.Message, p Progress) (Rate, error) {
	ix, err := bleve.NewUsing(filepath.Join(dir, "bleve"), bleve.NewIndexMapping(), scorch.Name, scorch.Name,
		map[string]interface{}{"unsafe_batch": true})
	if err != nil {
		return Rate{}, fmt.Errorf("bench: raw bleve: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			ix.Close()
		}
	}()
	type doc struct {
		Text string `json:"text"`
		Role string `json:"role"`
	}
	var bytes int64
	alloc := totalAlloc()
	start := time.Now()
	b := ix.NewBatch()
	for i, m := range msgs {
		if err := b.Index(strconv.Itoa(i), doc{Text: m.SearchText(false), Role: m.Role()}); err != nil {
			return Rate{}, fmt.Errorf("bench: raw bleve: %w", err)
		}
		bytes += int64(len(m.Raw()))
		if b.Size() >= 1000 || i == len(msgs)-1 {
			if err := ctx.Err(); err != nil {
				return Rate{}, err
			}
			if err := ix.Batch(b); err != nil {
				return Rate{}, fmt.Errorf("bench: raw bleve: %w", err)
			}
			p.Add(b.Size())
			b.Reset()
		}
	}
	closed = true
	if err := ix.Close(); err != nil {
		return Rate{}, fmt.Errorf("bench: raw bleve: %w", err)
	}
	return newRate(len(msgs), bytes, time.Since(start).Seconds(), totalAlloc()-alloc), nil
}

// legacyAssemble is one legacy baseline of the assemble suite: the open
// engine and the report's maps it fills.
type legacyAssemble struct {
	name string
	e    core.Engine
	row  legacyRow
}

// legacyRow points at one legacy row's maps in an AssembleReport.
type legacyRow struct {
	p50, p99        map[string]float64
	samples, tokens map[string]int
}

// openLegacyAssemble opens the legacy baselines of the assemble suite:
// Config.Legacy (OpenClaw's chars/4 estimate, the main row) and
// Config.LegacyExact (an exact counter, the second row), those with an
// Open, and makes their maps in rep. It returns what it opened even on
// error, for the caller to close.
func (r *runner) openLegacyAssemble(ctx context.Context, rep *AssembleReport) ([]legacyAssemble, error) {
	var out []legacyAssemble
	for _, l := range []struct {
		name    string
		t       Target
		counter *string
		p50     *map[string]float64
		p99     *map[string]float64
		samples *map[string]int
		tokens  *map[string]int
	}{
		{"legacy", r.cfg.Legacy, &rep.LegacyCounter, &rep.LegacyP50Ms, &rep.LegacyP99Ms, &rep.LegacySamples, &rep.LegacyTokens},
		{"legacy-exact", r.cfg.LegacyExact, &rep.LegacyExactCounter, &rep.LegacyExactP50Ms, &rep.LegacyExactP99Ms, &rep.LegacyExactSamples, &rep.LegacyExactTokens},
	} {
		if l.t.Open == nil {
			continue
		}
		d, err := r.dir("assemble-" + l.name)
		if err != nil {
			return out, err
		}
		e, err := l.t.Open(ctx, d, r.cfg.Budget)
		if err != nil {
			return out, fmt.Errorf("open %s: %w", l.name, err)
		}
		*l.counter = l.t.Counter
		*l.p50, *l.p99, *l.samples, *l.tokens = map[string]float64{}, map[string]float64{}, map[string]int{}, map[string]int{}
		out = append(out, legacyAssemble{name: l.name, e: e, row: legacyRow{*l.p50, *l.p99, *l.samples, *l.tokens}})
	}
	return out, nil
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/internal/synth"
)

// ingest runs the ingest suite: raw baselines, then the engine one by one,
// turn by turn, and importing a session file of the same messages.
func (r *runner) ingest(ctx context.Context, rep *IngestReport) error {
	cfg := r.cfg
	p := cfg.Progress
	msgs, _, err := synthMessages(cfg.Seed, cfg.Messages)
	if err != nil {
		return err
	}
	var errs []error

	d, err := r.dir("raw-badger")
	if err != nil {
		return err
	}
	p.Step("ingest: raw Badger WriteBatch", len(msgs))
	if rep.RawBadger, err = rawBadger(ctx, d, msgs, p); err != nil {
		errs = append(errs, err)
	}
	os.RemoveAll(d)

	if d, err = r.dir("raw-bleve"); err != nil {
		return err
	}
	p.Step("ingest: raw Bleve batches", len(msgs))
	if rep.RawBleve, err = rawBleve(ctx, d, msgs, p); err != nil {
		errs = append(errs, err)
	}
	os.RemoveAll(d)

	if d, err = r.dir("ingest"); err != nil {
		return err
	}
	e, err := cfg.Engine.Open(ctx, d, cfg.Budget)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("open: %w", err))...)
	}
	defer closeEngine(e)

	// One message per call.
	one := msgs[:min(cfg.OneByOne, len(msgs))]
	p.Step("ingest: engine, one message per call", len(one))
	var bytes int64
	alloc := totalAlloc()
	start := time.Now()
	err = func() error {
		for _, m := range one {
			if _, err := e.Ingest(ctx, core.IngestParams{SessionID: "ingest-one",
				SessionKey: sessionKey("ingest-one"), Message: m}); err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
			bytes += int64(len(m.Raw()))
			p.Add(1)
		}
		return r.flush(ctx, cfg.Engine, e)
	}()
	if err != nil {
		errs = append(errs, fmt.Errorf("one by one: %w", err))
	} else {
		rep.OneByOne = newRate(len(one), bytes, time.Since(start).Seconds(), totalAlloc()-alloc)
	}

	// One turn per call.
	p.Step("ingest: engine, one turn per call", len(msgs))
	bytes = 0
	for _, m := range msgs {
		bytes += int64(len(m.Raw()))
	}
	alloc = totalAlloc()
	start = time.Now()
	err = ingestBatched(ctx, e, "ingest-batch", sessionKey("ingest-batch"), msgs, p)
	if err == nil {
		err = r.flush(ctx, cfg.Engine, e)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("batched: %w", err))
	} else {
		rep.Batched = newRate(len(msgs), bytes, time.Since(start).Seconds(), totalAlloc()-alloc)
	}

	// Bootstrap import of a session file holding the same messages.
	file := filepath.Join(d, "session.jsonl")
	info, err := synth.WriteSessionFile(file, cfg.Seed, cfg.Messages)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	p.Step("ingest: engine, bootstrap import", 1)
	alloc = totalAlloc()
	start = time.Now()
	res, err := bootstrap(ctx, e, "ingest-bootstrap", file)
	if err == nil {
		err = r.flush(ctx, cfg.Engine, e)
	}
	p.Add(1)
	switch {
	case err != nil:
		errs = append(errs, err)
	case res.ImportedMessages != info.Messages:
		errs = append(errs, fmt.Errorf("bootstrap imported %d of %d messages (%s)", res.ImportedMessages, info.Messages, res.Reason))
		fallthrough
	default:
		rep.Bootstrap = newRate(info.Messages, info.Bytes, time.Since(start).Seconds(), totalAlloc()-alloc)
	}

	// Real transcripts.
	for i, path := range cfg.Transcripts {
		ti := TranscriptIngest{Path: path}
		msgs, tr, err := transcriptMessages(path)
		if err != nil {
			ti.Error = err.Error()
			errs = append(errs, err)
			rep.Transcripts = append(rep.Transcripts, ti)
			continue
		}
		ti.Messages, ti.Bytes, ti.Malformed = len(msgs), tr.Size, len(tr.Malformed)
		p.Step("ingest: import "+filepath.Base(path), 1)
		start := time.Now()
		res, err := bootstrap(ctx, e, fmt.Sprintf("transcript-%d", i), path)
		if err == nil {
			err = r.flush(ctx, cfg.Engine, e)
		}
		p.Add(1)
		ti.Seconds = time.Since(start).Seconds()
		ti.Imported = res.ImportedMessages
		if err != nil {
			ti.Error = err.Error()
			errs = append(errs, err)
		} else if ti.Seconds > 0 {
			ti.MsgsPerS = float64(ti.Messages) / ti.Seconds
			ti.MBPerS = float64(ti.Bytes) / ti.Seconds / 1e6
		}
		rep.Transcripts = append(rep.Transcripts, ti)
	}

	rep.OneByOneMsgsPerS = rep.OneByOne.MsgsPerS
	rep.BatchedMsgsPerS = rep.Batched.MsgsPerS
	rep.BatchedMBPerS = rep.Batched.MBPerS
	rep.BootstrapMsgsPerS = rep.Bootstrap.MsgsPerS
	rep.BootstrapMBPerS = rep.Bootstrap.MBPerS
	rep.RawBadgerMsgsPerS = rep.RawBadger.MsgsPerS
	rep.RawBleveMsgsPerS = rep.RawBleve.MsgsPerS
	rep.BatchedOverBadger = ratio(rep.Batched.MsgsPerS, rep.RawBadger.MsgsPerS)
	rep.BatchedOverBleve = ratio(rep.Batched.MsgsPerS, rep.RawBleve.MsgsPerS)
	rep.BootstrapOverBleve = ratio(rep.Bootstrap.MsgsPerS, rep.RawBleve.MsgsPerS)
	return errors.Join(errs...)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

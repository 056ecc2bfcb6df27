package inspect

import (
	"context"
	"fmt"

	"github.com/lossless-engine/contextengine/internal/diskusage"
	"github.com/lossless-engine/contextengine/store"
)

// AgentStats are one agent's totals.
type AgentStats struct {
	Conversations int64 `json:"conversations"`
	Messages      int64 `json:"messages"`
	Summaries     int64 `json:"summaries"`
	// RefusedSummaries counts the summaries of Summaries the extractive
	// fallback wrote because the model's summary was refused
	// (dag.MethodRefused).
	RefusedSummaries int64 `json:"refusedSummaries"`
	// Bytes is the raw JSON bytes of the stored messages.
	Bytes  int64 `json:"bytes"`
	Tokens int64 `json:"tokens"`
}

// Stats are the store's totals.
type Stats struct {
	Agents map[string]AgentStats `json:"agents"`
	// DiskBytes is what the store takes on disk (store.Store.Size): for
	// Badger the blocks allocated to its directory's files, recall index
	// aside, as du counts them; for PostgreSQL the database's size.
	DiskBytes int64 `json:"diskBytes"`
	// IndexBytes is the blocks allocated to the recall index's files, as
	// du counts them (0 without one).
	IndexBytes int64 `json:"indexBytes"`
	// Format is the store format version.
	Format int `json:"format"`
}

// ReadStats returns per-agent totals and the disk size of s, written in
// store format version format, with the size of the recall index in
// directory indexDir ("" when there is none beside the store). It reads
// the conversation records only.
func ReadStats(ctx context.Context, s store.Store, format int, indexDir string) (Stats, error) {
	st := Stats{Agents: map[string]AgentStats{}, Format: format}
	err := s.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				return fmt.Errorf("lossless: read conversations: %w", err)
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("lossless: %w", err)
			}
			a := st.Agents[cr.Agent]
			a.Conversations++
			a.Messages += cr.Messages
			a.Summaries += cr.Summaries
			a.RefusedSummaries += cr.RefusedSummaries
			a.Bytes += cr.Bytes
			a.Tokens += cr.Tokens
			st.Agents[cr.Agent] = a
		}
		return nil
	})
	if err != nil {
		return Stats{}, err
	}
	if st.DiskBytes, err = s.Size(ctx); err != nil {
		return Stats{}, fmt.Errorf("lossless: stats: %w", err)
	}
	if indexDir == "" {
		return st, nil // no Bleve index beside the store
	}
	st.IndexBytes, _ = diskusage.Dir(indexDir) // a figure, not a check: an unreadable file counts 0
	return st, nil
}

package main

import (
	"context"
	"fmt"

	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store"
	"github.com/lossless-engine/contextengine/store/badgerstore"
)

// noFormatProblem is doctor's problem for a store that holds data but no
// readable format record (lossless.ErrNoFormat, issue 37 point 3): what
// it holds, read from its Badger store directly when it is a directory
// (shown is its name as doctor shows it, dir where it is), and what to do.
func noFormatProblem(ctx context.Context, shown, dir string) string {
	holds := "data"
	if !config.IsStoreURL(dir) {
		if convs, msgs, err := countRecords(ctx, dir); err == nil {
			holds = fmt.Sprintf("%d conversation records counting %d messages", convs, msgs)
		}
	}
	return fmt.Sprintf("store %s holds %s, but its format record is missing or unreadable: the store is damaged, not new. Every command and the engine refuse it, and nothing was written to it; do not delete or re-create it. Restore the format record (from a backup, or by hand as the README says under \"Only an empty store becomes a new store\") and everything in it reads again",
		shown, holds)
}

// countRecords counts the conversation records of the Badger store at dir
// and the messages they count, opened read-only without the engine.
func countRecords(ctx context.Context, dir string) (convs, msgs int64, err error) {
	st, err := badgerstore.Open(ctx, badgerstore.Options{Dir: dir, ReadOnly: true})
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	err = st.View(ctx, func(r store.Reader) error {
		for cr, err := range r.Conversations() {
			if err != nil {
				return err
			}
			convs++
			msgs += cr.Messages
		}
		return nil
	})
	return convs, msgs, err
}

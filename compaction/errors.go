package compaction

import "errors"

// Sentinel errors of package compaction, checked with errors.Is.
var (
	// ErrNoSessionFile is returned by Compact when it is given no transcript.
	ErrNoSessionFile = errors.New("compaction: no session file")
	// ErrTranscriptChanged is returned when the transcript grew or shrank
	// while the summary was being made; nothing was written.
	ErrTranscriptChanged = errors.New("compaction: transcript changed during compaction")
)

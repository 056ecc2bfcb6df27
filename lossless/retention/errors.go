package retention

import "errors"

// ErrChanged reports a conversation written to after the pass decided to
// delete it: the pass keeps it (Recheck).
var ErrChanged = errors.New("lossless: conversation changed since the retention decision")

// ErrGone reports a conversation a concurrent pass deleted first
// (Recheck).
var ErrGone = errors.New("lossless: conversation already deleted")

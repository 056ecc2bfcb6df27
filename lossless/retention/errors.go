package retention

import "errors"

// errConvChanged reports a conversation written to after retention decided
// to delete it.
var errConvChanged = errors.New("lossless: conversation changed since the retention decision")

// errConvGone reports a conversation a concurrent pass deleted first.
var errConvGone = errors.New("lossless: conversation already deleted")

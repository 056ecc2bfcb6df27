package orchestrate

import "errors"

// ErrCompacting is Run's error when another process of a shared store
// compacts the conversation and the caller would not wait.
var ErrCompacting = errors.New("lossless: compact: another process is compacting this conversation")

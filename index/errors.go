package index

import (
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
)

// Sentinel errors of the package, checked with errors.Is.
var (
	// ErrClosed is returned by a Recall used after Close; it wraps
	// core.ErrClosed.
	ErrClosed = fmt.Errorf("index: %w", core.ErrClosed)
	// ErrNoAgent is returned by a search without an agent that does not set
	// AllAgents: recall never crosses agents unless asked to.
	ErrNoAgent = errors.New("index: query without agent (set Query.AllAgents to search every agent)")
)

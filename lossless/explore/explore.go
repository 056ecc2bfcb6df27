// Package explore is the explorer's read-only queries over a lossless
// engine's store: sessions a page at a time with the figures of their
// active contexts, a session by its id, the summary DAG a page at a time
// down to the raw bytes of a message, grep a page at a time with a cursor,
// and a census of the summaries. The
// explorer's web page (package ui) and `lossless` (cmd/lossless) answer
// with them.
//
// Every query reads one consistent snapshot through the engine's exported
// read API (lossless.Engine.View, lossless.StoreError and the descriptions
// the engine gives: lossless.DescribeConversation,
// lossless.ReadMessageText, lossless.NewGrepMatcher); nothing here
// writes, and every long read is bounded (MaxContextScan, MaxPageLimit,
// DefaultGrepScan) so that a view answers quickly on a large store. Errors of bad arguments wrap lossless.ErrBadToolArgs, a
// missing record core.ErrNotFound, an unknown conversation
// core.ErrUnknownSession.
//
// The engine's own explanations are package lossless/explain's, below the
// engine (it never imports lossless): lossless.Engine.AssembleReport (an
// assembled context, part by part) and lossless.Engine.ExplainRecall (the
// recall ranking) are its thin wrappers.
package explore

import "github.com/lossless-engine/contextengine/lossless"

// Explorer answers the explorer's queries on one engine. It keeps no state
// of its own and is safe for concurrent use.
type Explorer struct {
	e *lossless.Engine
	// maxScan is MaxContextScan (tests lower it).
	maxScan int
}

// New returns the Explorer of e. The engine stays the caller's to close;
// a query after its Close returns an error wrapping core.ErrClosed.
func New(e *lossless.Engine) *Explorer {
	return &Explorer{e: e, maxScan: MaxContextScan}
}

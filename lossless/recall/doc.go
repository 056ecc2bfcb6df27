// Package recall is the engine's recall in Assemble: what the turn's
// prompt finds in the history outside the assembled window, rendered into
// one <lcm_recall> user message at the end of the context.
//
// It ranks through the recall index (package index: the contract and
// ranking; index/bleveindex or the store's own search underneath) with the
// window's exclusions (what the window shows, by position and by text),
// splits the token budget between the window and the block (a question
// about the past may take more of it, split.go), reads the chosen items
// from the store in one batched read and renders them (block.go). It also
// keeps the engine's recall index (Index, index.go): opened beside the
// store and rebuilt from it, or a shared store's own search caught up with
// what other processes left unindexed (catchup.go), fed with the docs of
// what the engine commits (doc ids, indexed texts and their keys:
// docs.go).
//
// The package never imports package lossless: it declares what it needs of
// the engine as Port (the store, the token counter, the per-conversation
// window state, the inner assemble of the window), which lossless
// implements over its *Engine (recallPort in lossless/recall.go); the
// engine calls Index's methods from its write path and its Open and
// Close.
package recall

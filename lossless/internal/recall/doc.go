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
// Recall in Assemble computes its block from arguments, without calling
// back: the engine's Assemble door asks Begin for the first window's
// parameters (the budget less the recall share), assembles that window
// itself (package assemble, under the engine's window lock) and hands it
// to the Assembly with what the window cache shows (Window, Shown); a
// question whose recalled turns need more room asks for a smaller window
// the same way (split.go); Result is the context with its block. It was
// kept apart from package assemble rather than merged with it: the two
// meet only at that exchange of values, and the index's lifecycle (open,
// rebuild, catch-up, the docs of what the engine commits) is recall's
// alone.
//
// The package never imports package lossless nor another part: it takes
// Deps (config.Recall, the token counter, the store, its Index, and Names,
// the cache of conversations' names, the one interface left: the engine's
// state cache implements it, the tests a map) and a Call resolved at the
// engine's door (its budget included); the engine calls Index's methods
// from its write path and its Open and Close.
package recall

// Package explain explains what the lossless engine did, for the explorer
// (package lossless/explore's web page and `lossless assemble --json`): an
// assembled context part by part with each message's tokens (Assemble,
// Report), and the recall ranking item by item with why each ranks where
// it does (Recall, RecallExplained). Their numbers are the engine's own:
// the same assemble, counter and recall the engine runs.
//
// The package never imports package lossless nor another part: it takes
// values and a store.Reader. The engine's AssembleReport assembles (its
// AssembleWithDetails) and hands the result to Assemble, then the stored
// conversation's snapshot to TailSeqs; its ExplainRecall ranks twice (its
// RecallWith) and hands both rankings and a snapshot to Items, then names
// each item's session and cuts its snippet from the Source Items read
// (the engine's SessionInfo.Name and grep's snippet). lossless's
// AssembleReport and ExplainRecall are those doors, and its types of the
// same names are aliases of these. Nothing here writes.
package explain

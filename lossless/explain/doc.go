// Package explain explains what the lossless engine did, for the explorer
// (package lossless/explore's web page and `lossless assemble --json`): an
// assembled context part by part with each message's tokens (Assemble,
// Report), and the recall ranking item by item with why each ranks where
// it does (Recall, RecallExplained). Their numbers are the engine's own:
// the same assemble, counter and recall the engine runs.
//
// The package never imports package lossless: it declares what it needs
// of the engine as Port (assemble, recall, the store's snapshot and the
// few descriptions the engine gives), which lossless implements over its
// *Engine (explainPort in lossless/port_explain.go); lossless's
// AssembleReport and ExplainRecall are thin wrappers, and its types of the
// same names are aliases of these. Nothing here writes.
package explain

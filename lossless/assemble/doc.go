// Package assemble is the engine's Assemble: the window of a
// conversation's active context that fits the call's token budget, read
// backwards from its tail, rendered into the messages the model sees.
//
// It resolves a call once, at its door (Resolve: its agent, its
// conversation, the budget it really has), and hands the result down as a
// *Call: the window's read, recall, the fork prefix of a subagent and the
// projection epoch all take it instead of looking the session up again.
// The window's read fetches, in the same snapshot as the items and in one
// batched read (store.Reader.Get), what the rest of the call needs of the
// store: the conversation's record when the call needs it (a shared store
// checks its Created; a thread-bootstrap host gets its epoch from it) and
// the session's subagent records (the fork prefix). A warm assemble (the
// session resolved before, its window cached) thus reads the store twice —
// that batch and the items — and once more, in one batched read, for the
// recalled items.
//
// The parts:
//
//   - the walk of the window within the budget (Walk, shared with the
//     fork prefix of a subagent), its leading summaries kept ahead of a
//     cut, a tool result too large shown by its reference (window.go);
//   - the rendering of stored items and summaries into messages
//     (ItemMessage, SummaryMessage, RenderSummary) and the system prompt
//     addition naming the recall tools (render.go);
//   - the budgets as the host gives them and the budget each call really
//     has (HostBudgets, BudgetTable; budget.go), and the host's own count
//     a result must fit (fitHostCount);
//   - the context projection of thread-bootstrap hosts (ProjectionMode,
//     Fingerprint, the epoch; projection.go);
//   - the cache of the per-conversation state the cached windows live in,
//     bounded in bytes, with the sessions' cached resolutions and display
//     names (Cache, cache.go; the state type stays the engine's).
//
// The package never imports package lossless: it declares what it needs of
// the engine as Port (the store, the token counter, the conversation's
// cached window, recall, the subagent records and fork caches the fork
// prefix of fork.go reads through lossless/subagent's Port), which
// lossless implements over its *Engine (assemblePort in
// lossless/port_assemble.go).
package assemble

// Package assemble is the engine's Assemble: the window of a
// conversation's active context that fits the call's token budget, read
// backwards from its tail, rendered into the messages the model sees.
//
// A call is resolved once, at the engine's door (package lossless's
// Assemble: its agent, its conversation through the engine's cache;
// NewCall: the budget it really has), and handed down as a *Call: the
// window's read, recall, the fork prefix of a subagent and the projection
// epoch all take it instead of looking the session up again.
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
//   - the window within the budget (Inner; Walk, shared with the
//     engine's fork prefix of a subagent), its leading summaries kept ahead of a
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
// The package never imports package lossless nor another part; it takes
// concrete values: Deps (the store, the token counter, whether the store is
// shared, the default budget, and the plain function that makes a large
// tool result's reference), the *Call, and the conversation's cached
// window (Cached), which Inner gets and hands back (Assembled) while the
// engine holds the window lock. The engine's door does the rest: it enters
// and leaves the engine, takes the lock, composes the window with recall's
// block (lossless/internal/recall computes it from the windows the door hands it),
// prepends a forked subagent's parent context (lossless/subagent), and
// ends with Finish (the host's count, the projection).
package assemble

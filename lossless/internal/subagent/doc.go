// Package subagent is the engine's subagent lifecycle over the store: the
// records of prepared, active and ended children, their fork snapshots
// (references to the parent's context items taken at the spawn), the
// removal of a preparation (rollback, deletion, the sweep of expired ones
// and of snapshots a crash left without a record), the links of ended
// children to their parent, and the cache of a fork's parsed parent
// messages.
//
// It never imports package lossless and never calls back into it: its
// steps are methods of a Lifecycle, a value of concrete dependencies the
// engine makes from its fields (the store, its free-space guard, the fork
// caches, the subagent lock's mutex and, on a shared store, the store's
// store.Locker), plus pure functions of the call's parameters (CheckSpawn,
// NewPreparation, ImportsParent, CheckEnded). Package lossless keeps the
// doors (PrepareSubagentSpawn, OnSubagentEnded, SweepSubagents, Subagent,
// LinkedChildren in lossless/subagent.go): entering the engine, the
// call's agent, the parent's look-up and the import of its transcript,
// taking Lifecycle.Lock. Refused parameters wrap records.ErrBadParams
// (lossless.ErrBadParams). Assemble's fork prefix (lossless/assemble)
// uses Lifecycle.Started and the fork caches.
//
// A preparation is a subagent record keyed by the child (its agent and
// session key) and, for a fork, a snapshot of the parent's active context
// taken at the spawn: the parent's context item records (references to the
// parent's messages and summaries: sequence numbers and summary ids, never
// the messages themselves), at the parent's positions:
//
//	Subagent(sub)                   the record (store.Subagent)
//	SubagentByChild(agent, id)      the child's session id, when given
//	ForkItems(sub)                  the parent's items, as they were at the spawn
//	SubagentLinks(parentConv)       the ended children linked to a parent,
//	                                with their session keys
//
// (badgerstore keys them under 'G', 'g', 'Y' and 'K'), where sub is the
// first 8 bytes of SHA-256 over agent 0x00 childSessionKey (ID).
// The snapshot is written before the record: a crash in between leaves
// snapshot keys without a record, invisible and removed by Sweep.
package subagent

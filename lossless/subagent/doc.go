// Package subagent is the engine's subagent lifecycle over the store: the
// records of prepared, active and ended children, their fork snapshots
// (references to the parent's context items taken at the spawn), the
// removal of a preparation (rollback, deletion, the sweep of expired ones
// and of snapshots a crash left without a record), the links of ended
// children to their parent, and the cache of a fork's parsed parent
// messages.
//
// It never imports package lossless: the stateful parts take a Port, which
// lossless implements over its *Engine (subagentPort in
// lossless/subagent.go), and the engine keeps the calls' doors
// (PrepareSubagentSpawn, OnSubagentEnded, SweepSubagents, Assemble's fork
// prefix) and their locks.
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

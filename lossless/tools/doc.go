// Package tools is the engine's agent tools: the recall tools offered to
// the model (lcm_grep, lcm_describe, lcm_expand) with their arguments,
// schemas and handlers, and what they run — Grep over the stored messages
// and summaries of a conversation or an agent, a summary's or a message's
// description and the paged expansion of a summary (or a large-content
// reference) into the raw messages it covers, or of a message into it and
// its neighbours.
//
// A message is named by its id "<conv>:<seq>" (MessageID, the recall
// block's citation of a turn): Grep's message hits carry it with the leaf
// summary covering the message (CoveredBy), and DescribeMessage and Expand
// take it (lcm_describe hands a message id to DescribeMessage).
//
// It never imports package lossless and never calls back into it: it
// computes over the store (store.Store, read in its own transactions) and
// the conversations the caller resolved — Grep over a list of conversation
// ids, Describe, DescribeMessage and Expand over a Conv (a read-only
// dag.Store of one stored conversation) — and reads a tool call's
// arguments (GrepArgs, DescribeToolArgs, ExpandArgs) and writes its result
// (GrepOutput, Output). Package lossless keeps the doors (Engine.Grep,
// DescribeSummary, DescribeMessage, ExpandSummary, Tools, ToolDefs,
// CallTool in lossless/tools.go): the call's session and agent, the
// conversation holding an id (the session's, a forked child's parent or
// an ended subagent's, else the agent's other conversations: Holds and
// AgentHolding), entering the engine, and the tools' handlers; it
// re-exports the types.
package tools

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
// take it (lcm_describe hands a message id to DescribeMessage). A bare summary id is looked for in the session's
// conversation, the ones Port.Holding reaches, then the agent's others.
//
// It never imports package lossless: it takes a Port, which lossless
// implements over its *Engine (toolsPort in lossless/port_tools.go), with
// the engine's conversation handle as its type parameter. Package lossless
// keeps the doors (Engine.Grep, DescribeSummary, ExpandSummary, Tools,
// ToolDefs, CallTool) as thin wrappers and re-exports the types.
package tools

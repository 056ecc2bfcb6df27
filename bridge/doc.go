// Package bridge serves a context engine over newline-delimited JSON-RPC 2.0,
// so that OpenClaw (a Node.js host) can drive a Go engine running as a
// long-lived child process: `lossless serve --stdio`, started by the plugin in
// openclaw-plugin/.
//
// # Framing
//
// Every message is one JSON object on one line, terminated by "\n", in both
// directions. The params and results are exactly the OpenClaw JSON shapes of
// the context-engine contract (the JSON tags of package core), so a message
// object passes through byte for byte: requests are decoded into
// core.Message values that keep their raw bytes, and results are written
// from those bytes without HTML escaping.
//
// # Methods (client → server)
//
//	initialize            {config?, agentDir?, workspaceDir?, host?, protocolVersion?}
//	                      → {protocolVersion, info, methods, server}
//	info                  → core.Info
//	bootstrap             core.BootstrapParams   → core.BootstrapResult
//	maintain              core.MaintainParams    → core.MaintainResult
//	ingest                core.IngestParams      → core.IngestResult
//	ingestBatch           core.IngestBatchParams → core.IngestBatchResult
//	afterTurn             core.AfterTurnParams   → null
//	assemble              core.AssembleParams    → core.AssembleResult
//	compact               core.CompactParams     → core.CompactResult
//	commitTurn            core.CommitTurnParams  → core.CommitTurnResult
//	prepareSubagentSpawn  core.SubagentSpawnParams → null | {rollbackId}
//	rollbackSubagentSpawn {rollbackId}           → null
//	onSubagentEnded       core.SubagentEndedParams → null
//	dispose               → null (closes the engine when it is an io.Closer)
//	$/cancelRequest       notification {id}: cancels that request's context
//
// initialize must come first: it calls the factory with the plugin's config
// (plugins.entries.<id>.config), the host's directories and its name
// (host: core.HostOpenClaw from the OpenClaw plugin, which makes the host's
// model lossless's default summarizer; FactoryOptions.Host). Its result lists
// in methods the optional methods the engine implements, so the JavaScript
// side exposes exactly those to OpenClaw (whose behaviour depends on which
// methods exist). An optional method the engine lacks answers -32601. When
// Options.AfterTurnNewMessagesOnly is set, the result says so
// (afterTurnNewMessagesOnly) and the client may send afterTurn only the new
// messages, with prePromptMessageCount 0.
//
// # Host callbacks (server → client)
//
// OpenClaw's runtimeContext carries two functions, rewriteTranscriptEntries
// and llm.complete, which cannot cross a pipe. The client lists the ones the
// host offers for a request in the envelope field "hostCallbacks"
// (["rewriteTranscriptEntries", "llm.complete"]); the server then fills
// core.RuntimeContext's RewriteTranscriptEntries and LLMComplete with stubs
// that send the server → client requests
//
//	host/rewriteTranscriptEntries {requestId, request: core.RewriteRequest}
//	host/llmComplete              {requestId, request: core.LLMRequest}
//
// where requestId is the id of the client request the callback belongs to.
// The client answers them like any JSON-RPC request. When the engine's
// context ends first, the server sends $/cancelRequest for the callback.
//
// # Errors
//
// A line that is not JSON gets -32700 (parse error) with a null id and the
// server keeps going; a request object that is not valid JSON-RPC gets -32600;
// an unknown method -32601; params that do not decode -32602; a method before
// initialize -32002; a cancelled request -32800; an engine error -32000 with
// the error's text as message and, for the core sentinels, data.kind (for
// example "unknown_session"); a panic in the engine -32603.
//
// A line nested deeper than encoding/json's 10000 levels gets -32700 saying
// so (under the request's id when it comes before its params). A session
// id, session key or agent id (sessionId, sessionKey, agentId and the keys
// ending in SessionId, SessionKey, AgentId, in params and in their objects
// down to three levels, a "message" aside) that is not valid UTF-8 — an
// invalid byte or an unpaired surrogate escape such as \ud800, which
// encoding/json would silently replace with U+FFFD — gets -32602 naming the
// key, with data.kind "invalid_session_id", before the engine is called.
package bridge

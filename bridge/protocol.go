package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lossless-engine/contextengine/core"
)

// ProtocolVersion is the version of this bridge protocol, reported by
// initialize. A client that needs a different version should refuse to go on.
const ProtocolVersion = 1

// JSON-RPC error codes used by the server.
const (
	CodeParseError           = -32700 // the line is not JSON
	CodeInvalidRequest       = -32600 // JSON, but not a JSON-RPC 2.0 request
	CodeMethodNotFound       = -32601 // unknown method, or an optional method the engine lacks
	CodeInvalidParams        = -32602 // params do not decode into the method's type
	CodeInternalError        = -32603 // the engine panicked
	CodeServerBusy           = -32001 // too many requests waiting (Options.MaxQueued): retry later
	CodeServerNotInitialized = -32002 // a method before initialize
	CodeRequestCancelled     = -32800 // the request was cancelled ($/cancelRequest)
	CodeEngineError          = -32000 // the engine returned an error
)

// Method names of the protocol.
const (
	MethodInitialize            = "initialize"
	MethodInfo                  = "info"
	MethodBootstrap             = "bootstrap"
	MethodMaintain              = "maintain"
	MethodIngest                = "ingest"
	MethodIngestBatch           = "ingestBatch"
	MethodAfterTurn             = "afterTurn"
	MethodAssemble              = "assemble"
	MethodCompact               = "compact"
	MethodCommitTurn            = "commitTurn"
	MethodPrepareSubagentSpawn  = "prepareSubagentSpawn"
	MethodRollbackSubagentSpawn = "rollbackSubagentSpawn"
	MethodOnSubagentEnded       = "onSubagentEnded"
	MethodDispose               = "dispose"
	MethodCancelRequest         = "$/cancelRequest"
	// MethodToolsCall runs one of the engine's model tools (core.ToolCaller)
	// for a session: params core.ToolCallParams, result core.ToolCallResult.
	MethodToolsCall = "tools/call"
	// MethodToolsList returns the engine's tool definitions ([]core.ToolDef).
	MethodToolsList = "tools/list"
	// MethodExplorer returns where the process serves the memory explorer
	// (ExplorerInfo), for a client that proxies it (the OpenClaw plugin's
	// Memory tab); method not found when the process serves none
	// (Options.Explorer).
	MethodExplorer = "explorer"

	// Server → client requests.
	MethodHostRewriteTranscriptEntries = "host/rewriteTranscriptEntries"
	MethodHostLLMComplete              = "host/llmComplete"
	MethodHostReadTranscript           = "host/readTranscript"
)

// Host callback names a client lists in a request's "hostCallbacks" field.
const (
	CallbackRewriteTranscriptEntries = "rewriteTranscriptEntries"
	CallbackLLMComplete              = "llm.complete"
	// CallbackReadTranscript: the host reads the session's transcript for
	// the engine (OpenClaw keeps transcripts in SQLite; the plugin reads
	// them through the SDK): request core.TranscriptReadRequest, result
	// core.TranscriptPage.
	CallbackReadTranscript = "readTranscript"
)

// Error is a JSON-RPC error object. It is also what a host callback returns
// to the engine when the client answered with an error.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error formats the error with its code.
func (e *Error) Error() string {
	return fmt.Sprintf("bridge: %s (code %d)", e.Message, e.Code)
}

// ErrConnectionClosed is returned by a host callback when the client went
// away before answering.
var ErrConnectionClosed = errors.New("bridge: connection closed")

// ErrNotInitialized is wrapped by the error a method gets before initialize.
var ErrNotInitialized = errors.New("bridge: server not initialized")

// InitializeParams are the params of initialize: core.FactoryOptions (the
// plugin's own config, the host's directories and name) and the client's
// protocol version.
type InitializeParams struct {
	core.FactoryOptions
	ProtocolVersion int `json:"protocolVersion,omitempty"`
}

// InitializeResult is what initialize returns.
type InitializeResult struct {
	ProtocolVersion int       `json:"protocolVersion"`
	Info            core.Info `json:"info"`
	// Methods lists the contract methods the engine implements, the required
	// ones (ingest, assemble, compact) included.
	Methods []string   `json:"methods"`
	Server  ServerInfo `json:"server"`
	// AfterTurnNewMessagesOnly tells the client that the engine's afterTurn
	// reads only the messages after prePromptMessageCount, so the client may
	// send just those (with prePromptMessageCount 0) instead of the whole
	// session view every turn (see Options.AfterTurnNewMessagesOnly).
	AfterTurnNewMessagesOnly bool `json:"afterTurnNewMessagesOnly,omitempty"`
}

// ExplorerInfo is what explorer returns: the base URL of the memory
// explorer the serving process runs on loopback ("http://127.0.0.1:PORT/")
// and its access token, which a proxy sends in the ui.TokenHeader header
// (the browser never sees it).
type ExplorerInfo struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// ServerInfo names the server process.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// SpawnResult is what prepareSubagentSpawn returns when the engine prepared
// something that can be rolled back (null otherwise).
type SpawnResult struct {
	RollbackID string `json:"rollbackId"`
}

// RollbackParams are the params of rollbackSubagentSpawn.
type RollbackParams struct {
	RollbackID string `json:"rollbackId"`
}

// CancelParams are the params of $/cancelRequest.
type CancelParams struct {
	ID json.RawMessage `json:"id"`
}

// CallbackParams are the params of a server → client host callback: the id
// of the client request it belongs to and the callback's argument.
type CallbackParams struct {
	RequestID json.RawMessage `json:"requestId"`
	Request   any             `json:"request"`
}

// Message is one decoded JSON-RPC line: a request (Method and ID), a
// notification (Method, no ID) or a response (ID and Result or Error).
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
	// HostCallbacks lists the runtimeContext callbacks the host offers for
	// this request (CallbackRewriteTranscriptEntries, CallbackLLMComplete).
	HostCallbacks []string `json:"hostCallbacks,omitempty"`

	hasMethod bool
}

// IsRequest reports whether m is a request that expects a response.
func (m *Message) IsRequest() bool { return m.hasMethod && m.ID != nil }

// IsNotification reports whether m is a notification (a method, no id).
func (m *Message) IsNotification() bool { return m.hasMethod && m.ID == nil }

// IsResponse reports whether m is a response.
func (m *Message) IsResponse() bool { return !m.hasMethod }

// DecodeMessage decodes one line. It returns a *Error with CodeParseError
// when the line is not JSON, and CodeInvalidRequest when it is JSON but not a
// JSON-RPC 2.0 request, notification or response; in that case the returned
// Message carries the id when one could be read (for the error response).
func DecodeMessage(line []byte) (Message, *Error) {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		if nestedDeeper(line, maxJSONDepth) {
			// encoding/json's limit: the line may well be valid JSON.
			return Message{}, &Error{Code: CodeParseError, Message: fmt.Sprintf("parse error: the line nests arrays and objects deeper than %d levels, the JSON decoder's limit", maxJSONDepth)}
		}
		return Message{}, &Error{Code: CodeParseError, Message: "parse error: line is not valid JSON"}
	}
	if len(line) == 0 || line[0] != '{' {
		return Message{}, &Error{Code: CodeInvalidRequest, Message: "invalid request: not a JSON object (batches are not supported)"}
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(line, &probe); err != nil {
		return Message{}, &Error{Code: CodeParseError, Message: "parse error: " + err.Error()}
	}
	var m Message
	if raw, ok := probe["id"]; ok {
		if !validID(raw) {
			return Message{}, &Error{Code: CodeInvalidRequest, Message: "invalid request: id must be a string, a number or null"}
		}
		m.ID = raw
	}
	invalid := func(msg string) (Message, *Error) {
		return Message{ID: m.ID}, &Error{Code: CodeInvalidRequest, Message: "invalid request: " + msg}
	}
	if err := json.Unmarshal(probe["jsonrpc"], &m.JSONRPC); err != nil || m.JSONRPC != "2.0" {
		return invalid(`"jsonrpc" must be "2.0"`)
	}
	if raw, ok := probe["method"]; ok {
		if err := json.Unmarshal(raw, &m.Method); err != nil || m.Method == "" {
			return invalid(`"method" must be a non-empty string`)
		}
		m.hasMethod = true
		if p, ok := probe["params"]; ok && !isNull(p) {
			if c := firstByte(p); c != '{' && c != '[' {
				return invalid(`"params" must be an object or an array`)
			}
			m.Params = p
		}
		if hc, ok := probe["hostCallbacks"]; ok && !isNull(hc) {
			if err := json.Unmarshal(hc, &m.HostCallbacks); err != nil {
				return invalid(`"hostCallbacks" must be an array of strings`)
			}
		}
		return m, nil
	}
	// A response.
	if m.ID == nil {
		return invalid(`a message needs a "method" or an "id"`)
	}
	res, hasRes := probe["result"]
	errRaw, hasErr := probe["error"]
	if hasErr && !isNull(errRaw) {
		m.Error = new(Error)
		if err := json.Unmarshal(errRaw, m.Error); err != nil {
			return invalid(`"error" must be an object with a code and a message`)
		}
		return m, nil
	}
	if !hasRes {
		return invalid(`a response needs a "result" or an "error"`)
	}
	m.Result = res
	return m, nil
}

func validID(raw json.RawMessage) bool {
	switch c := firstByte(raw); {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	case c == 'n':
		return isNull(raw)
	}
	return false
}

func firstByte(b []byte) byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func isNull(b []byte) bool { return string(bytes.TrimSpace(b)) == "null" }

// idKey is the map key of a request id.
func idKey(id json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, id) != nil {
		return string(id)
	}
	return buf.String()
}

// encode marshals v without HTML escaping and without the trailing newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// errorKind names the core sentinel err wraps, for Error.Data.
func errorKind(err error) string {
	for _, k := range []struct {
		err  error
		kind string
	}{
		{core.ErrClosed, "closed"},
		{core.ErrInvalidMessage, "invalid_message"},
		{core.ErrUnknownRole, "unknown_role"},
		{core.ErrEmptySessionID, "empty_session_id"},
		{core.ErrInvalidSessionID, "invalid_session_id"},
		{core.ErrUnknownSession, "unknown_session"},
		{core.ErrNotFound, "not_found"},
		{core.ErrMalformedLine, "malformed_line"},
		{core.ErrInvalidEngine, "invalid_engine"},
		{core.ErrHostRequirements, "host_requirements"},
		{core.ErrSummarizerFailed, "summarizer_failed"},
		{core.ErrFormatTooNew, "format_too_new"},
		{core.ErrTooLarge, "too_large"},
	} {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	return ""
}

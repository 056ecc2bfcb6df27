package core

import (
	"context"
	"encoding/json"
	"strings"
)

// What a host that keeps transcripts itself (OpenClaw 2026.9.6 keeps them
// in its SQLite store) gives an engine: the session's typed identity
// (SessionTarget), a page-wise read of the visible transcript
// (RuntimeContext.ReadTranscript, relayed by a plugin from the host's SDK),
// and the storage kind (runtimeContext.transcriptStorage).

// SessionTarget is the typed identity of a session that OpenClaw passes as
// sessionTarget on every lifecycle call.
type SessionTarget struct {
	AgentID    string `json:"agentId,omitempty"`
	SessionID  string `json:"sessionId,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	StorePath  string `json:"storePath,omitempty"`
	ThreadID   string `json:"threadId,omitempty"`
}

// ParseSessionTarget decodes a sessionTarget value. Anything that is not a
// JSON object (absent, null, a string) gives the zero target and false.
func ParseSessionTarget(raw json.RawMessage) (SessionTarget, bool) {
	var t SessionTarget
	s := strings.TrimSpace(string(raw))
	if s == "" || s[0] != '{' {
		return t, false
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return SessionTarget{}, false
	}
	return t, t != SessionTarget{}
}

// TranscriptStorageSQLite is runtimeContext.transcriptStorage.kind of a host
// that keeps transcripts in its own database.
const TranscriptStorageSQLite = "sqlite"

// TranscriptStorageKind returns runtimeContext.transcriptStorage.kind, or "".
func (r *RuntimeContext) TranscriptStorageKind() string {
	if r == nil {
		return ""
	}
	raw, ok := r.Values["transcriptStorage"]
	if !ok {
		return ""
	}
	var ts struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(raw, &ts) != nil {
		return ""
	}
	return ts.Kind
}

// IsSessionRef reports whether a sessionFile value is a host session
// reference rather than a path: OpenClaw's session keys ("agent:…") and
// SQLite markers ("sqlite:<agentId>:<sessionId>:<storePath>"). Such a value
// is opaque and never opened as a file.
func IsSessionRef(sessionFile string) bool {
	return strings.HasPrefix(sessionFile, "agent:") || strings.HasPrefix(sessionFile, "sqlite:")
}

// HostKeepsTranscript reports whether the host keeps the session's
// transcript itself (a SQLite store, or a session reference in place of a
// file), so that an engine must never open sessionFile as a path nor
// rotate the transcript.
func HostKeepsTranscript(sessionFile string, rc *RuntimeContext) bool {
	return rc.TranscriptStorageKind() == TranscriptStorageSQLite || IsSessionRef(sessionFile)
}

// TranscriptReadRequest asks the host for one page of the session's visible
// transcript after Cursor ("" or nil: from the start).
type TranscriptReadRequest struct {
	Cursor      *string `json:"cursor,omitempty"`
	MaxMessages int     `json:"maxMessages,omitempty"`
	MaxBytes    int     `json:"maxBytes,omitempty"`
}

// Kinds of TranscriptPage.
const (
	TranscriptPageKind        = "page"
	TranscriptResetKind       = "reset"
	TranscriptMissingKind     = "missing"
	TranscriptUnavailableKind = "unavailable"
)

// TranscriptPage is one answer of ReadTranscript, in the shape of
// OpenClaw's readSessionTranscriptVisibleMessageDelta: a page of entries
// with the cursor to continue from; "reset" (the cursor no longer applies:
// the transcript was rewritten or reset; read again from the start);
// "missing" (no transcript); "unavailable" (try later; Reason says why).
type TranscriptPage struct {
	Kind    string            `json:"kind"`
	Cursor  json.RawMessage   `json:"cursor,omitempty"`
	HasMore bool              `json:"hasMore,omitempty"`
	Entries []TranscriptEntry `json:"entries,omitempty"`
	Reason  string            `json:"reason,omitempty"`
}

// CursorString returns the page's cursor as a string (a JSON string as
// is, any other JSON value as its text), or "".
func (p TranscriptPage) CursorString() string {
	s := strings.TrimSpace(string(p.Cursor))
	if s == "" || s == "null" {
		return ""
	}
	var str string
	if json.Unmarshal(p.Cursor, &str) == nil {
		return str
	}
	return s
}

// TranscriptEntry is one message entry of a host transcript page.
type TranscriptEntry struct {
	EntryID        string  `json:"entryId"`
	ParentID       *string `json:"parentId,omitempty"`
	Seq            int64   `json:"seq"`
	Message        Message `json:"message"`
	Role           string  `json:"role,omitempty"`
	CreatedAt      any     `json:"createdAt,omitempty"`
	IdempotencyKey string  `json:"idempotencyKey,omitempty"`
}

// HostTranscriptReader reads one page of the session's transcript from the
// host (RuntimeContext.ReadTranscript).
type HostTranscriptReader func(ctx context.Context, req TranscriptReadRequest) (TranscriptPage, error)

// ToolCaller is implemented by engines that offer tools to the model (the
// lossless engine's lcm_grep, lcm_describe, lcm_expand): a host registers
// ToolDefs with its agent and routes the model's calls to CallTool.
type ToolCaller interface {
	ToolDefs() []ToolDef
	CallTool(ctx context.Context, p ToolCallParams) (ToolCallResult, error)
}

// ToolDef describes a tool for the model: a name, a description and a JSON
// Schema of its arguments.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ToolCallParams is one tool call, bound to the session the model runs in.
type ToolCallParams struct {
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	AgentID    string          `json:"agentId,omitempty"`
	SessionKey string          `json:"sessionKey,omitempty"`
	SessionID  string          `json:"sessionId,omitempty"`
}

// ToolCallResult is a tool's output for the model.
type ToolCallResult struct {
	Text string `json:"text"`
}

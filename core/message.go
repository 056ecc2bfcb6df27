package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Message roles of the contract (CONTRACT §3).
const (
	RoleUser              = "user"
	RoleAssistant         = "assistant"
	RoleToolResult        = "toolResult"
	RoleBashExecution     = "bashExecution"
	RoleCustom            = "custom"
	RoleBranchSummary     = "branchSummary"
	RoleCompactionSummary = "compactionSummary"
)

// KnownRole reports whether role is one of the contract's roles.
func KnownRole(role string) bool {
	switch role {
	case RoleUser, RoleAssistant, RoleToolResult, RoleBashExecution, RoleCustom,
		RoleBranchSummary, RoleCompactionSummary:
		return true
	}
	return false
}

// Block types.
const (
	BlockText     = "text"
	BlockThinking = "thinking"
	BlockImage    = "image"
	BlockToolCall = "toolCall"
)

// Block is one content block of a message.
type Block struct {
	Type              string          `json:"type"`
	Text              string          `json:"text,omitempty"`
	Thinking          string          `json:"thinking,omitempty"`
	ThinkingSignature string          `json:"thinkingSignature,omitempty"`
	Redacted          bool            `json:"redacted,omitempty"`
	Data              string          `json:"data,omitempty"`
	MimeType          string          `json:"mimeType,omitempty"`
	ID                string          `json:"id,omitempty"`
	Name              string          `json:"name,omitempty"`
	Arguments         json.RawMessage `json:"arguments,omitempty"`
}

// Usage is an assistant message's provider-reported usage.
type Usage struct {
	Input       int             `json:"input"`
	Output      int             `json:"output"`
	CacheRead   int             `json:"cacheRead"`
	CacheWrite  int             `json:"cacheWrite"`
	TotalTokens int             `json:"totalTokens"`
	Cost        json.RawMessage `json:"cost,omitempty"`
}

// view holds the decoded known fields of a message.
type view struct {
	Role               string          `json:"role"`
	Content            json.RawMessage `json:"content"`
	Timestamp          json.RawMessage `json:"timestamp"`
	API                string          `json:"api"`
	Provider           string          `json:"provider"`
	Model              string          `json:"model"`
	Usage              *Usage          `json:"usage"`
	StopReason         string          `json:"stopReason"`
	ErrorMessage       string          `json:"errorMessage"`
	ToolCallID         string          `json:"toolCallId"`
	ToolName           string          `json:"toolName"`
	Details            json.RawMessage `json:"details"`
	IsError            bool            `json:"isError"`
	Command            string          `json:"command"`
	Output             string          `json:"output"`
	ExitCode           *int            `json:"exitCode"`
	Cancelled          bool            `json:"cancelled"`
	Truncated          bool            `json:"truncated"`
	ExcludeFromContext bool            `json:"excludeFromContext"`
	CustomType         string          `json:"customType"`
	Display            json.RawMessage `json:"display"`
	Summary            string          `json:"summary"`
	FromID             string          `json:"fromId"`
	TokensBefore       int             `json:"tokensBefore"`
	TokensAfter        *int            `json:"tokensAfter"`
	FirstKeptEntryID   string          `json:"firstKeptEntryId"`

	blocks    []Block
	isString  bool
	strText   string
	timestamp int64
}

// Message is one message of a conversation. It keeps the exact JSON bytes it
// was decoded from (unknown fields included) and exposes read-only typed
// accessors. The zero Message is empty (IsZero); build messages with
// ParseMessage, NewMessage or the constructors (UserText, ...).
type Message struct {
	raw []byte
	v   *view
}

// ParseMessage decodes raw into a Message, keeping a copy of the bytes. It
// fails with ErrInvalidMessage when raw is not valid UTF-8, not a JSON
// object, or lacks a non-empty string "role". Unknown roles are accepted
// (see KnownRole); content of an unexpected shape is kept but has no blocks.
func ParseMessage(raw []byte) (Message, error) {
	if !utf8.Valid(raw) {
		i := firstInvalidUTF8(raw)
		return Message{}, wrapf(ErrInvalidMessage, "invalid UTF-8 at byte %d", i)
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Message{}, wrapf(ErrInvalidMessage, "not a JSON object")
	}
	v := new(view)
	if err := json.Unmarshal(trimmed, v); err != nil {
		// Retry with only the role, so that a field of an unexpected type
		// (e.g. a numeric toolCallId) does not reject a well-formed object.
		var probe map[string]json.RawMessage
		if err2 := json.Unmarshal(trimmed, &probe); err2 != nil {
			return Message{}, wrapf(ErrInvalidMessage, "not valid JSON: %v", err2)
		}
		v = lenientView(probe)
	}
	if v.Role == "" {
		return Message{}, wrapf(ErrInvalidMessage, "missing or empty \"role\"")
	}
	v.decodeContent()
	v.timestamp = parseTimestamp(v.Timestamp)
	own := make([]byte, len(raw))
	copy(own, raw)
	return Message{raw: own, v: v}, nil
}

// MustParseMessage is ParseMessage that panics on error, for tests and
// literals.
func MustParseMessage(raw string) Message {
	m, err := ParseMessage([]byte(raw))
	if err != nil {
		panic(err)
	}
	return m
}

// NewMessage encodes v (a struct or map with a "role") and parses the result.
func NewMessage(v any) (Message, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return Message{}, fmt.Errorf("core: encode message: %w", err)
	}
	return ParseMessage(bytes.TrimRight(buf.Bytes(), "\n"))
}

func mustNew(v any) Message {
	m, err := NewMessage(v)
	if err != nil {
		panic(err)
	}
	return m
}

// UserText builds a user message with one text block.
func UserText(text string, timestampMs int64) Message {
	return mustNew(map[string]any{"role": RoleUser,
		"content": []Block{{Type: BlockText, Text: text}}, "timestamp": timestampMs})
}

// AssistantText builds an assistant message with one text block.
func AssistantText(text string, timestampMs int64) Message {
	return mustNew(map[string]any{"role": RoleAssistant,
		"content": []Block{{Type: BlockText, Text: text}}, "stopReason": "stop", "timestamp": timestampMs})
}

// AssistantToolCall builds an assistant message that calls one tool.
func AssistantToolCall(id, name string, arguments any, timestampMs int64) Message {
	args, err := json.Marshal(arguments)
	if err != nil {
		panic(err)
	}
	return mustNew(map[string]any{"role": RoleAssistant,
		"content":    []Block{{Type: BlockToolCall, ID: id, Name: name, Arguments: args}},
		"stopReason": "toolUse", "timestamp": timestampMs})
}

// ToolResult builds a toolResult message with one text block.
func ToolResult(toolCallID, toolName, text string, isError bool, timestampMs int64) Message {
	return mustNew(map[string]any{"role": RoleToolResult, "toolCallId": toolCallID,
		"toolName": toolName, "content": []Block{{Type: BlockText, Text: text}},
		"isError": isError, "timestamp": timestampMs})
}

func lenientView(probe map[string]json.RawMessage) *view {
	v := new(view)
	_ = json.Unmarshal(probe["role"], &v.Role)
	v.Content = probe["content"]
	v.Timestamp = probe["timestamp"]
	for k, dst := range map[string]*string{"toolCallId": &v.ToolCallID, "toolName": &v.ToolName,
		"summary": &v.Summary, "command": &v.Command, "output": &v.Output, "customType": &v.CustomType,
		"stopReason": &v.StopReason, "model": &v.Model, "provider": &v.Provider} {
		if raw, ok := probe[k]; ok {
			_ = json.Unmarshal(raw, dst)
		}
	}
	return v
}

func (v *view) decodeContent() {
	c := bytes.TrimSpace(v.Content)
	if len(c) == 0 {
		return
	}
	switch c[0] {
	case '"':
		if json.Unmarshal(c, &v.strText) == nil {
			v.isString = true
		}
	case '[':
		var raws []json.RawMessage
		if json.Unmarshal(c, &raws) != nil {
			return
		}
		v.blocks = make([]Block, 0, len(raws))
		for _, r := range raws {
			var b Block
			if json.Unmarshal(r, &b) != nil {
				var loose map[string]json.RawMessage
				_ = json.Unmarshal(r, &loose)
				_ = json.Unmarshal(loose["type"], &b.Type)
				_ = json.Unmarshal(loose["text"], &b.Text)
			}
			v.blocks = append(v.blocks, b)
		}
	}
}

func parseTimestamp(raw json.RawMessage) int64 {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0
		}
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UnixMilli()
		}
		return 0
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return 0
	}
	return int64(f)
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// IsZero reports whether m is the zero Message.
func (m Message) IsZero() bool { return m.v == nil }

// Raw returns the exact bytes the message was decoded from. Callers must not
// modify them.
func (m Message) Raw() []byte { return m.raw }

// MarshalJSON returns the original bytes. (encoding/json compacts them and
// escapes <, >, & unless the Encoder's SetEscapeHTML(false) is used; use Raw
// for byte-exact output.)
func (m Message) MarshalJSON() ([]byte, error) {
	if m.v == nil {
		return []byte("null"), nil
	}
	return m.raw, nil
}

// UnmarshalJSON parses b with ParseMessage.
func (m *Message) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*m = Message{}
		return nil
	}
	p, err := ParseMessage(b)
	if err != nil {
		return err
	}
	*m = p
	return nil
}

func (m Message) view() *view {
	if m.v == nil {
		return &view{}
	}
	return m.v
}

// Role returns the message's role.
func (m Message) Role() string { return m.view().Role }

// Timestamp returns the message's timestamp in Unix milliseconds (0 when
// absent). Numeric and RFC 3339 string timestamps are understood.
func (m Message) Timestamp() int64 { return m.view().timestamp }

// Blocks returns the content blocks. String content is returned as one text
// block. The slice must not be modified.
func (m Message) Blocks() []Block {
	v := m.view()
	if v.isString {
		return []Block{{Type: BlockText, Text: v.strText}}
	}
	return v.blocks
}

// ContentIsString reports whether content is a plain string.
func (m Message) ContentIsString() bool { return m.view().isString }

// RawContent returns the raw JSON of the content field.
func (m Message) RawContent() json.RawMessage { return m.view().Content }

// Text returns the text of the text blocks (or string content), joined by
// newlines. Thinking, images and tool calls are left out; for bashExecution
// it is the command and output, for summaries the summary.
func (m Message) Text() string {
	v := m.view()
	switch v.Role {
	case RoleBashExecution:
		return strings.TrimRight(v.Command+"\n"+v.Output, "\n")
	case RoleBranchSummary, RoleCompactionSummary:
		return v.Summary
	}
	if v.isString {
		return v.strText
	}
	var sb strings.Builder
	for _, b := range v.blocks {
		if b.Type == BlockText && b.Text != "" {
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

// SearchText returns the text to index: Text, plus tool-call names and
// arguments, plus thinking when includeThinking is set.
func (m Message) SearchText(includeThinking bool) string {
	var sb strings.Builder
	sb.WriteString(m.Text())
	v := m.view()
	if v.ToolName != "" && v.Role == RoleToolResult {
		sb.WriteString("\n")
		sb.WriteString(v.ToolName)
	}
	for _, b := range v.blocks {
		switch {
		case b.Type == BlockToolCall:
			sb.WriteString("\n")
			sb.WriteString(b.Name)
			sb.WriteString(" ")
			sb.Write(b.Arguments)
		case b.Type == BlockThinking && includeThinking:
			sb.WriteString("\n")
			sb.WriteString(b.Thinking)
		}
	}
	return strings.TrimLeft(sb.String(), "\n")
}

// ToolCalls returns the toolCall blocks of an assistant message.
func (m Message) ToolCalls() []Block {
	var out []Block
	for _, b := range m.view().blocks {
		if b.Type == BlockToolCall {
			out = append(out, b)
		}
	}
	return out
}

// HasVisibleContent reports whether the message has content other than
// thinking: text, a tool call, an image, or a non-content role's payload.
func (m Message) HasVisibleContent() bool {
	v := m.view()
	if v.Role != RoleAssistant {
		return true
	}
	if v.isString {
		return strings.TrimSpace(v.strText) != ""
	}
	for _, b := range v.blocks {
		switch b.Type {
		case BlockThinking:
		case BlockText:
			if strings.TrimSpace(b.Text) != "" {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// API returns an assistant message's api.
func (m Message) API() string { return m.view().API }

// Provider returns an assistant message's provider.
func (m Message) Provider() string { return m.view().Provider }

// Model returns an assistant message's model.
func (m Message) Model() string { return m.view().Model }

// Usage returns an assistant message's usage, or nil.
func (m Message) Usage() *Usage { return m.view().Usage }

// StopReason returns an assistant message's stopReason.
func (m Message) StopReason() string { return m.view().StopReason }

// ErrorMessage returns an assistant message's errorMessage.
func (m Message) ErrorMessage() string { return m.view().ErrorMessage }

// ToolCallID returns a toolResult's toolCallId.
func (m Message) ToolCallID() string { return m.view().ToolCallID }

// ToolName returns a toolResult's toolName.
func (m Message) ToolName() string { return m.view().ToolName }

// IsError returns a toolResult's isError.
func (m Message) IsError() bool { return m.view().IsError }

// Details returns a toolResult's details as raw JSON.
func (m Message) Details() json.RawMessage { return m.view().Details }

// Command returns a bashExecution's command.
func (m Message) Command() string { return m.view().Command }

// Output returns a bashExecution's output.
func (m Message) Output() string { return m.view().Output }

// ExitCode returns a bashExecution's exitCode, or nil.
func (m Message) ExitCode() *int { return m.view().ExitCode }

// ExcludeFromContext reports a bashExecution's excludeFromContext.
func (m Message) ExcludeFromContext() bool { return m.view().ExcludeFromContext }

// CustomType returns a custom message's customType.
func (m Message) CustomType() string { return m.view().CustomType }

// Summary returns a branchSummary's or compactionSummary's summary.
func (m Message) Summary() string { return m.view().Summary }

// FromID returns a branchSummary's fromId.
func (m Message) FromID() string { return m.view().FromID }

// TokensBefore returns a compactionSummary's tokensBefore.
func (m Message) TokensBefore() int { return m.view().TokensBefore }

// FirstKeptEntryID returns a compactionSummary's firstKeptEntryId.
func (m Message) FirstKeptEntryID() string { return m.view().FirstKeptEntryID }

// Field returns the raw JSON of any top-level field, known or not.
func (m Message) Field(name string) (json.RawMessage, bool) {
	if m.v == nil {
		return nil, false
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(m.raw, &all) != nil {
		return nil, false
	}
	v, ok := all[name]
	return v, ok
}

// WithField returns a copy of m with the top-level field name set to the JSON
// encoding of value (added at the end when absent). Every other byte of the
// message is kept as it was.
func (m Message) WithField(name string, value any) (Message, error) {
	if m.v == nil {
		return Message{}, wrapf(ErrInvalidMessage, "zero message")
	}
	enc, err := json.Marshal(value)
	if err != nil {
		return Message{}, fmt.Errorf("core: encode field %q: %w", name, err)
	}
	start, end, found, err := fieldSpan(m.raw, name)
	if err != nil {
		return Message{}, err
	}
	var out []byte
	if found {
		out = append(append(append(out, m.raw[:start]...), enc...), m.raw[end:]...)
	} else {
		closing := bytes.LastIndexByte(m.raw, '}')
		body := bytes.TrimSpace(m.raw[:closing])
		key, _ := json.Marshal(name)
		out = append(out, body...)
		if len(body) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(append(out, key...), ':'), enc...), '}')
	}
	return ParseMessage(out)
}

// WithoutField returns a copy of m without the top-level field name.
func (m Message) WithoutField(name string) (Message, error) {
	if m.v == nil {
		return Message{}, wrapf(ErrInvalidMessage, "zero message")
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(m.raw, &all); err != nil {
		return Message{}, wrapf(ErrInvalidMessage, "%v", err)
	}
	if _, ok := all[name]; !ok {
		return m, nil
	}
	keyStart, _, valEnd, err := memberSpan(m.raw, name)
	if err != nil {
		return Message{}, err
	}
	// Remove the member and one adjacent comma.
	before := bytes.TrimRight(m.raw[:keyStart], " \t\r\n")
	after := m.raw[valEnd:]
	afterTrim := bytes.TrimLeft(after, " \t\r\n")
	var out []byte
	switch {
	case len(afterTrim) > 0 && afterTrim[0] == ',':
		out = append(append(out, m.raw[:keyStart]...), bytes.TrimLeft(afterTrim[1:], " \t\r\n")...)
	case len(before) > 0 && before[len(before)-1] == ',':
		out = append(append(out, before[:len(before)-1]...), after...)
	default:
		out = append(append(out, m.raw[:keyStart]...), after...)
	}
	return ParseMessage(out)
}

// fieldSpan finds the byte span of the value of top-level field name.
func fieldSpan(raw []byte, name string) (start, end int, found bool, err error) {
	_, vs, ve, err := memberSpan(raw, name)
	if err != nil {
		if err == errNoField {
			return 0, 0, false, nil
		}
		return 0, 0, false, err
	}
	return vs, ve, true, nil
}

var errNoField = fmt.Errorf("core: no such field")

// memberSpan returns where the key of top-level member name starts and where
// its value starts and ends.
func memberSpan(raw []byte, name string) (keyStart, valStart, valEnd int, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return 0, 0, 0, wrapf(ErrInvalidMessage, "not a JSON object")
	}
	for dec.More() {
		ks := int(dec.InputOffset())
		kt, err := dec.Token()
		if err != nil {
			return 0, 0, 0, wrapf(ErrInvalidMessage, "%v", err)
		}
		key, _ := kt.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return 0, 0, 0, wrapf(ErrInvalidMessage, "%v", err)
		}
		ve := int(dec.InputOffset())
		if key == name {
			// Locate the key's opening quote after ks (skipping ',' and spaces).
			for ks < len(raw) && raw[ks] != '"' {
				ks++
			}
			vs := ve - len(val)
			return ks, vs, ve, nil
		}
	}
	return 0, 0, 0, errNoField
}

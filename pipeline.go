package contextengine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/lossless-engine/contextengine/core"
)

// The host's message pipeline before assemble (CONTRACT §7): Sanitize, then
// Validate, then Limit. Each step returns a new slice; messages it does not
// change are the same values (byte-identical), and messages it changes are
// rewritten with core.Message.WithField/WithoutField so every other byte is
// kept.

// MissingToolResultText is the text of a synthesised result for a tool call
// that was never answered.
const MissingToolResultText = "No result provided: the tool call was interrupted before it returned."

// maxToolCallIDLen is the longest tool-call id providers accept.
const maxToolCallIDLen = 64

// SanitizeReport counts what Sanitize repaired.
type SanitizeReport struct {
	RenamedIDs      int `json:"renamedIds"`      // tool-call ids normalised
	MovedResults    int `json:"movedResults"`    // results moved next to their call
	DroppedOrphans  int `json:"droppedOrphans"`  // results with no earlier call, or duplicates
	Synthesized     int `json:"synthesized"`     // results synthesised for unanswered calls
	StrippedDetails int `json:"strippedDetails"` // toolResult details removed
}

// Changed reports whether Sanitize changed anything.
func (r SanitizeReport) Changed() bool { return r != SanitizeReport{} }

// Sanitize repairs tool-call/result pairing so that every tool call of an
// assistant message is followed, before the next non-result message, by
// exactly one result: a result found later is moved up, a missing one is
// synthesised (isError, MissingToolResultText), and a result without an
// earlier call (or a second result for one call) is dropped. Tool-call ids
// are normalised to what providers accept ([A-Za-z0-9_-], at most 64 bytes,
// kept unique), in calls and results alike, and toolResult details (UI-only
// data) are stripped.
func Sanitize(msgs []core.Message) ([]core.Message, SanitizeReport) {
	var rep SanitizeReport
	ids := newIDNormaliser()
	// Normalise ids and strip details first.
	norm := make([]core.Message, len(msgs))
	for i, m := range msgs {
		switch m.Role() {
		case core.RoleAssistant:
			norm[i] = renameCalls(m, ids, &rep)
		case core.RoleToolResult:
			for {
				key, ok := memberKey(m.Raw(), "details")
				if !ok {
					break
				}
				nm, err := m.WithoutField(key)
				if err != nil {
					break
				}
				m = nm
				rep.StrippedDetails++
			}
			if id := ids.lookup(m.ToolCallID()); id != m.ToolCallID() {
				key, ok := memberKey(m.Raw(), "toolCallId")
				if !ok {
					key = "toolCallId"
				}
				if nm, err := m.WithField(key, id); err == nil {
					m = nm
				}
			}
			norm[i] = m
		default:
			norm[i] = m
		}
	}
	// Index results by call id.
	results := map[string][]int{}
	for i, m := range norm {
		if m.Role() == core.RoleToolResult {
			results[m.ToolCallID()] = append(results[m.ToolCallID()], i)
		}
	}
	used := make([]bool, len(norm))
	out := make([]core.Message, 0, len(norm))
	for i, m := range norm {
		switch {
		case m.Role() == core.RoleToolResult:
			if !used[i] {
				rep.DroppedOrphans++
			}
		case m.Role() == core.RoleAssistant && len(m.ToolCalls()) > 0:
			out = append(out, m)
			runEnd := i + 1
			for runEnd < len(norm) && norm[runEnd].Role() == core.RoleToolResult {
				runEnd++
			}
			for _, c := range m.ToolCalls() {
				j := -1
				for _, k := range results[c.ID] {
					if k > i && !used[k] {
						j = k
						break
					}
				}
				if j < 0 {
					out = append(out, syntheticResult(c, m.Timestamp()))
					rep.Synthesized++
					continue
				}
				used[j] = true
				if j >= runEnd {
					rep.MovedResults++
				}
				out = append(out, norm[j])
			}
		default:
			out = append(out, m)
		}
	}
	return out, rep
}

func syntheticResult(call core.Block, ts int64) core.Message {
	m, err := core.NewMessage(map[string]any{"role": core.RoleToolResult, "toolCallId": call.ID,
		"toolName": call.Name, "content": []core.Block{{Type: core.BlockText, Text: MissingToolResultText}},
		"isError": true, "timestamp": ts})
	if err != nil {
		panic(err) // cannot happen: the map encodes
	}
	return m
}

// idNormaliser maps original tool-call ids to valid, unique ones.
type idNormaliser struct {
	byOrig map[string]string
	taken  map[string]bool
	n      int
}

func newIDNormaliser() *idNormaliser {
	return &idNormaliser{byOrig: map[string]string{}, taken: map[string]bool{}}
}

// ValidToolCallID reports whether id is accepted by every provider:
// 1–64 bytes of [A-Za-z0-9_-].
func ValidToolCallID(id string) bool {
	if id == "" || len(id) > maxToolCallIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// assign returns the normalised id for a call id seen in an assistant message.
func (n *idNormaliser) assign(orig string) string {
	if v, ok := n.byOrig[orig]; ok {
		return v
	}
	v := orig
	if !ValidToolCallID(orig) {
		b := make([]byte, 0, len(orig))
		for i := 0; i < len(orig) && len(b) < maxToolCallIDLen; i++ {
			c := orig[i]
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
				b = append(b, c)
			} else {
				b = append(b, '_')
			}
		}
		v = string(b)
		if v == "" {
			v = "call"
		}
	}
	for base := v; n.taken[v] && n.byOrig[orig] != v; {
		n.n++
		suffix := "_" + strconv.Itoa(n.n)
		if len(base)+len(suffix) > maxToolCallIDLen {
			base = base[:maxToolCallIDLen-len(suffix)]
		}
		v = base + suffix
	}
	n.byOrig[orig] = v
	n.taken[v] = true
	return v
}

// lookup returns the normalised id of a result's toolCallId.
func (n *idNormaliser) lookup(orig string) string {
	if v, ok := n.byOrig[orig]; ok {
		return v
	}
	return orig
}

// renameCalls normalises the ids of m's toolCall blocks.
func renameCalls(m core.Message, ids *idNormaliser, rep *SanitizeReport) core.Message {
	calls := m.ToolCalls()
	if len(calls) == 0 {
		return m
	}
	changed := false
	for _, c := range calls {
		if ids.assign(c.ID) != c.ID {
			changed = true
		}
	}
	if !changed {
		return m
	}
	contentKey, ok := memberKey(m.Raw(), "content")
	if !ok {
		return m
	}
	var blocks []json.RawMessage
	parsed := m.Blocks()
	if err := json.Unmarshal(m.RawContent(), &blocks); err != nil || len(blocks) != len(parsed) {
		return m
	}
	for i, b := range blocks {
		pb := parsed[i]
		if pb.Type != core.BlockToolCall {
			continue
		}
		nid := ids.lookup(pb.ID)
		if nid == pb.ID {
			continue
		}
		blocks[i] = setBlockID(b, pb, nid)
		rep.RenamedIDs++
	}
	nm, err := m.WithField(contentKey, blocks)
	if err != nil {
		return m
	}
	return nm
}

// setBlockID returns block b with its id set to id, keeping its other bytes
// when the result decodes as a tool call with that id, and otherwise a clean
// toolCall block with b's name and arguments.
func setBlockID(b json.RawMessage, parsed core.Block, id string) json.RawMessage {
	q, _ := json.Marshal(id)
	key, ok := memberKey(b, "id")
	if !ok {
		key = "id"
	}
	if nb, err := setMember(b, key, q); err == nil {
		var check core.Block
		if json.Unmarshal(nb, &check) == nil && check.Type == core.BlockToolCall && check.ID == id {
			return nb
		}
	}
	args := parsed.Arguments
	if !json.Valid(args) {
		args = json.RawMessage(`{}`)
	}
	clean, _ := json.Marshal(core.Block{Type: core.BlockToolCall, ID: id, Name: parsed.Name, Arguments: args})
	return clean
}

// memberKey returns the key of obj's top-level member that encoding/json
// binds to a field named name: the last key equal to name under case
// folding.
func memberKey(obj []byte, name string) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	found, key := false, ""
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return "", false
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
		if k, _ := kt.(string); strings.EqualFold(k, name) {
			found, key = true, k
		}
	}
	return key, found
}

// setMember returns the JSON object obj with member name's value replaced by
// val (appended when absent); other bytes are kept.
func setMember(obj []byte, name string, val []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("contextengine: not a JSON object")
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("contextengine: %w", err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("contextengine: %w", err)
		}
		if k, _ := kt.(string); k == name {
			end := int(dec.InputOffset())
			start := end - len(raw)
			out := append(append(append([]byte(nil), obj[:start]...), val...), obj[end:]...)
			return out, nil
		}
	}
	closing := bytes.LastIndexByte(obj, '}')
	body := bytes.TrimSpace(obj[:closing])
	key, _ := json.Marshal(name)
	out := append([]byte(nil), body...)
	if len(body) > 1 {
		out = append(out, ',')
	}
	out = append(append(append(append(out, key...), ':'), val...), '}')
	return out, nil
}

// ValidateOptions configures Validate.
type ValidateOptions struct {
	// MergeConsecutiveUser merges runs of user messages into one (for
	// providers that require alternating turns).
	MergeConsecutiveUser bool
}

// Validate applies provider turn rules. With MergeConsecutiveUser, a run of
// consecutive user messages becomes one message: the first message with the
// content blocks of the whole run (string content becomes a text block).
func Validate(msgs []core.Message, opts ValidateOptions) []core.Message {
	if !opts.MergeConsecutiveUser {
		return msgs
	}
	out := make([]core.Message, 0, len(msgs))
	for i := 0; i < len(msgs); {
		m := msgs[i]
		j := i + 1
		for m.Role() == core.RoleUser && j < len(msgs) && msgs[j].Role() == core.RoleUser {
			j++
		}
		if j-i > 1 {
			var blocks []json.RawMessage
			for _, u := range msgs[i:j] {
				blocks = append(blocks, contentBlocks(u)...)
			}
			if merged, err := m.WithField("content", blocks); err == nil {
				m = merged
			}
		}
		out = append(out, m)
		i = j
	}
	return out
}

// contentBlocks returns a message's content as raw blocks.
func contentBlocks(m core.Message) []json.RawMessage {
	if m.ContentIsString() {
		b, _ := json.Marshal(core.Block{Type: core.BlockText, Text: m.Text()})
		return []json.RawMessage{b}
	}
	var blocks []json.RawMessage
	if json.Unmarshal(m.RawContent(), &blocks) != nil {
		return nil
	}
	return blocks
}

// Limit applies a history limit of n user turns (n <= 0: no limit). Nothing
// is trimmed until the history holds more than ceil(1.5n) user turns; then
// the oldest turns are evicted in batches of ceil(1.5n)-n+1, which brings the
// history back to n turns and keeps the kept prefix stable (cache friendly)
// until the next eviction. A cut always lands on a user message, so tool
// calls stay with their results; a compactionSummary at the start of the
// history is kept.
func Limit(msgs []core.Message, n int) []core.Message {
	if n <= 0 {
		return msgs
	}
	var users []int
	for i, m := range msgs {
		if m.Role() == core.RoleUser {
			users = append(users, i)
		}
	}
	high := (3*n + 1) / 2 // ceil(1.5n)
	turns := len(users)
	if turns <= high {
		return msgs
	}
	batch := high - n + 1
	k := (turns - high + batch - 1) / batch
	cut := users[k*batch]
	out := make([]core.Message, 0, len(msgs)-cut+1)
	if msgs[0].Role() == core.RoleCompactionSummary && cut > 0 {
		out = append(out, msgs[0])
	}
	return append(out, msgs[cut:]...)
}

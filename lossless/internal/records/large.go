package records

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/store"
)

// LargeReference builds the message that stands for a large message m of
// key h (HashRaw) in the active context: ingest stores it beside the
// message, assemble rebuilds it when a window shows the message; the same role (and
// toolCallId/toolName for a tool result, the tool calls' ids and names for
// an assistant message, so pairs stay intact), with one text block holding
// a short deterministic description of the content. The same message
// always yields the same bytes.
func LargeReference(m core.Message, h store.Hash, tokens int) []byte {
	text := m.Text()
	var args []string
	for _, b := range m.ToolCalls() {
		args = append(args, string(b.Arguments))
	}
	if text == "" && len(args) > 0 {
		text = strings.Join(args, "\n")
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "[Large content stored aside: id %s%s, %d tokens, %d bytes. It is shown here only as a description; the full content can be retrieved by that id.]\n",
		LargeRefPrefix, hex.EncodeToString(h[:]), tokens, len(m.Raw()))
	sb.WriteString(DescribeContent(text))
	desc := sb.String()

	out := map[string]any{"role": m.Role()}
	if ts, ok := m.Field("timestamp"); ok {
		out["timestamp"] = ts
	}
	switch m.Role() {
	case core.RoleToolResult:
		out["toolCallId"] = m.ToolCallID()
		out["toolName"] = m.ToolName()
		out["isError"] = m.IsError()
		out["content"] = []core.Block{{Type: core.BlockText, Text: desc}}
	case core.RoleAssistant:
		blocks := []core.Block{{Type: core.BlockText, Text: desc}}
		for _, b := range m.ToolCalls() {
			blocks = append(blocks, core.Block{Type: core.BlockToolCall, ID: b.ID, Name: b.Name,
				Arguments: json.RawMessage(`{"lossless":"arguments stored aside, see the description"}`)})
		}
		out["content"] = blocks
		if sr := m.StopReason(); sr != "" {
			out["stopReason"] = sr
		}
	case core.RoleBashExecution:
		out["command"] = truncateRunes(m.Command(), 400)
		out["output"] = desc
		out["exitCode"] = m.ExitCode()
	case core.RoleBranchSummary, core.RoleCompactionSummary:
		out["summary"] = desc
	default:
		out["content"] = []core.Block{{Type: core.BlockText, Text: desc}}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out) // maps encode with sorted keys: deterministic
	return bytes.TrimRight(buf.Bytes(), "\n")
}

var codeSig = regexp.MustCompile(`^\s*(export\s+)?(async\s+)?(func|def|class|function|interface|type|struct|fn|pub fn|impl|public|private|protected|const\s+\w+\s*=\s*\(|module)\b`)

// DescribeContent returns a short deterministic description of text: the
// structure of JSON (top-level type, keys or length), CSV (rows, columns,
// header), code (its signatures), and otherwise the head and tail of the
// text. It is at most about 2,500 characters.
func DescribeContent(text string) string {
	t := strings.TrimSpace(text)
	lines := strings.Count(t, "\n") + 1
	var sb strings.Builder
	fmt.Fprintf(&sb, "Content: %d characters, %d lines.\n", utf8.RuneCountInString(t), lines)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		sb.WriteString("JSON: ")
		sb.WriteString(describeJSON([]byte(t)))
		sb.WriteString("\n")
	} else if cols, rows, header, ok := describeCSV(t); ok {
		fmt.Fprintf(&sb, "CSV: %d rows, %d columns; header: %s\n", rows, cols, truncateRunes(header, 300))
	} else {
		var sigs []string
		for _, l := range strings.Split(t, "\n") {
			if codeSig.MatchString(l) {
				sigs = append(sigs, truncateRunes(strings.TrimSpace(l), 120))
				if len(sigs) == 30 {
					break
				}
			}
		}
		if len(sigs) >= 3 {
			sb.WriteString("Code signatures:\n")
			for _, s := range sigs {
				sb.WriteString("  " + s + "\n")
			}
		}
	}
	head, tail := headTail(t, 600, 300)
	sb.WriteString("Head:\n")
	sb.WriteString(head)
	if tail != "" {
		sb.WriteString("\n…\nTail:\n")
		sb.WriteString(tail)
	}
	return sb.String()
}

func describeJSON(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return "invalid"
	}
	return describeValue(v, 0)
}

func describeValue(v any, depth int) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if depth > 0 {
			return fmt.Sprintf("object(%d keys)", len(keys))
		}
		parts := make([]string, 0, 20)
		for i, k := range keys {
			if i == 20 {
				parts = append(parts, fmt.Sprintf("… %d more", len(keys)-20))
				break
			}
			parts = append(parts, k+": "+describeValue(x[k], depth+1))
		}
		return "object {" + strings.Join(parts, ", ") + "}"
	case []any:
		if len(x) == 0 {
			return "array(0)"
		}
		if depth > 1 {
			return fmt.Sprintf("array(%d)", len(x))
		}
		return fmt.Sprintf("array(%d) of %s", len(x), describeValue(x[0], depth+1))
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	default:
		return "null"
	}
}

func describeCSV(t string) (cols, rows int, header string, ok bool) {
	lines := strings.Split(t, "\n")
	if len(lines) < 3 {
		return 0, 0, "", false
	}
	for _, sep := range []string{",", "\t", ";"} {
		n := strings.Count(lines[0], sep)
		if n == 0 {
			continue
		}
		check := min(len(lines), 20)
		good := true
		for _, l := range lines[1:check] {
			if strings.Count(l, sep) != n {
				good = false
				break
			}
		}
		if good {
			return n + 1, len(lines) - 1, lines[0], true
		}
	}
	return 0, 0, "", false
}

func headTail(t string, head, tail int) (string, string) {
	if utf8.RuneCountInString(t) <= head+tail {
		return t, ""
	}
	r := []rune(t)
	return string(r[:head]), string(r[len(r)-tail:])
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// SeqByKey returns the sequence number of the message of c whose key is
// key (the hex id after LargeRefPrefix in a large-content reference; the
// prefix may be given): an error wrapping core.ErrNotFound for a key that
// is not one, the store's not-found mapped by FromStore when no message has
// it.
func SeqByKey(r store.Reader, c store.ConvID, key string) (uint64, error) {
	key = strings.TrimPrefix(key, LargeRefPrefix)
	b, err := hex.DecodeString(key)
	if err != nil || len(b) != len(store.Hash{}) {
		return 0, fmt.Errorf("lossless: bad message key %q: %w", key, core.ErrNotFound)
	}
	var h store.Hash
	copy(h[:], b)
	seq, err := r.SeqByHash(c, h)
	if errors.Is(err, store.ErrNotFound) {
		return 0, FromStore(err)
	}
	if err != nil {
		return 0, fmt.Errorf("lossless: read: %w", err)
	}
	return seq, nil
}

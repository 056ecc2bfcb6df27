package compaction

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/core"
)

// RenderMessage renders one message as plain summarizer input: a bracketed
// role label, then its text, thinking, tool calls (name and JSON arguments)
// or tool output. Tool results longer than maxToolChars are cut (with a note
// of how much was left out); maxToolChars <= 0 means no cut.
// bashExecution messages marked excludeFromContext render as "".
func RenderMessage(m core.Message, maxToolChars int) string {
	var sb strings.Builder
	switch m.Role() {
	case core.RoleUser:
		writeLabeled(&sb, "User", m.Text())
	case core.RoleAssistant:
		for _, b := range m.Blocks() {
			switch b.Type {
			case core.BlockText:
				writeLabeled(&sb, "Assistant", b.Text)
			case core.BlockThinking:
				writeLabeled(&sb, "Assistant thinking", b.Thinking)
			case core.BlockToolCall:
				writeLabeled(&sb, "Assistant tool call", b.Name+" "+argsText(b.Arguments))
			}
		}
		if m.StopReason() == "error" && m.ErrorMessage() != "" {
			writeLabeled(&sb, "Assistant error", m.ErrorMessage())
		}
	case core.RoleToolResult:
		label := "Tool result " + m.ToolName()
		if m.IsError() {
			label = "Tool error " + m.ToolName()
		}
		writeLabeled(&sb, strings.TrimSpace(label), cut(m.Text(), maxToolChars))
	case core.RoleBashExecution:
		if m.ExcludeFromContext() {
			return ""
		}
		writeLabeled(&sb, "Bash", "$ "+m.Command()+"\n"+cut(m.Output(), maxToolChars))
	case core.RoleCompactionSummary:
		writeLabeled(&sb, "Earlier summary", m.Summary())
	case core.RoleBranchSummary:
		writeLabeled(&sb, "Branch summary", m.Summary())
	case core.RoleCustom:
		writeLabeled(&sb, "Custom "+m.CustomType(), m.Text())
	default:
		writeLabeled(&sb, m.Role(), m.Text())
	}
	return sb.String()
}

// argsEscapes turns the common JSON string escapes of tool-call arguments
// back into characters, so that a path after "\n" reads as a path.
var argsEscapes = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\r`, "", `\"`, `"`, `\\`, `\`, `\/`, "/")

func argsText(raw []byte) string { return argsEscapes.Replace(string(raw)) }

func writeLabeled(sb *strings.Builder, label, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	if sb.Len() > 0 {
		sb.WriteByte('\n')
	}
	sb.WriteString("[")
	sb.WriteString(label)
	sb.WriteString("]: ")
	sb.WriteString(text)
}

// cut returns s cut to at most max bytes at a rune boundary, with a note of
// the bytes left out.
func cut(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("\n…[%d more characters cut]", len(s)-i)
}

// OversizeMarker is the one line that replaces, in the summarizer's input, a
// message larger than half the summarizer's window.
func OversizeMarker(m core.Message, tokens int) string {
	name := m.Role()
	if m.ToolName() != "" {
		name += " " + m.ToolName()
	}
	return fmt.Sprintf("[%s message omitted: %d tokens, %d bytes]", name, tokens, len(m.Raw()))
}

// unit is a group of messages that must stay in one summarizer chunk: an
// assistant message with its tool calls' results, or any single message.
type unit struct {
	text   string
	tokens int
}

// Chunk splits msgs into summarizer inputs of at most limit tokens each
// (counted with tc). A message whose rendering exceeds limit/2 is replaced by
// OversizeMarker. An assistant message that calls tools and the toolResult
// messages answering it are kept in one chunk; such a group alone larger
// than limit is cut to limit tokens. The second result is the number of
// oversize markers used.
func Chunk(tc core.TokenCounter, msgs []core.Message, limit, maxToolChars int) ([]string, int) {
	if limit < 64 {
		limit = 64
	}
	var units []unit
	markers := 0
	open := map[string]bool{} // tool call ids of the current group awaiting results
	for _, m := range msgs {
		text := RenderMessage(m, maxToolChars)
		if text == "" {
			continue
		}
		n := tc.CountText(text)
		if n > limit/2 {
			text = OversizeMarker(m, n)
			n = tc.CountText(text)
			markers++
		}
		joins := false
		if m.Role() == core.RoleToolResult && len(units) > 0 {
			// A result joins its call's group (or a result without a matching
			// call joins the group right before it).
			joins = len(open) > 0 && (open[m.ToolCallID()] || m.ToolCallID() == "")
			if open[m.ToolCallID()] {
				delete(open, m.ToolCallID())
			}
		}
		if joins {
			u := &units[len(units)-1]
			u.text += "\n" + text
			u.tokens += n + 1
			continue
		}
		open = map[string]bool{}
		for _, b := range m.ToolCalls() {
			open[b.ID] = true
		}
		units = append(units, unit{text: text, tokens: n})
	}
	var chunks []string
	var cur strings.Builder
	curTokens := 0
	flush := func() {
		if cur.Len() > 0 {
			chunks = append(chunks, cur.String())
			cur.Reset()
			curTokens = 0
		}
	}
	for _, u := range units {
		if u.tokens > limit {
			flush()
			chunks = append(chunks, core.Truncate(tc, u.text, limit))
			continue
		}
		if curTokens+u.tokens+2 > limit {
			flush()
		}
		if cur.Len() > 0 {
			cur.WriteString("\n\n")
			curTokens += 2
		}
		cur.WriteString(u.text)
		curTokens += u.tokens
	}
	flush()
	return chunks, markers
}

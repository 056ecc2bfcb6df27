// Package synth generates long, realistic, deterministic agent transcripts
// for benchmarks and tests: user turns (some in Chinese or Japanese),
// assistant turns with thinking, text and tool calls, tool results of varied
// sizes (source files, logs, grep output, errors), bash executions, opaque
// identifiers (UUIDs, commit hashes, IPs, ports, URLs, file names) and code.
//
// Everything is a pure function of the seed: the same seed gives the same
// messages, byte for byte, so a benchmark or a test can regenerate the input
// it fed an engine and compare. The generator streams (Next), so a million
// messages never need to be held in memory at once.
//
// Besides messages, the package writes OpenClaw session files (a header line
// and message entries with ids and parent ids; WriteSession) and small
// LoCoMo-format recall fixtures (LoCoMo).
package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// baseTime is the timestamp (Unix ms) of the first generated message:
// 2026-01-05T09:00:00Z.
const baseTime int64 = 1767603600000

// Generator produces an endless, deterministic stream of messages. It is not
// safe for concurrent use.
type Generator struct {
	rng   *rand.Rand
	seed  uint64
	ts    int64
	count int
	queue [][]byte
	// project state: file names the "agent" has seen, so later turns refer
	// back to earlier identifiers as a real session does.
	files   []string
	idents  []string
	turn    int
	project string
}

// New returns a generator for seed.
func New(seed uint64) *Generator {
	g := &Generator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seed: seed, ts: baseTime}
	g.project = pick(g.rng, projectNames)
	for i := 0; i < 12; i++ {
		g.files = append(g.files, g.newPath())
	}
	return g
}

// Count returns how many messages Next has returned.
func (g *Generator) Count() int { return g.count }

// Next returns the next message's JSON bytes (a JSON object with a "role",
// valid UTF-8, no trailing newline). The caller owns the slice.
func (g *Generator) Next() []byte {
	if len(g.queue) == 0 {
		g.genTurn()
	}
	m := g.queue[0]
	g.queue = g.queue[1:]
	g.count++
	return m
}

// Messages returns the first n messages of seed's stream.
func Messages(seed uint64, n int) [][]byte {
	g := New(seed)
	out := make([][]byte, n)
	for i := range out {
		out[i] = g.Next()
	}
	return out
}

// Timestamp returns the generator's clock (Unix ms): the timestamp of the
// most recently generated message.
func (g *Generator) Timestamp() int64 { return g.ts }

func (g *Generator) tick(minMs, maxMs int) int64 {
	g.ts += int64(minMs + g.rng.IntN(maxMs-minMs+1))
	return g.ts
}

// ---- message shapes (field order as OpenClaw writes them) ----

type block struct {
	Type              string          `json:"type"`
	Text              *string         `json:"text,omitempty"`
	Thinking          *string         `json:"thinking,omitempty"`
	ThinkingSignature string          `json:"thinkingSignature,omitempty"`
	ID                string          `json:"id,omitempty"`
	Name              string          `json:"name,omitempty"`
	Arguments         json.RawMessage `json:"arguments,omitempty"`
}

type cost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
	Total      float64 `json:"total"`
}

type usage struct {
	Input       int  `json:"input"`
	Output      int  `json:"output"`
	CacheRead   int  `json:"cacheRead"`
	CacheWrite  int  `json:"cacheWrite"`
	TotalTokens int  `json:"totalTokens"`
	Cost        cost `json:"cost"`
}

type userMsg struct {
	Role      string `json:"role"`
	Content   any    `json:"content"`
	Timestamp int64  `json:"timestamp"`
}

type assistantMsg struct {
	Role       string  `json:"role"`
	Content    []block `json:"content"`
	API        string  `json:"api"`
	Provider   string  `json:"provider"`
	Model      string  `json:"model"`
	Usage      usage   `json:"usage"`
	StopReason string  `json:"stopReason"`
	Timestamp  int64   `json:"timestamp"`
	ResponseID string  `json:"responseId,omitempty"` // a field outside the contract's list
}

type toolResultMsg struct {
	Role       string          `json:"role"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Content    []block         `json:"content"`
	Details    json.RawMessage `json:"details,omitempty"`
	IsError    bool            `json:"isError"`
	Timestamp  int64           `json:"timestamp"`
}

type bashMsg struct {
	Role      string `json:"role"`
	Command   string `json:"command"`
	Output    string `json:"output"`
	ExitCode  int    `json:"exitCode"`
	Cancelled bool   `json:"cancelled"`
	Truncated bool   `json:"truncated"`
	Timestamp int64  `json:"timestamp"`
}

func encode(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("synth: encode: %v", err)) // only plain structs are encoded
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func sp(s string) *string { return &s }

// genTurn queues one user turn and the agent's work on it.
func (g *Generator) genTurn() {
	g.turn++
	r := g.rng
	// Now and then the user runs a shell command directly.
	if r.IntN(40) == 0 {
		cmd, out, code := g.bashOutput()
		g.queue = append(g.queue, encode(bashMsg{Role: "bashExecution", Command: cmd, Output: out,
			ExitCode: code, Timestamp: g.tick(2000, 30000)}))
	}
	g.queue = append(g.queue, g.userMessage())
	rounds := []int{0, 1, 1, 2, 2, 3, 3, 4, 5, 7}[r.IntN(10)]
	model := pick(r, models)
	for i := 0; i < rounds; i++ {
		var content []block
		if r.IntN(4) == 0 {
			content = append(content, block{Type: "thinking", Thinking: sp(g.prose(1, 3)),
				ThinkingSignature: g.hex(32)})
		}
		if r.IntN(2) == 0 {
			content = append(content, block{Type: "text", Text: sp(g.agentIntent())})
		}
		ncalls := 1 + r.IntN(3)
		if r.IntN(3) > 0 {
			ncalls = 1
		}
		type call struct{ id, name, target string }
		var calls []call
		for j := 0; j < ncalls; j++ {
			id := "toolu_01" + g.base62(22)
			name, args, target := g.toolCall()
			content = append(content, block{Type: "toolCall", ID: id, Name: name, Arguments: args})
			calls = append(calls, call{id, name, target})
		}
		g.queue = append(g.queue, g.assistant(model, content, "toolUse"))
		for _, c := range calls {
			text, details, isErr := g.toolOutput(c.name, c.target)
			g.queue = append(g.queue, encode(toolResultMsg{Role: "toolResult", ToolCallID: c.id,
				ToolName: c.name, Content: []block{{Type: "text", Text: sp(text)}}, Details: details,
				IsError: isErr, Timestamp: g.tick(5, 4000)}))
		}
	}
	var content []block
	if r.IntN(3) == 0 {
		content = append(content, block{Type: "thinking", Thinking: sp(g.prose(1, 4)), ThinkingSignature: g.hex(32)})
	}
	content = append(content, block{Type: "text", Text: sp(g.agentAnswer())})
	g.queue = append(g.queue, g.assistant(model, content, "stop"))
}

func (g *Generator) assistant(model [3]string, content []block, stop string) []byte {
	r := g.rng
	in, out := 3+r.IntN(4000), 40+r.IntN(1500)
	cr, cw := r.IntN(120000), r.IntN(6000)
	u := usage{Input: in, Output: out, CacheRead: cr, CacheWrite: cw, TotalTokens: in + out + cr + cw}
	u.Cost = cost{Input: round6(float64(in) * 3e-6), Output: round6(float64(out) * 15e-6),
		CacheRead: round6(float64(cr) * 0.3e-6), CacheWrite: round6(float64(cw) * 3.75e-6)}
	u.Cost.Total = round6(u.Cost.Input + u.Cost.Output + u.Cost.CacheRead + u.Cost.CacheWrite)
	m := assistantMsg{Role: "assistant", Content: content, API: model[0], Provider: model[1], Model: model[2],
		Usage: u, StopReason: stop, Timestamp: g.tick(800, 45000)}
	if model[0] == "openai-responses" {
		m.ResponseID = "resp_" + g.hex(24)
	}
	return encode(m)
}

func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }

func (g *Generator) userMessage() []byte {
	r := g.rng
	var text string
	switch k := r.IntN(100); {
	case k < 9: // CJK
		text = g.cjk()
	case k < 14: // a pasted error log
		text = "I get this when I run it:\n\n```\n" + g.logLines(4+r.IntN(20)) + "```\nwhat is wrong?"
	case k < 20: // a slash command or a short nudge
		text = pick(r, shortUser)
	default:
		text = g.userRequest()
	}
	if r.IntN(3) == 0 {
		return encode(userMsg{Role: "user", Content: text, Timestamp: g.tick(5000, 600000)})
	}
	return encode(userMsg{Role: "user", Content: []block{{Type: "text", Text: sp(text)}}, Timestamp: g.tick(5000, 600000)})
}

func (g *Generator) userRequest() string {
	r := g.rng
	f := g.file()
	parts := []string{
		fmt.Sprintf(pick(r, requestTemplates), f, g.symbol()),
	}
	if r.IntN(3) == 0 {
		parts = append(parts, g.ident())
	}
	if r.IntN(4) == 0 {
		parts = append(parts, g.prose(1, 2))
	}
	return strings.Join(parts, " ")
}

func (g *Generator) agentIntent() string {
	return fmt.Sprintf(pick(g.rng, intentTemplates), g.file(), g.symbol())
}

func (g *Generator) agentAnswer() string {
	r := g.rng
	var sb strings.Builder
	sb.WriteString(fmt.Sprintf(pick(r, answerTemplates), g.file(), g.symbol()))
	sb.WriteString("\n\n")
	n := 1 + r.IntN(5)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "%d. %s `%s` %s\n", i+1, pick(r, verbs), g.file(), g.prose(1, 1))
	}
	if r.IntN(3) == 0 {
		sb.WriteString("\n```go\n" + g.code(6+r.IntN(20)) + "```\n")
	}
	if r.IntN(3) == 0 {
		sb.WriteString("\nReference: " + g.ident() + ", " + g.ident() + ".")
	}
	if r.IntN(12) == 0 {
		sb.WriteString("\n\n" + g.cjk())
	}
	return strings.TrimRight(sb.String(), "\n")
}

// toolCall returns a tool name, its JSON arguments and the file or command it targets.
func (g *Generator) toolCall() (string, json.RawMessage, string) {
	r := g.rng
	switch k := r.IntN(10); {
	case k < 4:
		f := g.file()
		return "read", encode(map[string]string{"path": f}), f
	case k < 7:
		cmd := g.command()
		return "bash", encode(map[string]any{"command": cmd, "timeout": 120}), cmd
	case k < 9:
		f := g.file()
		old := g.code(1 + r.IntN(4))
		return "edit", encode(struct {
			Path    string `json:"path"`
			OldText string `json:"oldText"`
			NewText string `json:"newText"`
		}{f, old, g.code(1 + r.IntN(5))}), f
	default:
		pat := g.symbol()
		return "grep", encode(map[string]string{"pattern": pat, "path": "."}), pat
	}
}

// toolOutput returns a tool result's text, its details (or nil) and isError.
func (g *Generator) toolOutput(name, target string) (string, json.RawMessage, bool) {
	r := g.rng
	if r.IntN(25) == 0 {
		return fmt.Sprintf("Error: %s: %s (errno %d, request %s)", target, pick(r, errorTexts), 1+r.IntN(120), g.uuid()), nil, true
	}
	switch name {
	case "read":
		return g.fileBody(g.size()), nil, false
	case "bash":
		return g.logLines(g.size() / 90), nil, false
	case "edit":
		diff := fmt.Sprintf("--- a/%s\n+++ b/%s\n@@ -%d,%d +%d,%d @@\n-%s\n+%s\n", target, target,
			10+r.IntN(400), 3, 10+r.IntN(400), 4, g.symbol(), g.symbol())
		return "Successfully replaced text in " + target + ".", encode(map[string]string{"diff": diff}), false
	default:
		var sb strings.Builder
		n := 1 + r.IntN(30)
		for i := 0; i < n; i++ {
			fmt.Fprintf(&sb, "%s:%d:\t%s\n", g.file(), 1+r.IntN(900), strings.TrimSpace(g.code(1)))
		}
		return sb.String(), nil, false
	}
}

// size draws a tool output size in bytes: log-normal around 1.5 KB, with
// a tail of large outputs up to ~120 KB, like real coding sessions.
func (g *Generator) size() int {
	s := math.Exp(g.rng.NormFloat64()*1.1 + math.Log(1500))
	if g.rng.IntN(150) == 0 {
		s = 40000 + float64(g.rng.IntN(80000))
	}
	if s < 60 {
		s = 60
	}
	if s > 120000 {
		s = 120000
	}
	return int(s)
}

func (g *Generator) fileBody(size int) string {
	var sb strings.Builder
	sb.WriteString("package " + pick(g.rng, pkgNames) + "\n\nimport (\n\t\"context\"\n\t\"fmt\"\n)\n\n")
	for sb.Len() < size {
		if g.rng.IntN(6) == 0 {
			sb.WriteString("// " + g.prose(1, 1) + "\n")
		}
		sb.WriteString(g.code(4 + g.rng.IntN(12)))
		sb.WriteString("\n")
	}
	return sb.String()
}

func (g *Generator) logLines(n int) string {
	if n < 1 {
		n = 1
	}
	r := g.rng
	var sb strings.Builder
	t := g.ts
	for i := 0; i < n; i++ {
		t += int64(r.IntN(900))
		switch r.IntN(5) {
		case 0:
			fmt.Fprintf(&sb, "=== RUN   Test%s/%s\n--- PASS: Test%s (%.2fs)\n", g.symbol(), g.word(), g.symbol(), r.Float64())
		case 1:
			fmt.Fprintf(&sb, "%d level=%s msg=%q host=%s port=%d req=%s\n", t, pick(r, levels), g.prose(1, 1), g.ip(), g.port(), g.uuid())
		case 2:
			fmt.Fprintf(&sb, "%s:%d:%d: %s\n", g.file(), 1+r.IntN(800), 1+r.IntN(80), pick(r, errorTexts))
		case 3:
			fmt.Fprintf(&sb, "commit %s\nAuthor: %s <%s@example.com>\n\n    %s\n", g.hex(40), pick(r, people), strings.ToLower(pick(r, people)), g.prose(1, 1))
		default:
			fmt.Fprintf(&sb, "ok  \tgithub.com/acme/%s/%s\t%.3fs\n", g.project, pick(r, pkgNames), r.Float64()*3)
		}
	}
	return sb.String()
}

func (g *Generator) bashOutput() (string, string, int) {
	cmd := g.command()
	code := 0
	if g.rng.IntN(5) == 0 {
		code = 1 + g.rng.IntN(2)
	}
	return cmd, g.logLines(1 + g.rng.IntN(15)), code
}

func (g *Generator) command() string {
	r := g.rng
	switch r.IntN(6) {
	case 0:
		return "go test ./" + pick(r, pkgNames) + "/... -run Test" + g.symbol()
	case 1:
		return "git log --oneline -n " + fmt.Sprint(5+r.IntN(30))
	case 2:
		return fmt.Sprintf("curl -s https://%s:%d/healthz", g.host(), g.port())
	case 3:
		return "rg -n '" + g.symbol() + "' " + pick(r, dirs)
	case 4:
		return "ls -la " + pick(r, dirs)
	default:
		return "npm run build --workspace " + pick(r, pkgNames)
	}
}

func (g *Generator) code(lines int) string {
	r := g.rng
	var sb strings.Builder
	fn := g.symbol()
	fmt.Fprintf(&sb, "func %s(ctx context.Context, %s %s) (%s, error) {\n", fn, g.word(), pick(r, goTypes), pick(r, goTypes))
	for i := 0; i < lines-2; i++ {
		switch r.IntN(5) {
		case 0:
			fmt.Fprintf(&sb, "\tif err := %s(ctx); err != nil {\n\t\treturn nil, fmt.Errorf(\"%s: %%w\", err)\n\t}\n", g.symbol(), g.word())
		case 1:
			fmt.Fprintf(&sb, "\t%s := %s.%s(%d)\n", g.word(), g.word(), g.symbol(), r.IntN(1000))
		case 2:
			fmt.Fprintf(&sb, "\tfor _, %s := range %s {\n\t\t%s = append(%s, %s)\n\t}\n", g.word(), g.word(), g.word(), g.word(), g.word())
		case 3:
			fmt.Fprintf(&sb, "\t// %s\n", g.prose(1, 1))
		default:
			fmt.Fprintf(&sb, "\tconst %s = %q\n", g.symbol(), g.ident())
		}
	}
	sb.WriteString("\treturn nil, nil\n}\n")
	return sb.String()
}

// ---- identifiers ----

func (g *Generator) ident() string {
	r := g.rng
	var id string
	switch r.IntN(8) {
	case 0:
		id = g.uuid()
	case 1:
		id = g.hex(40)
	case 2:
		id = g.hex(7)
	case 3:
		id = fmt.Sprintf("%s:%d", g.ip(), g.port())
	case 4:
		id = fmt.Sprintf("https://%s:%d/v1/%s/%s", g.host(), g.port(), g.word(), g.hex(8))
	case 5:
		id = g.file()
	case 6:
		id = fmt.Sprintf("JIRA-%d", 100+r.IntN(9000))
	default:
		id = "sk_live_" + g.base62(16)
	}
	// Later turns mention earlier identifiers again.
	if len(g.idents) > 0 && r.IntN(3) == 0 {
		return g.idents[r.IntN(len(g.idents))]
	}
	if len(g.idents) < 200 {
		g.idents = append(g.idents, id)
	} else {
		g.idents[r.IntN(len(g.idents))] = id
	}
	return id
}

func (g *Generator) uuid() string {
	h := g.hex(32)
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}

func (g *Generator) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.rng.IntN(16)]
	}
	return string(b)
}

func (g *Generator) base62(n int) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.rng.IntN(len(digits))]
	}
	return string(b)
}

func (g *Generator) ip() string {
	return fmt.Sprintf("10.%d.%d.%d", g.rng.IntN(256), g.rng.IntN(256), 1+g.rng.IntN(254))
}

func (g *Generator) port() int { return 1024 + g.rng.IntN(60000) }

func (g *Generator) host() string {
	return pick(g.rng, pkgNames) + "-" + fmt.Sprint(g.rng.IntN(20)) + "." + g.project + ".internal"
}

func (g *Generator) newPath() string {
	r := g.rng
	return pick(r, dirs) + "/" + pick(r, pkgNames) + "/" + g.word() + "_" + pick(r, pkgNames) + pick(r, exts)
}

func (g *Generator) file() string {
	if g.rng.IntN(6) == 0 {
		p := g.newPath()
		g.files[g.rng.IntN(len(g.files))] = p
		return p
	}
	return g.files[g.rng.IntN(len(g.files))]
}

func (g *Generator) symbol() string {
	w := g.word()
	return strings.ToUpper(w[:1]) + w[1:] + pick(g.rng, symbolSuffixes)
}

func (g *Generator) word() string { return pick(g.rng, words) }

func (g *Generator) prose(minS, maxS int) string {
	r := g.rng
	n := minS + r.IntN(maxS-minS+1)
	var sb strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		k := 6 + r.IntN(12)
		for j := 0; j < k; j++ {
			w := g.word()
			if j == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				sb.WriteByte(' ')
			}
			sb.WriteString(w)
		}
		sb.WriteByte('.')
	}
	return sb.String()
}

func (g *Generator) cjk() string {
	r := g.rng
	n := 1 + r.IntN(4)
	var sb strings.Builder
	for i := 0; i < n; i++ {
		sb.WriteString(pick(r, cjkSentences))
	}
	if r.IntN(2) == 0 {
		sb.WriteString(" `" + g.file() + "`")
	}
	return sb.String()
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

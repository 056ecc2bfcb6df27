package dag

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// RenderText is the default rendering of a summary as the model sees it: a
// header naming its id, kind, depth, time range and coverage, the text, and
// a line telling how to expand it. The compactor counts a summary's Tokens
// on this rendering (or on Config.Render), so an engine that shows summaries
// to the model must render them with the same function.
func RenderText(s Summary) string {
	var b strings.Builder
	b.Grow(len(s.Text) + 256)
	fmt.Fprintf(&b, "<summary id=%q kind=%q depth=\"%d\" from=%q to=%q messages=\"%d\">\n",
		s.ID, s.Kind, s.Depth, fmtMillis(s.Earliest), fmtMillis(s.Latest), s.DescendantCount)
	b.WriteString(s.Text)
	if !strings.HasSuffix(s.Text, "\n") {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "</summary>\nThis summarizes %d earlier messages (%d tokens); call lcm_expand with id %q to read them verbatim.", s.DescendantCount, s.DescendantTokens, s.ID)
	return b.String()
}

func fmtMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04")
}

var (
	thinkBlock = regexp.MustCompile(`(?is)<(think|thinking|reasoning)>.*?</(think|thinking|reasoning)>`)
	thinkOpen  = regexp.MustCompile(`(?is)<(think|thinking|reasoning)>.*$`)
)

// StripThinking removes reasoning from a model's output: <think>,
// <thinking> and <reasoning> blocks, and an unclosed one to the end. It
// returns the remaining text trimmed of surrounding space; "" means the
// output was empty or thinking only.
func StripThinking(s string) string {
	if strings.Contains(s, "<") {
		s = thinkBlock.ReplaceAllString(s, "")
		s = thinkOpen.ReplaceAllString(s, "")
	}
	return strings.TrimSpace(s)
}

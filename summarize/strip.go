package summarize

import "strings"

// reasoningTags are the tag names whose blocks StripReasoning removes.
var reasoningTags = []string{"think", "thinking", "reasoning", "reflection"}

// StripReasoning removes reasoning text a model put in its answer:
// <think>…</think> blocks (and <thinking>, <reasoning>, <reflection>, any
// case), an unclosed opening tag and everything after it, and everything up
// to a closing tag with no opening one (servers that drop the opening tag).
// The result is trimmed of surrounding space.
func StripReasoning(s string) string {
	for _, tag := range reasoningTags {
		s = stripTag(s, tag)
	}
	return strings.TrimSpace(s)
}

func stripTag(s, tag string) string {
	open, closeTag := "<"+tag+">", "</"+tag+">"
	// a closing tag before any opening one: drop everything up to it
	for {
		lower := strings.ToLower(s)
		c := strings.Index(lower, closeTag)
		o := strings.Index(lower, open)
		if c < 0 {
			if o >= 0 {
				return s[:o] // unclosed: the rest is reasoning
			}
			return s
		}
		if o < 0 || c < o {
			s = s[c+len(closeTag):]
			continue
		}
		// o < c: a block; remove it
		s = s[:o] + s[c+len(closeTag):]
	}
}

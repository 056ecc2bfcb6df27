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
		c := indexFoldASCII(s, closeTag)
		o := indexFoldASCII(s, open)
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

// indexFoldASCII is strings.Index ignoring ASCII case (sub is lower case).
// Unlike searching strings.ToLower(s), its offsets are offsets into s.
func indexFoldASCII(s, sub string) int {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		if s[i] != '<' {
			continue
		}
		j := 1
		for j < n && lowerASCII(s[i+j]) == sub[j] {
			j++
		}
		if j == n {
			return i
		}
	}
	return -1
}

func lowerASCII(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

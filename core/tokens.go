package core

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/lossless-engine/contextengine/tokens"
)

// ImageTokens is the fixed token cost of one image block (OpenClaw's figure).
const ImageTokens = 2000

// TokenCounter counts tokens of text. Implementations are safe for
// concurrent use.
type TokenCounter interface {
	// Name identifies the counter ("o200k_base", "cl100k_base", "chars4").
	Name() string
	// CountText returns the number of tokens of s.
	CountText(s string) int
}

// Encodings understood by NewTiktoken.
const (
	EncodingO200k  = tokens.Encoding // "o200k_base"
	EncodingCL100k = "cl100k_base"
	// CounterChars4 names OpenClaw's chars/4 estimate (see Chars4).
	CounterChars4 = "chars4"
)

var loaderOnce sync.Once

type tiktokenCounter struct {
	name string
	enc  *tiktoken.Tiktoken
}

var (
	tiktokenMu    sync.Mutex
	tiktokenCache = map[string]*tiktokenCounter{}
)

// NewTiktoken returns a counter backed by tiktoken-go itself with the named
// encoding (EncodingO200k or EncodingCL100k; "" means o200k). The BPE ranks
// come from the offline loader compiled into the binary: no network is used.
// Counters are cached per encoding. For o200k_base, NewCounter returns the
// faster package tokens counter, which counts the same; NewTiktoken is the
// reference it is tested against.
func NewTiktoken(encoding string) (TokenCounter, error) {
	if encoding == "" {
		encoding = EncodingO200k
	}
	if encoding != EncodingO200k && encoding != EncodingCL100k {
		return nil, fmt.Errorf("core: unknown token encoding %q (want %s or %s)", encoding, EncodingO200k, EncodingCL100k)
	}
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	tiktokenMu.Lock()
	defer tiktokenMu.Unlock()
	if c, ok := tiktokenCache[encoding]; ok {
		return c, nil
	}
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil, fmt.Errorf("core: load encoding %s: %w", encoding, err)
	}
	c := &tiktokenCounter{name: encoding, enc: enc}
	tiktokenCache[encoding] = c
	return c, nil
}

// CheckCounterName returns the error NewCounter would give for an unknown
// name, without loading anything (NewCounter loads and keeps the encoding's
// ranks, some 20 MB, for the life of the process).
func CheckCounterName(name string) error {
	switch name {
	case CounterChars4, "", EncodingO200k, EncodingCL100k:
		return nil
	}
	return fmt.Errorf("core: unknown token encoding %q (want %s or %s)", name, EncodingO200k, EncodingCL100k)
}

// NewCounter returns the counter named name: for EncodingO200k (or "") the
// package tokens counter (tiktoken-go's counts, about ten times faster; its
// ranks load on first use), for EncodingCL100k NewTiktoken's, for
// CounterChars4 Chars4.
func NewCounter(name string) (TokenCounter, error) {
	switch name {
	case CounterChars4:
		return Chars4{}, nil
	case "", EncodingO200k:
		c, err := tokens.NewO200k()
		if err != nil {
			return nil, fmt.Errorf("core: %w", err)
		}
		return c, nil
	}
	return NewTiktoken(name)
}

// DefaultCounter returns the o200k_base counter (NewCounter(EncodingO200k)).
// It panics only if the embedded BPE data is missing, which is a build
// defect.
func DefaultCounter() TokenCounter {
	c, err := NewCounter(EncodingO200k)
	if err != nil {
		panic(err)
	}
	return c
}

func (c *tiktokenCounter) Name() string { return c.name }

func (c *tiktokenCounter) CountText(s string) int {
	if s == "" {
		return 0
	}
	return len(c.enc.EncodeOrdinary(s))
}

// Chars4 is OpenClaw's estimate: ceil(weighted chars / 4), where a CJK
// character weighs 4 (one token each) and any other character 1.
type Chars4 struct{}

// Name returns CounterChars4.
func (Chars4) Name() string { return CounterChars4 }

// CountText returns the chars/4 estimate of s.
func (Chars4) CountText(s string) int {
	w := 0
	for _, r := range s {
		if r < 0x2E80 {
			w++
		} else if IsCJK(r) {
			w += 4
		} else {
			w++
		}
	}
	return (w + 3) / 4
}

// IsCJK reports whether r is a Chinese, Japanese or Korean character.
func IsCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// CountMessage counts a message's tokens with tc by the contract's rules:
// text and thinking blocks by their text, a tool call by its name plus its
// JSON arguments, an image as ImageTokens, a bashExecution by its command and
// output, summaries by their summary, and string content by itself.
// Metadata fields (ids, usage, timestamps) are not counted.
func CountMessage(tc TokenCounter, m Message) int {
	v := m.view()
	switch v.Role {
	case RoleBashExecution:
		return tc.CountText(v.Command) + tc.CountText(v.Output)
	case RoleBranchSummary, RoleCompactionSummary:
		return tc.CountText(v.Summary)
	}
	if v.isString {
		return tc.CountText(v.strText)
	}
	n := 0
	for _, b := range v.blocks {
		n += CountBlock(tc, b)
	}
	return n
}

// CountBlock counts one content block.
func CountBlock(tc TokenCounter, b Block) int {
	switch b.Type {
	case BlockText:
		return tc.CountText(b.Text)
	case BlockThinking:
		return tc.CountText(b.Thinking)
	case BlockToolCall:
		return tc.CountText(b.Name) + tc.CountText(string(b.Arguments))
	case BlockImage:
		return ImageTokens
	}
	return tc.CountText(b.Text)
}

// ContextCounter is implemented by token counters that can stop a long
// count when ctx is done (the fast o200k counter checks it every few
// thousand pieces, so a cancelled request is not held by a 32 MiB message).
type ContextCounter interface {
	CountTextContext(ctx context.Context, s string) (int, error)
}

// CountMessageContext is CountMessage that stops when ctx is done and
// returns ctx's error (counters that are not ContextCounters are checked
// between texts).
func CountMessageContext(ctx context.Context, tc TokenCounter, m Message) (int, error) {
	c := &ctxCount{ctx: ctx, tc: tc}
	c.cc, _ = tc.(ContextCounter)
	n := CountMessage(c, m)
	return n, c.err
}

// ctxCount is a TokenCounter that counts with tc until ctx is done.
type ctxCount struct {
	ctx context.Context
	tc  TokenCounter
	cc  ContextCounter
	err error
}

func (c *ctxCount) Name() string { return c.tc.Name() }

func (c *ctxCount) CountText(s string) int {
	if c.err != nil {
		return 0
	}
	if err := c.ctx.Err(); err != nil {
		c.err = err
		return 0
	}
	if c.cc == nil {
		return c.tc.CountText(s)
	}
	n, err := c.cc.CountTextContext(c.ctx, s)
	if err != nil {
		c.err = err
	}
	return n
}

// CountMessages sums CountMessage over msgs.
func CountMessages(tc TokenCounter, msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += CountMessage(tc, m)
	}
	return n
}

// EstimateChars4 is OpenClaw's host estimate of a message list (Chars4).
func EstimateChars4(msgs []Message) int { return CountMessages(Chars4{}, msgs) }

// Truncate returns the longest prefix of s whose token count under tc is at
// most max, cut at a rune boundary (and at a space when one is near).
func Truncate(tc TokenCounter, s string, max int) string {
	if max <= 0 {
		return ""
	}
	if tc.CountText(s) <= max {
		return s
	}
	lo, hi := 0, len(s)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		for mid > 0 && mid < len(s) && !isRuneStart(s[mid]) {
			mid--
		}
		if mid <= lo {
			break
		}
		if tc.CountText(s[:mid]) <= max {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	out := s[:lo]
	if i := strings.LastIndexAny(out, " \n\t"); i > len(out)*3/4 {
		out = out[:i]
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/lossless-engine/contextengine/core"
)

// fakeEngine is an in-memory engine: it stores every message, assembles the
// newest messages that fit (after a summary of the compacted prefix), and
// compacts by moving the prefix boundary, rotating the session id on each
// compaction that has a session file. Hooks let tests break it.
type fakeEngine struct {
	mu       sync.Mutex
	store    map[string][][]byte // conversation (session key) -> raw messages
	tokens   map[string][]int
	cut      map[string]int // messages covered by the summary
	alias    map[string]string
	closed   bool
	counter  core.TokenCounter
	gen      int
	overflow bool // assemble returns more than the budget
	drop     int  // Expand drops this many messages
	alter    bool // Expand alters one message
	noRotate bool // Compact never rotates
}

func newFake() *fakeEngine {
	return &fakeEngine{store: map[string][][]byte{}, tokens: map[string][]int{}, cut: map[string]int{},
		alias: map[string]string{}, counter: core.Chars4{}}
}

func (f *fakeEngine) conv(session, key string) string {
	if key != "" {
		return key
	}
	if a, ok := f.alias[session]; ok {
		return a
	}
	return session
}

func (f *fakeEngine) Info() core.Info { return core.Info{ID: "fake", Name: "Fake"} }

func (f *fakeEngine) add(c string, m core.Message) {
	f.store[c] = append(f.store[c], m.Raw())
	f.tokens[c] = append(f.tokens[c], core.CountMessage(f.counter, m))
}

func (f *fakeEngine) Ingest(ctx context.Context, p core.IngestParams) (core.IngestResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return core.IngestResult{}, core.ErrClosed
	}
	f.add(f.conv(p.SessionID, p.SessionKey), p.Message)
	return core.IngestResult{Ingested: true}, nil
}

func (f *fakeEngine) IngestBatch(ctx context.Context, p core.IngestBatchParams) (core.IngestBatchResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.conv(p.SessionID, p.SessionKey)
	for _, m := range p.Messages {
		f.add(c, m)
	}
	return core.IngestBatchResult{IngestedCount: len(p.Messages)}, nil
}

func (f *fakeEngine) Bootstrap(ctx context.Context, p core.BootstrapParams) (core.BootstrapResult, error) {
	msgs, _, err := transcriptMessages(p.SessionFile)
	if err != nil {
		return core.BootstrapResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.conv(p.SessionID, p.SessionKey)
	f.alias[p.SessionID] = c
	for _, m := range msgs {
		f.add(c, m)
	}
	return core.BootstrapResult{Bootstrapped: true, ImportedMessages: len(msgs)}, nil
}

func (f *fakeEngine) summary(c string) (core.Message, int) {
	s := fmt.Sprintf("summary of %d messages", f.cut[c])
	m := core.UserText(s, 0)
	return m, core.CountMessage(f.counter, m)
}

func (f *fakeEngine) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.conv(p.SessionID, p.SessionKey)
	raws, toks := f.store[c], f.tokens[c]
	budget := p.TokenBudget
	total, i := 0, len(raws)
	var head []core.Message
	if f.cut[c] > 0 {
		m, n := f.summary(c)
		head, total = []core.Message{m}, n
	}
	for i > f.cut[c] && (total+toks[i-1] <= budget || f.overflow) {
		i--
		total += toks[i]
	}
	out := head
	for _, r := range raws[i:] {
		m, _ := core.ParseMessage(r)
		out = append(out, m)
	}
	return core.AssembleResult{Messages: out, EstimatedTokens: total}, nil
}

func (f *fakeEngine) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.conv(p.SessionID, p.SessionKey)
	toks := f.tokens[c]
	before := 0
	for _, n := range toks[f.cut[c]:] {
		before += n
	}
	if f.cut[c] > 0 {
		_, n := f.summary(c)
		before += n
	}
	// Summarise the older half of what is left, at most 500 messages a round.
	left := len(toks) - f.cut[c]
	if left <= 8 {
		return core.CompactResult{OK: true, Compacted: false, Reason: "nothing to compact"}, nil
	}
	f.cut[c] += min(left/2, 500)
	_, after := f.summary(c)
	for _, n := range toks[f.cut[c]:] {
		after += n
	}
	out := &core.CompactOutcome{TokensBefore: before, TokensAfter: after, Summary: "s"}
	if p.SessionFile != "" && !f.noRotate {
		f.gen++
		out.SessionID = fmt.Sprintf("%s-r%d", p.SessionID, f.gen)
		out.SessionFile = p.SessionFile
		f.alias[out.SessionID] = c
	}
	return core.CompactResult{OK: true, Compacted: after < before, Result: out}, nil
}

func (f *fakeEngine) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func fakeTarget(mod func(*fakeEngine)) Target {
	return Target{
		Name: "fake",
		Open: func(ctx context.Context, dir string, budget int) (core.Engine, error) {
			f := newFake()
			if mod != nil {
				mod(f)
			}
			// Leave something on disk for the footprint suite.
			if err := os.WriteFile(dir+"/data", make([]byte, 4096), 0o644); err != nil {
				return nil, err
			}
			return f, nil
		},
		Rotate: func(ctx context.Context, e core.Engine, session, key, file string, budget int) (string, string, error) {
			f := e.(*fakeEngine)
			f.mu.Lock()
			defer f.mu.Unlock()
			f.gen++
			id := fmt.Sprintf("%s-rot%d", session, f.gen)
			f.alias[id] = f.conv(session, key)
			return id, file, nil
		},
		Expand: func(ctx context.Context, e core.Engine, sessions []string) ([][]byte, error) {
			f := e.(*fakeEngine)
			f.mu.Lock()
			defer f.mu.Unlock()
			c := f.conv(sessions[len(sessions)-1], "")
			out := append([][]byte(nil), f.store[c]...)
			if f.drop > 0 {
				out = out[:len(out)-f.drop]
			}
			if f.alter && len(out) > 3 {
				out[3] = append([]byte(nil), out[3]...)
				out[3][len(out[3])-1] = ' '
			}
			return out, nil
		},
	}
}

// fakeLegacy passes the host's messages through, counted with tc, and
// compacts a session file by appending a compaction entry that keeps the
// last 20 entries.
type fakeLegacy struct {
	fakeEngine
	tc core.TokenCounter
}

func (l *fakeLegacy) Assemble(ctx context.Context, p core.AssembleParams) (core.AssembleResult, error) {
	return core.AssembleResult{Messages: p.Messages, EstimatedTokens: core.CountMessages(l.tc, p.Messages)}, nil
}

func (l *fakeLegacy) Compact(ctx context.Context, p core.CompactParams) (core.CompactResult, error) {
	tr, err := core.ReadTranscript(p.SessionFile)
	if err != nil {
		return core.CompactResult{}, err
	}
	w := tr.Window()
	before := core.CountMessages(l.tc, w.Messages())
	if len(w.Entries) <= 20 {
		return core.CompactResult{OK: true, Reason: "nothing to compact"}, nil
	}
	kept := w.Entries[len(w.Entries)-20:]
	// The "summary" keeps the identifiers of the first compacted message.
	summary := "Goal: test. " + w.Entries[0].Message.Text()
	last := tr.Entries[len(tr.Entries)-1].ID
	if err := core.AppendTranscript(p.SessionFile, map[string]any{"type": "compaction", "id": "c0mpact1",
		"parentId": last, "timestamp": core.NowTimestamp(), "summary": summary,
		"firstKeptEntryId": kept[0].ID, "tokensBefore": before}); err != nil {
		return core.CompactResult{}, err
	}
	tr, _ = core.ReadTranscript(p.SessionFile)
	after := core.CountMessages(l.tc, tr.Window().Messages())
	return core.CompactResult{OK: true, Compacted: after < before,
		Result: &core.CompactOutcome{TokensBefore: before, TokensAfter: after}}, nil
}

// fakeLegacyTarget is fakeLegacy counting with tc.
func fakeLegacyTarget(tc core.TokenCounter) Target {
	return Target{Name: "legacy", Counter: tc.Name(), Open: func(ctx context.Context, dir string, budget int) (core.Engine, error) {
		return &fakeLegacy{*newFake(), tc}, nil
	}}
}

// wordCounter counts words: the fake "exact" counter of the second legacy
// row (different from chars4, and fast).
type wordCounter struct{}

func (wordCounter) Name() string           { return "words" }
func (wordCounter) CountText(s string) int { return len(strings.Fields(s)) }

// wordRecall is a naive recall path for tests: it ranks the turns of a
// LoCoMo file by the number of words shared with the question.
func wordRecall(ctx context.Context, path string, ks []int, rep *RecallReport) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var samples []struct {
		Conversation map[string]json.RawMessage `json:"conversation"`
		QA           []struct {
			Question string   `json:"question"`
			Evidence []string `json:"evidence"`
			Category int      `json:"category"`
		} `json:"qa"`
	}
	if err := json.Unmarshal(b, &samples); err != nil {
		return err
	}
	words := func(s string) map[string]bool {
		out := map[string]bool{}
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !('a' <= r && r <= 'z') }) {
			if len(w) > 3 {
				out[w] = true
			}
		}
		return out
	}
	sums := map[int]float64{}
	for _, s := range samples {
		type turn struct{ id, text string }
		var turns []turn
		for k, v := range s.Conversation {
			if !strings.HasPrefix(k, "session_") || strings.HasSuffix(k, "date_time") {
				continue
			}
			var ts []struct {
				DiaID string `json:"dia_id"`
				Text  string `json:"text"`
			}
			if err := json.Unmarshal(v, &ts); err != nil {
				return err
			}
			for _, t := range ts {
				turns = append(turns, turn{t.DiaID, t.Text})
			}
		}
		sort.Slice(turns, func(i, j int) bool { return turns[i].id < turns[j].id })
		for _, q := range s.QA {
			if q.Category == 5 || len(q.Evidence) == 0 {
				continue
			}
			rep.Questions++
			qw := words(q.Question)
			score := func(t turn) int {
				n := 0
				for w := range words(t.text) {
					if qw[w] {
						n++
					}
				}
				return n
			}
			ranked := append([]turn(nil), turns...)
			sort.SliceStable(ranked, func(i, j int) bool { return score(ranked[i]) > score(ranked[j]) })
			for _, k := range ks {
				found := 0
				for _, ev := range q.Evidence {
					for _, t := range ranked[:min(k, len(ranked))] {
						if t.id == ev {
							found++
							break
						}
					}
				}
				sums[k] += float64(found) / float64(len(q.Evidence))
			}
		}
	}
	rep.RecallAt, rep.RecallAtNoSpeaker = map[string]float64{}, map[string]float64{}
	for _, k := range ks {
		rep.RecallAt[fmt.Sprint(k)] = 100 * sums[k] / float64(max(rep.Questions, 1))
		// The fixture's texts carry no speaker prefix: the same ranking.
		rep.RecallAtNoSpeaker[fmt.Sprint(k)] = rep.RecallAt[fmt.Sprint(k)]
	}
	return nil
}

// idents is a small identifier scanner for tests: hex runs of 7+ and
// dotted IPs.
func idents(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r == '.' || r == '-')
	}) {
		f = strings.Trim(f, ".-")
		if len(f) >= 7 && !seen[f] && strings.ContainsAny(f, "0123456789") {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

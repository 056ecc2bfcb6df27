package recall

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/index"
	"github.com/lossless-engine/contextengine/lossless/recalled"
	"github.com/lossless-engine/contextengine/store"
)

// MessageDocID is the recall index's doc id of message seq of
// conversation c: "<conv>:<seq>".
func MessageDocID(c store.ConvID, seq uint64) string {
	return c.String() + ":" + strconv.FormatUint(seq, 10)
}

// SummaryDocID is the recall index's doc id of summary id of conversation
// c: "<conv>/<summary id>".
func SummaryDocID(c store.ConvID, id string) string { return c.String() + "/" + id }

// SummaryDoc is the recall index's doc of summary s of conversation c of
// agent.
func SummaryDoc(c store.ConvID, agent string, s dag.Summary) index.Doc {
	return index.Doc{ID: SummaryDocID(c, s.ID), Agent: agent, Conversation: c.String(), Session: c.String(),
		Role: "summary", Kind: index.KindSummary, Timestamp: s.Latest, Text: s.Text}
}

// MessageDoc is the recall index's doc of message m (seq of conversation
// c of agent, stored with role and timestamp ts); false for a message
// never indexed: a heartbeat, or a recall block a host stored back (the
// engine's own output, never recalled in turn).
func MessageDoc(c store.ConvID, agent string, seq uint64, role string, ts int64, heartbeat bool, m core.Message) (index.Doc, bool) {
	if heartbeat || recalled.IsMessage(m) {
		return index.Doc{}, false
	}
	return index.Doc{ID: MessageDocID(c, seq), Agent: agent, Conversation: c.String(), Session: c.String(),
		Role: role, Kind: index.KindMessage, Seq: seq, Timestamp: ts, Text: recalled.IndexedText(m)}, true
}

// MessageTextKey is index.TextKey(recalled.IndexedText(m)), without building the
// text (assemble keys every message of its window): the key folds away the
// separators SearchText puts between the parts, so the parts are hashed
// one by one.
func MessageTextKey(m core.Message) uint64 {
	role := m.Role()
	switch role {
	case core.RoleBashExecution, core.RoleBranchSummary, core.RoleCompactionSummary:
		return index.TextKey(recalled.IndexedText(m))
	}
	blocks := m.Blocks()
	size := len(m.ToolName())
	for _, b := range blocks {
		size += len(b.Text) + len(b.Name) + len(b.Arguments) + 2
	}
	if size >= recalled.MaxIndexedText {
		return index.TextKey(recalled.IndexedText(m)) // cut at recalled.MaxIndexedText
	}
	var k index.TextKeyer
	for _, b := range blocks {
		if b.Type == core.BlockText {
			k.WriteString(b.Text)
		}
	}
	if role == core.RoleToolResult {
		k.WriteString(m.ToolName())
	}
	for _, b := range blocks {
		if b.Type == core.BlockToolCall {
			k.WriteString(b.Name)
			k.Write(b.Arguments)
		}
	}
	return k.Sum()
}

// WindowKeys caches the text keys of each conversation's last assembled
// window (TextKeys): most of it is the same messages (the same
// core.Message values, kept by the assemble cache) from one assemble to
// the next. The zero value is ready; it is safe for concurrent use.
type WindowKeys struct {
	convs sync.Map // store.ConvID -> *windowKeys
	count atomic.Int64
	// clock orders the conversations' uses (windowKeys.used), for
	// dropOldest.
	clock atomic.Int64
}

// windowKeys are the cached keys of one conversation's window.
type windowKeys struct {
	mu   sync.Mutex
	m    map[weak.Pointer[byte]]windowKey // a message's raw JSON (its first byte) -> key
	used int64                            // WindowKeys.clock at the last use
}

type windowKey struct {
	n   int
	key uint64
}

// windowKeyConvs bounds the conversations whose window keys are cached
// (the least recently used are dropped).
const windowKeyConvs = 256

// TextKeys returns the text keys of the window's messages (see
// MessageTextKey). For a known conversation c they are cached by message,
// through weak pointers to the messages' bytes (which are never modified):
// a pointer found again is the same message, and the cache keeps no
// message alive.
func (r *WindowKeys) TextKeys(c store.ConvID, known bool, window []core.Message) map[uint64]bool {
	out := make(map[uint64]bool, len(window))
	var wk *windowKeys
	if known {
		v, loaded := r.convs.LoadOrStore(c, &windowKeys{})
		wk = v.(*windowKeys)
		if !loaded && r.count.Add(1) > windowKeyConvs {
			r.dropOldest()
		}
		wk.mu.Lock()
		defer wk.mu.Unlock()
		wk.used = r.clock.Add(1)
	}
	var next map[weak.Pointer[byte]]windowKey
	if wk != nil {
		next = make(map[weak.Pointer[byte]]windowKey, len(window))
	}
	for _, m := range window {
		raw := m.Raw()
		var key uint64
		if wk == nil || len(raw) == 0 {
			key = MessageTextKey(m)
		} else {
			wp := weak.Make(&raw[0])
			if k, ok := wk.m[wp]; ok && k.n == len(raw) {
				key = k.key
				next[wp] = k
			} else {
				key = MessageTextKey(m)
				next[wp] = windowKey{len(raw), key}
			}
		}
		if key != 0 {
			out[key] = true
		}
	}
	if wk != nil {
		wk.m = next
	}
	return out
}

// dropOldest drops the least recently used conversation's window
// keys.
func (r *WindowKeys) dropOldest() {
	var oldest any
	oldestUse := int64(math.MaxInt64)
	r.convs.Range(func(k, v any) bool {
		if u := v.(*windowKeys).usedAt(); u < oldestUse {
			oldest, oldestUse = k, u
		}
		return true
	})
	if oldest != nil {
		if _, ok := r.convs.LoadAndDelete(oldest); ok {
			r.count.Add(-1)
		}
	}
}

func (wk *windowKeys) usedAt() int64 {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	return wk.used
}

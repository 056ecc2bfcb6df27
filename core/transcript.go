package core

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/lossless-engine/contextengine/internal/jsonstr"
)

// Transcript entry types (CONTRACT §3).
const (
	EntrySession             = "session"
	EntryMessage             = "message"
	EntryCompaction          = "compaction"
	EntryBranchSummary       = "branch_summary"
	EntryReset               = "reset"
	EntryModelChange         = "model_change"
	EntryThinkingLevelChange = "thinking_level_change"
	EntryCustom              = "custom"
	EntryCustomMessage       = "custom_message"
	EntryLabel               = "label"
	EntrySessionInfo         = "session_info"
)

// CurrentTranscriptVersion is the session header version this package writes.
const CurrentTranscriptVersion = 4

// Header is the first line of a session transcript.
type Header struct {
	Type          string `json:"type"`
	Version       int    `json:"version,omitempty"`
	ID            string `json:"id"`
	Timestamp     string `json:"timestamp"`
	Cwd           string `json:"cwd,omitempty"`
	ParentSession string `json:"parentSession,omitempty"`
	// Raw is the exact line.
	Raw []byte `json:"-"`
}

// Entry is one transcript line after the header. Raw keeps the exact bytes of
// the line (without its newline); the typed fields are decoded from it.
type Entry struct {
	Type      string  `json:"type"`
	ID        string  `json:"id,omitempty"`
	ParentID  *string `json:"parentId,omitempty"`
	Timestamp string  `json:"timestamp,omitempty"`

	// Message is set for "message" entries.
	Message Message `json:"message,omitempty"`

	// compaction, branch_summary and reset fields.
	Summary             string          `json:"summary,omitempty"`
	FirstKeptEntryID    string          `json:"firstKeptEntryId,omitempty"`
	FirstKeptEntryIndex *int            `json:"firstKeptEntryIndex,omitempty"`
	TokensBefore        int             `json:"tokensBefore,omitempty"`
	TokensAfter         *int            `json:"tokensAfter,omitempty"`
	Details             json.RawMessage `json:"details,omitempty"`
	FromID              string          `json:"fromId,omitempty"`
	Reason              string          `json:"reason,omitempty"`

	// Line is the 1-based line number in the file, Index the 0-based index
	// among the file's non-empty lines (the header is index 0: the unit of
	// old files' firstKeptEntryIndex), Offset the byte offset of the line.
	Line   int   `json:"-"`
	Index  int   `json:"-"`
	Offset int64 `json:"-"`
	// Raw is the exact line.
	Raw []byte `json:"-"`
}

// Key returns the entry's id, or for old files without ids a key derived
// from its index ("#<index>").
func (e Entry) Key() string {
	if e.ID != "" {
		return e.ID
	}
	return fmt.Sprintf("#%d", e.Index)
}

// LineError reports a malformed transcript line; the reader skips it.
type LineError struct {
	Line   int
	Offset int64
	Err    error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("core: transcript line %d (byte %d): %v", e.Line, e.Offset, e.Err)
}

// Unwrap returns ErrMalformedLine.
func (e *LineError) Unwrap() error { return ErrMalformedLine }

// TranscriptReader reads a session JSONL stream entry by entry in constant
// memory. Malformed lines are recorded (Malformed) and skipped. A last line
// without its newline is returned only if it is complete JSON; otherwise it
// is left unread (a writer may be in the middle of it) and Offset stays
// before it.
type TranscriptReader struct {
	r         *bufio.Reader
	offset    int64 // bytes consumed, up to the end of the last complete line
	line      int
	index     int
	header    *Header
	malformed []LineError
	maxLine   int
}

// NewTranscriptReader returns a reader of r. startOffset is the byte offset
// r starts at in its file, startLine the number of lines before it and
// startIndex the number of non-empty lines before it (all 0 for a whole
// file), so that incremental readers report true positions.
func NewTranscriptReader(r io.Reader, startOffset int64, startLine, startIndex int) *TranscriptReader {
	return &TranscriptReader{r: bufio.NewReaderSize(r, 256<<10), offset: startOffset,
		line: startLine, index: startIndex, maxLine: 512 << 20}
}

// Header returns the session header, once read (nil for header-less files).
func (t *TranscriptReader) Header() *Header { return t.header }

// Malformed returns the malformed lines seen so far.
func (t *TranscriptReader) Malformed() []LineError { return t.malformed }

// Offset returns the byte offset just past the last line consumed.
func (t *TranscriptReader) Offset() int64 { return t.offset }

// Lines returns the number of lines consumed.
func (t *TranscriptReader) Lines() int { return t.line }

// Index returns the number of non-empty lines consumed.
func (t *TranscriptReader) Index() int { return t.index }

// Next returns the next entry, or io.EOF. The header line is consumed into
// Header and not returned.
func (t *TranscriptReader) Next() (Entry, error) {
	for {
		start := t.offset
		line, err := t.r.ReadBytes('\n')
		complete := err == nil
		if err != nil && err != io.EOF {
			return Entry{}, fmt.Errorf("core: read transcript: %w", err)
		}
		if len(line) == 0 && err == io.EOF {
			return Entry{}, io.EOF
		}
		body := bytes.TrimRight(line, "\r\n")
		if !complete && !json.Valid(bytes.TrimSpace(body)) {
			// A partial last line: leave it unread.
			return Entry{}, io.EOF
		}
		t.offset += int64(len(line))
		t.line++
		if len(bytes.TrimSpace(body)) == 0 {
			continue
		}
		idx := t.index
		t.index++
		e, herr, perr := ParseEntryLine(body, true)
		if perr != nil {
			t.malformed = append(t.malformed, LineError{Line: t.line, Offset: start, Err: perr})
			continue
		}
		if herr != nil {
			if t.header == nil && idx == 0 {
				t.header = herr
			}
			continue
		}
		e.Line, e.Index, e.Offset = t.line, idx, start
		return e, nil
	}
}

// ParseEntryLine parses one non-empty line of a session file (without its
// newline), as TranscriptReader does: it returns an entry, the session
// header, or the error a LineError carries for a malformed line. With
// keepRaw, the entry's Raw is a copy of the line; without it only a
// compaction entry keeps its Raw (an import stores the message, not the
// line). A header always keeps its Raw.
//
// The common case (a well-formed entry) is decoded in one pass, its
// message parsed once; anything else (headers, malformed lines, repeated
// keys) goes through the reference parser, so results and error texts
// are the same either way (FuzzParseEntryLine checks it).
func ParseEntryLine(body []byte, keepRaw bool) (Entry, *Header, error) {
	if e, ok := parseEntryFast(body); ok {
		if keepRaw || e.Type == EntryCompaction {
			e.Raw = bytes.Clone(body)
		}
		return e, nil, nil
	}
	e, h, err := parseLine(body)
	if err == nil && h == nil && !keepRaw && e.Type != EntryCompaction {
		e.Raw = nil
	}
	return e, h, err
}

// lineMessage collects the "message" values of an entry line (normally
// one) without parsing them, so that the message is decoded once, by
// ParseMessage.
type lineMessage struct {
	raws [][]byte
}

// UnmarshalJSON records b (a slice of the line, which outlives the call).
func (m *lineMessage) UnmarshalJSON(b []byte) error {
	m.raws = append(m.raws, b)
	return nil
}

// lineEntry mirrors Entry's JSON fields, with the message kept raw.
type lineEntry struct {
	Type                string          `json:"type"`
	ID                  string          `json:"id,omitempty"`
	ParentID            *string         `json:"parentId,omitempty"`
	Timestamp           string          `json:"timestamp,omitempty"`
	Message             lineMessage     `json:"message,omitempty"`
	Summary             string          `json:"summary,omitempty"`
	FirstKeptEntryID    string          `json:"firstKeptEntryId,omitempty"`
	FirstKeptEntryIndex *int            `json:"firstKeptEntryIndex,omitempty"`
	TokensBefore        int             `json:"tokensBefore,omitempty"`
	TokensAfter         *int            `json:"tokensAfter,omitempty"`
	Details             json.RawMessage `json:"details,omitempty"`
	FromID              string          `json:"fromId,omitempty"`
	Reason              string          `json:"reason,omitempty"`
}

// parseEntryFast decodes the common case (Raw left unset); ok is false
// when the line needs the reference parser (parseLine), to be reported or
// decoded exactly as it does.
func parseEntryFast(body []byte) (Entry, bool) {
	if !utf8Valid(body) {
		return Entry{}, false
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Entry{}, false
	}
	var le lineEntry
	if json.Unmarshal(trimmed, &le) != nil || le.Type == "" || le.Type == EntrySession ||
		len(le.Message.raws) > 1 {
		return Entry{}, false
	}
	ent := Entry{Type: le.Type, ID: le.ID, ParentID: le.ParentID, Timestamp: le.Timestamp,
		Summary: le.Summary, FirstKeptEntryID: le.FirstKeptEntryID, FirstKeptEntryIndex: le.FirstKeptEntryIndex,
		TokensBefore: le.TokensBefore, TokensAfter: le.TokensAfter, Details: le.Details, FromID: le.FromID,
		Reason: le.Reason}
	if len(le.Message.raws) == 1 && string(bytes.TrimSpace(le.Message.raws[0])) != "null" {
		m, err := ParseMessage(le.Message.raws[0])
		if err != nil {
			return Entry{}, false
		}
		ent.Message = m
	}
	if ent.Type == EntryMessage && ent.Message.IsZero() {
		return Entry{}, false
	}
	return ent, true
}

// parseLine is the reference parser of one line (ParseEntryLine's slow
// path): the entry's Raw and the header's are copies of body.
func parseLine(body []byte) (Entry, *Header, error) {
	if !utf8Valid(body) {
		return Entry{}, nil, fmt.Errorf("invalid UTF-8")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Entry{}, nil, fmt.Errorf("not a JSON object")
	}
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(trimmed, &probe); err != nil {
		return Entry{}, nil, fmt.Errorf("invalid JSON: %v", err)
	}
	own := make([]byte, len(body))
	copy(own, body)
	if probe.Type == EntrySession {
		h := new(Header)
		if err := json.Unmarshal(trimmed, h); err != nil {
			return Entry{}, nil, fmt.Errorf("invalid session header: %v", err)
		}
		// The session ids are names the engine keys on: one that decoding
		// changed (an unpaired surrogate escape) would be stored as another.
		var names struct {
			ID            json.RawMessage `json:"id"`
			ParentSession json.RawMessage `json:"parentSession"`
		}
		if err := json.Unmarshal(trimmed, &names); err != nil {
			return Entry{}, nil, fmt.Errorf("invalid session header: %v", err)
		}
		for _, f := range [...]struct {
			key string
			raw json.RawMessage
		}{{"id", names.ID}, {"parentSession", names.ParentSession}} {
			if i, why := jsonstr.Altered(f.raw); len(f.raw) > 0 && f.raw[0] == '"' && i >= 0 {
				return Entry{}, nil, fmt.Errorf("session header: %q is not valid UTF-8 (%s at byte %d of its JSON string; decoding would replace it with U+FFFD)", f.key, why, i)
			}
		}
		h.Raw = own
		return Entry{}, h, nil
	}
	if probe.Type == "" {
		return Entry{}, nil, fmt.Errorf("missing \"type\"")
	}
	var e Entry
	if err := json.Unmarshal(trimmed, &e); err != nil {
		return Entry{}, nil, fmt.Errorf("invalid %s entry: %v", probe.Type, err)
	}
	if e.Type == EntryMessage && e.Message.IsZero() {
		return Entry{}, nil, fmt.Errorf("message entry without a message")
	}
	e.Raw = own
	return e, nil, nil
}

// Transcript is a whole session file in memory.
type Transcript struct {
	Path      string
	Header    *Header
	Entries   []Entry
	Malformed []LineError
	// Size is the number of bytes read (up to the end of the last line read).
	Size int64
}

// ReadTranscript reads a whole session file. A missing file is an error
// wrapping fs.ErrNotExist; malformed lines are listed in Malformed.
func ReadTranscript(path string) (*Transcript, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("core: open transcript: %w", err)
	}
	defer f.Close()
	t, err := ParseTranscript(f)
	if err != nil {
		return nil, err
	}
	t.Path = path
	return t, nil
}

// ParseTranscript reads a whole session stream.
func ParseTranscript(r io.Reader) (*Transcript, error) {
	tr := NewTranscriptReader(r, 0, 0, 0)
	t := &Transcript{}
	for {
		e, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		t.Entries = append(t.Entries, e)
	}
	t.Header, t.Malformed, t.Size = tr.Header(), tr.Malformed(), tr.Offset()
	return t, nil
}

// ActiveBranch returns the entries on the path from the root to the last
// entry, following parentId links. Files without ids (or whose last entry
// has no parentId field) are linear: every entry is on the branch.
func (t *Transcript) ActiveBranch() []Entry {
	if len(t.Entries) == 0 {
		return nil
	}
	last := t.Entries[len(t.Entries)-1]
	if last.ID == "" || last.ParentID == nil && len(t.Entries) > 1 && t.Entries[0].ID == "" {
		return t.Entries
	}
	byID := make(map[string]int, len(t.Entries))
	for i, e := range t.Entries {
		if e.ID != "" {
			byID[e.ID] = i
		}
	}
	var rev []Entry
	seen := map[string]bool{}
	cur := len(t.Entries) - 1
	for cur >= 0 {
		e := t.Entries[cur]
		if seen[e.ID] {
			break // a cycle: stop rather than loop
		}
		seen[e.ID] = true
		rev = append(rev, e)
		if e.ParentID == nil || *e.ParentID == "" {
			break
		}
		next, ok := byID[*e.ParentID]
		if !ok {
			break
		}
		cur = next
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// Window is the model-visible part of a transcript: the last compaction's
// (or reset's) summary, if any, and the entries kept after it.
type Window struct {
	// Compaction is the last compaction or reset entry on the branch, or nil.
	Compaction *Entry
	// Entries are the kept entries in order: those from the first kept entry
	// up to the compaction, then every entry after it (compaction entries
	// themselves excluded).
	Entries []Entry
}

// Messages returns the window as messages: a compactionSummary message for
// the compaction (when it has a summary), then the message entries, with
// branch_summary entries as branchSummary messages.
func (w Window) Messages() []Message {
	var out []Message
	if w.Compaction != nil && w.Compaction.Summary != "" {
		out = append(out, mustNew(map[string]any{"role": RoleCompactionSummary,
			"summary": w.Compaction.Summary, "tokensBefore": w.Compaction.TokensBefore,
			"timestamp": parseTimestamp(json.RawMessage(fmt.Sprintf("%q", w.Compaction.Timestamp)))}))
	}
	for _, e := range w.Entries {
		if m, ok := e.ModelMessage(); ok {
			out = append(out, m)
		}
	}
	return out
}

// ModelMessage returns the message an entry contributes to the model's
// context: a message entry's message, a branch_summary as a branchSummary
// message, a custom_message as a custom message.
func (e Entry) ModelMessage() (Message, bool) {
	switch e.Type {
	case EntryMessage:
		return e.Message, true
	case EntryBranchSummary:
		return mustNew(map[string]any{"role": RoleBranchSummary, "summary": e.Summary,
			"fromId": e.FromID}), true
	}
	return Message{}, false
}

// Window computes the model-visible window of the active branch.
func (t *Transcript) Window() Window {
	branch := t.ActiveBranch()
	last := -1
	for i := len(branch) - 1; i >= 0; i-- {
		if branch[i].Type == EntryCompaction || branch[i].Type == EntryReset {
			last = i
			break
		}
	}
	if last < 0 {
		return Window{Entries: filterCompactions(branch)}
	}
	c := branch[last]
	first := last // nothing kept before the compaction unless it names an entry
	switch {
	case c.FirstKeptEntryID != "":
		for i := 0; i < last; i++ {
			if branch[i].ID == c.FirstKeptEntryID || branch[i].ID == "" && branch[i].Key() == c.FirstKeptEntryID {
				first = i
				break
			}
		}
	case c.FirstKeptEntryIndex != nil:
		for i := 0; i < last; i++ {
			if branch[i].Index >= *c.FirstKeptEntryIndex {
				first = i
				break
			}
		}
	}
	kept := append(filterCompactions(branch[first:last]), filterCompactions(branch[last+1:])...)
	return Window{Compaction: &c, Entries: kept}
}

func filterCompactions(es []Entry) []Entry {
	out := make([]Entry, 0, len(es))
	for _, e := range es {
		if e.Type != EntryCompaction && e.Type != EntryReset {
			out = append(out, e)
		}
	}
	return out
}

// NewEntryID returns a fresh 8-hex-digit entry id, as OpenClaw writes them.
func NewEntryID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NowTimestamp returns the current time as OpenClaw writes entry timestamps.
func NowTimestamp() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }

// AppendTranscript appends JSON lines to path (creating it if needed) and
// syncs the file. Each value is encoded without HTML escaping; a []byte or
// json.RawMessage is written as is. Earlier lines are never rewritten.
func AppendTranscript(path string, values ...any) error {
	var buf bytes.Buffer
	for _, v := range values {
		if err := encodeLine(&buf, v); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("core: append transcript: %w", err)
	}
	// A file that does not end in a newline (a torn last line) gets one first,
	// so the appended entries stay on lines of their own.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		if last, err := lastByte(path, st.Size()); err == nil && last != '\n' {
			buf2 := append([]byte{'\n'}, buf.Bytes()...)
			buf.Reset()
			buf.Write(buf2)
		}
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("core: append transcript: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("core: sync transcript: %w", err)
	}
	return f.Close()
}

func lastByte(path string, size int64) (byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, size-1); err != nil {
		return 0, err
	}
	return b[0], nil
}

func encodeLine(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case []byte:
		buf.Write(x)
		buf.WriteByte('\n')
		return nil
	case json.RawMessage:
		buf.Write(x)
		buf.WriteByte('\n')
		return nil
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("core: encode transcript line: %w", err)
	}
	return nil
}

// WriteTranscriptFile writes a new transcript atomically: the lines go to a
// temporary file in the same directory, which is synced and then hard-linked
// to path (link, not rename: a file that appeared at path meanwhile makes the
// link fail instead of being replaced), and the directory is synced. An
// existing file at path is refused with fs.ErrExist, so a rotation never
// overwrites history.
func WriteTranscriptFile(path string, values ...any) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("core: write transcript %s: %w", path, os.ErrExist)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("core: write transcript: %w", err)
	}
	var buf bytes.Buffer
	for _, v := range values {
		if err := encodeLine(&buf, v); err != nil {
			return err
		}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("core: write transcript: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".transcript-*.tmp")
	if err != nil {
		return fmt.Errorf("core: write transcript: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("core: write transcript: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("core: write transcript: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("core: write transcript: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("core: write transcript: %w", err)
	}
	return syncDir(dir)
}

// syncDir makes a new name in dir durable: the file's link survives a
// crash once the directory's fsync has returned. Windows cannot open a
// directory for syncing, and its renames are durable on return.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("core: write transcript: sync directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("core: write transcript: sync directory %s: %w", dir, err)
	}
	return nil
}

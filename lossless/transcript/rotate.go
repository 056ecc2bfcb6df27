package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/uuid"
	"github.com/lossless-engine/contextengine/core"
)

// Transcript rotation's file: the successor session file that a rotation
// writes (lossless/rotate.go decides when, gathers the kept tail and the
// summary, and maps the new session id to the same conversation). The old
// file is never touched.

// SuccessorParams are the arguments of WriteSuccessor.
type SuccessorParams struct {
	// Path is the active transcript, Transcript its contents as read.
	Path       string
	Transcript *core.Transcript
	// Tail holds the raw bytes of the messages kept after the summary (the
	// context's messages after its last summary), in order.
	Tail [][]byte
	// Summary is the compaction entry's summary, SummaryIDs the summaries
	// it renders.
	Summary    string
	SummaryIDs []string
	// Engine and Conv name the engine and the conversation (hex id) in the
	// compaction entry's details; SessionID is the rotated session's id.
	Engine, Conv, SessionID string
	// TokensBefore and TokensAfter are the compaction's context sizes.
	TokensBefore, TokensAfter int
}

// Successor is a successor file written by WriteSuccessor.
type Successor struct {
	// SessionID is the new session's id, Path its file (beside the old
	// one, SessionID + ".jsonl").
	SessionID, Path string
	// FirstKeptEntryID is the first kept entry's id ("" when none was
	// kept), KeptEntries the number of entries copied after the compaction
	// entry.
	FirstKeptEntryID string
	KeptEntries      int
	// CheckpointPath and Checkpoint are the successor's import checkpoint
	// (SuccessorCheckpoint), to be stored with the new session id's
	// mapping.
	CheckpointPath string
	Checkpoint     Checkpoint
}

// WriteSuccessor writes the successor of the transcript p.Path under a new
// session id: a header naming the old file as parentSession, a compaction
// entry with the summary, then the kept tail (the window's entries from
// the one holding the first tail message, KeptStart), each with a new id
// chain and its message byte for byte. The file is written atomically
// (core.WriteTranscriptFile: temporary file, sync, link).
func WriteSuccessor(p SuccessorParams) (Successor, error) {
	t, path := p.Transcript, p.Path
	window := t.Window().Entries
	k := KeptStart(window, p.Tail)
	kept := window[k:]

	newID := uuid.NewString()
	newPath := filepath.Join(filepath.Dir(path), newID+".jsonl")
	now := core.NowTimestamp()
	header := map[string]any{"type": core.EntrySession, "version": core.CurrentTranscriptVersion, "id": newID,
		"timestamp": now, "parentSession": path}
	if t.Header != nil && t.Header.Cwd != "" {
		header["cwd"] = t.Header.Cwd
	}
	compID := core.NewEntryID()
	details, _ := json.Marshal(map[string]any{"engine": p.Engine, "conversation": p.Conv,
		"previousSessionId": p.SessionID, "summaryIds": p.SummaryIDs})
	var lines []any
	lines = append(lines, header)
	comp := map[string]any{"type": core.EntryCompaction, "id": compID, "parentId": nil, "timestamp": now,
		"summary": p.Summary, "tokensBefore": p.TokensBefore, "tokensAfter": p.TokensAfter, "details": json.RawMessage(details)}
	lines = append(lines, comp)
	prev, firstKept := compID, ""
	used := map[string]bool{compID: true}
	for _, ent := range kept {
		id := ent.ID
		for id == "" || used[id] {
			id = core.NewEntryID()
		}
		used[id] = true
		line, err := RewriteEntry(ent.Raw, id, prev, now)
		if err != nil {
			return Successor{}, fmt.Errorf("lossless: rotate: entry on line %d: %w", ent.Line, err)
		}
		lines = append(lines, json.RawMessage(line))
		if firstKept == "" {
			firstKept = id
		}
		prev = id
	}
	if firstKept != "" {
		comp["firstKeptEntryId"] = firstKept
	}
	if err := core.WriteTranscriptFile(newPath, lines...); err != nil {
		return Successor{}, fmt.Errorf("lossless: rotate: %w", err)
	}
	cpPath, cp, err := SuccessorCheckpoint(newPath, newID, p.Conv)
	if err != nil {
		return Successor{}, err
	}
	return Successor{SessionID: newID, Path: newPath, FirstKeptEntryID: firstKept, KeptEntries: len(kept),
		CheckpointPath: cpPath, Checkpoint: cp}, nil
}

// KeptStart returns the index of the first window entry to keep: the entry
// holding the first tail message (matched by its bytes, the last such
// entry), else as many message entries from the end as the tail has.
func KeptStart(window []core.Entry, tail [][]byte) int {
	if len(tail) == 0 {
		return len(window)
	}
	for i := len(window) - 1; i >= 0; i-- {
		if window[i].Type == core.EntryMessage && bytes.Equal(window[i].Message.Raw(), tail[0]) {
			return i
		}
	}
	n := 0
	for i := len(window) - 1; i >= 0; i-- {
		if window[i].Type == core.EntryMessage {
			n++
			if n == len(tail) {
				return i
			}
		}
	}
	return 0
}

// SuccessorCheckpoint returns the import checkpoint of a successor file
// just written at path (and path made absolute, the checkpoint's key) for
// session sessionID of conversation conv (its hex id): everything in it is
// already stored (the summaries and the kept messages), so a Bootstrap of
// the new session reads only what the host appends later. Without it the
// import would turn the successor's compaction entry into a summary over
// the kept tail.
func SuccessorCheckpoint(path, sessionID, conv string) (string, Checkpoint, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	f, err := os.Open(path)
	if err != nil {
		return "", Checkpoint{}, fmt.Errorf("lossless: rotate: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", Checkpoint{}, fmt.Errorf("lossless: rotate: %w", err)
	}
	tr := core.NewTranscriptReader(f, 0, 0, 0)
	var lastStart int64
	for {
		ent, err := tr.Next()
		if err != nil {
			break
		}
		lastStart = ent.Offset
	}
	if tr.Offset() != st.Size() {
		return "", Checkpoint{}, fmt.Errorf("lossless: rotate: successor %s read to %d of %d bytes", path, tr.Offset(), st.Size())
	}
	if _, err := f.Seek(0, 0); err != nil {
		return "", Checkpoint{}, fmt.Errorf("lossless: rotate: %w", err)
	}
	tail, err := HashRange(f, lastStart, st.Size())
	if err != nil {
		return "", Checkpoint{}, err
	}
	return path, Checkpoint{SessionID: sessionID, Conv: conv, Offset: st.Size(), Line: tr.Lines(), Index: tr.Index(),
		MtimeNs: st.ModTime().UnixNano(), HeadHash: HashFirstLine(f), TailStart: lastStart, TailHash: tail}, nil
}

// RewriteEntry returns the transcript entry raw with its id and parentId
// set (and a timestamp when it has none). Every other member keeps its
// bytes and order: the message inside stays byte for byte what was
// stored (encoding/json would re-compact and re-escape it).
func RewriteEntry(raw []byte, id, parent, now string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var out bytes.Buffer
	out.WriteByte('{')
	idJSON, _ := json.Marshal(id)
	parentJSON, _ := json.Marshal(parent)
	fmt.Fprintf(&out, `"id":%s,"parentId":%s`, idJSON, parentJSON)
	hasTime := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("bad member name")
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		if key == "id" || key == "parentId" {
			continue
		}
		if key == "timestamp" {
			hasTime = true
		}
		k, _ := json.Marshal(key)
		out.WriteByte(',')
		out.Write(k)
		out.WriteByte(':')
		out.Write(val)
	}
	if !hasTime {
		t, _ := json.Marshal(now)
		fmt.Fprintf(&out, `,"timestamp":%s`, t)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lossless-engine/contextengine/core"
)

// The pure parts of transcript rotation (lossless/rotate.go writes the
// successor file and maps its session id).

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

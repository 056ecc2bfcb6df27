package bridge

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"
)

// OpenClaw 2026.9.6 sends a transcript entry anchor's generation as a string
// (a random 32-hex-digit token: TranscriptEntryAnchor.generation: string in
// its .d.ts), while core.EntryAnchor.Generation is an int64. Until core
// changes the field to a string, the bridge rewrites string generations of
// commitTurn's admission and terminal anchors before decoding: a decimal
// string becomes that number, any other string a stable 63-bit FNV-1a hash
// of it (the same token always maps to the same number). Without this,
// every commitTurn from OpenClaw would fail with invalid params and
// quarantine the engine.

// normalizeCommitTurn returns params with the anchors' string generations
// replaced (params itself when there is nothing to replace). Message bytes
// are kept.
func normalizeCommitTurn(params json.RawMessage) (json.RawMessage, error) {
	if !containsFold(params, []byte("generation")) {
		return params, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(params, &top); err != nil {
		return params, nil // decode reports it
	}
	changed := false
	// Keys match case-insensitively, as encoding/json matches struct fields.
	for k, raw := range top {
		if !strings.EqualFold(k, "admission") && !strings.EqualFold(k, "terminal") || firstByte(raw) != '{' {
			continue
		}
		var anchor map[string]json.RawMessage
		if err := json.Unmarshal(raw, &anchor); err != nil {
			continue
		}
		touched := false
		for ak, g := range anchor {
			if !strings.EqualFold(ak, "generation") || firstByte(g) != '"' {
				continue
			}
			var s string
			if err := json.Unmarshal(g, &s); err != nil {
				continue
			}
			anchor[ak] = json.RawMessage(strconv.FormatInt(GenerationNumber(s), 10))
			touched = true
		}
		if !touched {
			continue
		}
		b, err := encode(anchor)
		if err != nil {
			return nil, err
		}
		top[k] = b
		changed = true
	}
	if !changed {
		return params, nil
	}
	return encode(top)
}

// GenerationNumber maps an OpenClaw transcript generation token to the
// int64 core.EntryAnchor.Generation holds: a decimal string is its value, any
// other string a stable non-negative 63-bit FNV-1a hash.
func GenerationNumber(s string) int64 {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	h := fnv.New64a()
	h.Write([]byte(s))
	return int64(h.Sum64() >> 1)
}

// containsFold reports whether b contains the ASCII word sub, ignoring case,
// without allocating.
func containsFold(b, sub []byte) bool {
	for i := 0; i+len(sub) <= len(b); i++ {
		if (b[i]|0x20) == sub[0] && bytes.EqualFold(b[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

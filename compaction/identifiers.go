package compaction

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/ident"
)

// Identifiers returns the distinct opaque identifiers of text in order of
// first appearance, as package ident finds them, without its code names
// (ident.Name): UUIDs, URLs, file paths and file names, hex hashes, IPv4
// addresses, host names and host:port pairs. They are what a summary must
// keep character for character.
func Identifiers(text string) []ident.Identifier {
	var out []ident.Identifier
	seen := map[string]bool{}
	ident.Scan(text, func(start, end int, kind ident.Kind) {
		v := text[start:end]
		if kind == ident.Name || seen[v] {
			return
		}
		seen[v] = true
		out = append(out, ident.Identifier{Kind: kind, Value: v})
	})
	return out
}

// RetentionKinds are the identifier kinds counted by Retention.
var RetentionKinds = []ident.Kind{ident.UUID, ident.Path, ident.URL}

// Retention measures how many of the distinct identifiers of the kinds in
// RetentionKinds found in source appear verbatim in summary.
type Retention struct {
	// Total is the number of distinct identifiers in the source.
	Total int `json:"total"`
	// Kept is how many of them the summary contains.
	Kept int `json:"kept"`
	// Ratio is Kept/Total (1 when Total is 0).
	Ratio float64 `json:"ratio"`
	// Missing lists up to 20 identifiers the summary lost.
	Missing []string `json:"missing,omitempty"`
}

// MeasureRetention returns the identifier retention of summary over the
// identifiers ids (normally Identifiers of the summarised text).
func MeasureRetention(ids []ident.Identifier, summary string) Retention {
	want := map[ident.Kind]bool{}
	for _, k := range RetentionKinds {
		want[k] = true
	}
	var r Retention
	for _, id := range ids {
		if !want[id.Kind] {
			continue
		}
		r.Total++
		if strings.Contains(summary, id.Value) {
			r.Kept++
		} else if len(r.Missing) < 20 {
			r.Missing = append(r.Missing, id.Value)
		}
	}
	r.Ratio = 1
	if r.Total > 0 {
		r.Ratio = float64(r.Kept) / float64(r.Total)
	}
	return r
}

// Tool names whose path argument is read or modified.
var (
	readTools   = map[string]bool{"read": true, "read_file": true, "view": true, "cat": true, "open": true}
	modifyTools = map[string]bool{"edit": true, "write": true, "multi_edit": true, "multiedit": true,
		"edit_file": true, "write_file": true, "create": true, "create_file": true, "str_replace": true,
		"apply_patch": true, "patch": true}
	pathArgs = []string{"path", "file_path", "filePath", "file", "filename", "target_file"}
)

// FileOps lists the files a span of messages read and modified, from its
// tool calls (read/edit/write tool names and their path arguments). A file
// both read and modified is listed as modified only. Both lists are sorted.
type FileOps struct {
	Read     []string `json:"readFiles"`
	Modified []string `json:"modifiedFiles"`
}

// CollectFileOps returns the files read and modified by the tool calls of
// msgs, merged with prev (the lists of a previous compaction).
func CollectFileOps(msgs []core.Message, prev FileOps) FileOps {
	read, mod := map[string]bool{}, map[string]bool{}
	for _, p := range prev.Read {
		read[p] = true
	}
	for _, p := range prev.Modified {
		mod[p] = true
	}
	for _, m := range msgs {
		for _, b := range m.ToolCalls() {
			name := strings.ToLower(b.Name)
			isRead, isMod := readTools[name], modifyTools[name]
			if !isRead && !isMod {
				continue
			}
			var args map[string]json.RawMessage
			if json.Unmarshal(b.Arguments, &args) != nil {
				continue
			}
			for _, k := range pathArgs {
				var p string
				if json.Unmarshal(args[k], &p) != nil || strings.TrimSpace(p) == "" {
					continue
				}
				p = strings.TrimSpace(p)
				if isMod {
					mod[p] = true
				} else {
					read[p] = true
				}
				break
			}
		}
	}
	var ops FileOps
	for p := range read {
		if !mod[p] {
			ops.Read = append(ops.Read, p)
		}
	}
	for p := range mod {
		ops.Modified = append(ops.Modified, p)
	}
	sort.Strings(ops.Read)
	sort.Strings(ops.Modified)
	return ops
}

package compaction

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"github.com/lossless-engine/contextengine/core"
)

// Identifier kinds reported by Identifiers.
const (
	IDUUID = "uuid" // 8-4-4-4-12 hex UUIDs
	IDURL  = "url"  // http(s), ws(s), ftp and file URLs
	IDPath = "path" // file paths and file names
	IDHash = "hash" // hex digests and commit hashes (7–64 hex digits)
	IDHost = "host" // IPv4 addresses and host:port pairs
)

// Identifier is one opaque identifier found in text.
type Identifier struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

var (
	reURL  = regexp.MustCompile(`\b(?:https?|wss?|ftp|file)://[^\s"'<>()\[\]{}` + "`" + `]+`)
	reUUID = regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)
	reIPv4 = regexp.MustCompile(`\b(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}(?::\d{1,5})?\b`)
	// host:port with a dotted or well-known host name.
	reHostPort = regexp.MustCompile(`\b(?:localhost|[a-zA-Z][\w-]*(?:\.[\w-]+)+):\d{2,5}\b`)
	reHash     = regexp.MustCompile(`\b[0-9a-f]{7,64}\b`)
	// Absolute (/a/b, ~/a/b) or relative (a/b.c, ./a, ../a) paths.
	rePath = regexp.MustCompile(`(?:~|\.{1,2})?/?(?:[\w@.+-]+/)+[\w@.+-]+|~/[\w@.+-]+`)
	// Bare file names with an extension.
	reFile = regexp.MustCompile(`\b[\w@+-]+(?:\.[\w-]+)*\.(?:go|mod|sum|ts|tsx|js|jsx|mjs|cjs|json|jsonl|json5|md|txt|py|rs|c|h|cc|cpp|hpp|java|kt|swift|rb|php|sh|bash|zsh|yaml|yml|toml|ini|cfg|conf|env|lock|html|css|scss|sql|proto|xml|csv|log|png|jpg|jpeg|gif|svg|pdf|zip|gz|tar|wasm|vue|svelte|dart|lua|zig|ex|exs|scala|cs|fs|m|mm|pl|r|jl|nim|tf|dockerfile|makefile)\b`)
)

// Identifiers returns the distinct opaque identifiers of text in order of
// first appearance: UUIDs, URLs, file paths and file names, hex hashes, IPv4
// addresses and host:port pairs. They are what a summary must keep
// character for character.
func Identifiers(text string) []Identifier {
	var out []Identifier
	seen := map[string]bool{}
	type hit struct {
		at   int
		kind string
		val  string
	}
	var hits []hit
	// Spans already claimed by a more specific kind are masked out.
	mask := []byte(text)
	claim := func(re *regexp.Regexp, kind string, accept func(string) bool) {
		for _, loc := range re.FindAllIndex(mask, -1) {
			v := text[loc[0]:loc[1]]
			v = strings.TrimRight(v, ".,;:!?'\"")
			if v == "" || (accept != nil && !accept(v)) {
				continue
			}
			hits = append(hits, hit{loc[0], kind, v})
			for i := loc[0]; i < loc[1]; i++ {
				mask[i] = ' '
			}
		}
	}
	claim(reURL, IDURL, func(v string) bool { return len(v) > len("http://x") })
	claim(reUUID, IDUUID, nil)
	claim(reIPv4, IDHost, func(v string) bool { return strings.Count(v, ".") == 3 })
	claim(reHostPort, IDHost, nil)
	claim(rePath, IDPath, isPlausiblePath)
	claim(reFile, IDPath, func(v string) bool { return !isNumeric(v) })
	claim(reHash, IDHash, isPlausibleHash)
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].at < hits[j].at })
	for _, h := range hits {
		if seen[h.val] {
			continue
		}
		seen[h.val] = true
		out = append(out, Identifier{Kind: h.kind, Value: h.val})
	}
	return out
}

func isPlausiblePath(v string) bool {
	if len(v) < 3 || !strings.Contains(v, "/") {
		return false
	}
	// A fraction or a date like 1/2 or 12/31/2024 is not a path.
	if isNumeric(strings.ReplaceAll(strings.ReplaceAll(v, "/", ""), ".", "")) {
		return false
	}
	parts := strings.Split(strings.Trim(v, "/"), "/")
	letters := 0
	for _, p := range parts {
		for _, r := range p {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				letters++
				break
			}
		}
	}
	if letters == 0 {
		return false
	}
	// Two-part relative words like "and/or" or "input/output" are prose.
	if !strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "~") && !strings.HasPrefix(v, ".") &&
		len(parts) == 2 && !strings.Contains(parts[1], ".") {
		return false
	}
	return true
}

func isPlausibleHash(v string) bool {
	digits, letters := 0, 0
	for _, r := range v {
		if r >= '0' && r <= '9' {
			digits++
		} else {
			letters++
		}
	}
	return digits > 0 && letters > 0
}

func isNumeric(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// RetentionKinds are the identifier kinds counted by Retention.
var RetentionKinds = []string{IDUUID, IDPath, IDURL}

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
func MeasureRetention(ids []Identifier, summary string) Retention {
	want := map[string]bool{}
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

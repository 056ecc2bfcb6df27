package ident

import "strings"

// Kind is the kind of an identifier.
type Kind string

// The kinds Scan reports.
const (
	UUID Kind = "uuid" // 8-4-4-4-12 hex UUIDs
	URL  Kind = "url"  // scheme://… (http, https, ws, ftp, file, git+ssh, …)
	Path Kind = "path" // file paths, file names with a known extension, dotfiles
	Hash Kind = "hash" // hex strings of 7 or more characters with a digit and a letter
	Host Kind = "host" // IPv4 addresses (with a port or not), host names, host:port
	Name Kind = "name" // qualified, snake_case and camelCase names, name@version, e-mail
)

// Identifier is one identifier found in a text.
type Identifier struct {
	Kind  Kind   `json:"kind"`
	Value string `json:"value"`
}

// All returns the distinct identifiers of text in order of first
// appearance.
func All(text string) []Identifier {
	var out []Identifier
	seen := map[string]struct{}{}
	Scan(text, func(start, end int, kind Kind) {
		v := text[start:end]
		if _, ok := seen[v]; ok {
			return
		}
		seen[v] = struct{}{}
		out = append(out, Identifier{Kind: kind, Value: v})
	})
	return out
}

// Values returns the distinct identifiers of text, as strings, in order of
// first appearance.
func Values(text string) []string {
	var out []string
	seen := map[string]struct{}{}
	Scan(text, func(start, end int, _ Kind) {
		v := text[start:end]
		if _, ok := seen[v]; ok {
			return
		}
		seen[v] = struct{}{}
		out = append(out, v)
	})
	return out
}

// isDelim reports whether b ends a word for the identifier scanner.
func isDelim(b byte) bool {
	switch b {
	case ' ', '\t', '\n', '\r', '\v', '\f', '"', '\'', '`', '(', ')', '[', ']', '{', '}', '<', '>', ',', ';', '|', '*':
		return true
	}
	return false
}

// Scan calls fn with the byte offsets and the kind of every identifier of
// text, in order, with repeats: text[start:end] is the identifier. Words
// are separated by white space, quotes, brackets, ',', ';', '|' and '*'; a
// backslash ends a word (escapes, regexps) except in a Windows path
// (C:\dir\file); a word is split at '=' (key=value) unless it is a URL;
// sentence punctuation around a word is trimmed.
func Scan(text string, fn func(start, end int, kind Kind)) {
	i := 0
	for i < len(text) {
		for i < len(text) && isDelim(text[i]) {
			i++
		}
		j := i
		for j < len(text) && !isDelim(text[j]) {
			if text[j] == '\\' && !(j-i >= 2 && text[i+1] == ':' && isLetter(text[i])) {
				break
			}
			j++
		}
		if j < len(text) && j == i && text[j] == '\\' {
			j++ // skip a lone backslash
		}
		if j > i {
			scanWord(text, i, j, fn)
		}
		i = j
	}
}

// trimWord returns the bounds of text[s:e] without the sentence punctuation
// around it.
func trimWord(text string, s, e int) (int, int) {
	for e > s {
		switch text[e-1] {
		case '.', ':', '!', '?', '=':
			e--
			continue
		}
		break
	}
	for s < e && (text[s] == ':' || text[s] == '=' || text[s] == '$') {
		s++
	}
	return s, e
}

// scanWord reports the identifiers of the word text[s:e].
func scanWord(text string, s, e int, fn func(int, int, Kind)) {
	w := text[s:e]
	if k := strings.Index(w, "://"); k > 0 {
		j := k
		for j > 0 && isSchemeByte(w[j-1]) {
			j--
		}
		if j < k && isLetter(w[j]) {
			us, ue := trimWord(text, s+j, e)
			if ue-us > k-j+3 {
				fn(us, ue, URL)
				return
			}
		}
	}
	for s < e {
		k := strings.IndexByte(text[s:e], '=')
		pe := e
		if k >= 0 {
			pe = s + k
		}
		if ps, pe2 := trimWord(text, s, pe); ps < pe2 {
			if kind := classify(text[ps:pe2]); kind != "" {
				fn(ps, pe2, kind)
			}
		}
		if k < 0 {
			break
		}
		s = pe + 1
	}
}

func isSchemeByte(b byte) bool {
	return isLetter(b) || isDigit(b) || b == '+' || b == '-' || b == '.'
}

func isLetter(b byte) bool { return b|0x20 >= 'a' && b|0x20 <= 'z' }
func isDigit(b byte) bool  { return b >= '0' && b <= '9' }
func isHex(b byte) bool    { return isDigit(b) || (b|0x20 >= 'a' && b|0x20 <= 'f') }
func isUpper(b byte) bool  { return b >= 'A' && b <= 'Z' }
func isLower(b byte) bool  { return b >= 'a' && b <= 'z' }
func isIdentByte(b byte) bool {
	return isLetter(b) || isDigit(b) || b == '_'
}

// classify returns the kind of one trimmed word, or "" when it is not an
// identifier.
func classify(p string) Kind {
	n := len(p)
	if n < 3 || n > 2048 {
		return ""
	}
	var letters, digits, slashes, dots, unders, colons, ats, hexOnly int
	hexOnly = 1
	for i := 0; i < n; i++ {
		b := p[i]
		switch {
		case isLetter(b):
			letters++
			if !isHex(b) {
				hexOnly = 0
			}
		case isDigit(b):
			digits++
		case b == '/' || b == '\\':
			slashes++
			hexOnly = 0
		case b == '.':
			dots++
			hexOnly = 0
		case b == '_':
			unders++
			hexOnly = 0
		case b == ':':
			colons++
			hexOnly = 0
		case b == '@':
			ats++
			hexOnly = 0
		case b == '-' || b == '~' || b == '+' || b == '%' || b == '#' || b == '&' || b == '?':
			hexOnly = 0
		default:
			return "" // non-ASCII or other punctuation
		}
	}
	if letters == 0 {
		return when(isIPv4Port(p), Host)
	}
	if n == 36 && isUUID(p) {
		return UUID
	}
	if slashes > 0 {
		return when(isPath(p, slashes), Path)
	}
	if ats > 0 {
		k := strings.IndexByte(p, '@')
		return when(ats == 1 && k > 0 && k < n-1 && (strings.IndexByte(p[k+1:], '.') >= 0 || isDigit(p[k+1])), Name)
	}
	if colons > 0 {
		return when(colons == 1 && isHostPort(p), Host)
	}
	if dots > 0 {
		return dotted(p)
	}
	if hexOnly == 1 && n >= 7 && digits > 0 {
		return Hash
	}
	return when(isSnakeOrCamel(p, unders), Name)
}

// when returns k if ok, else "".
func when(ok bool, k Kind) Kind {
	if ok {
		return k
	}
	return ""
}

func isUUID(p string) bool {
	for i := 0; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if p[i] != '-' {
				return false
			}
		} else if !isHex(p[i]) {
			return false
		}
	}
	return true
}

func isIPv4Port(p string) bool {
	host := p
	if k := strings.IndexByte(p, ':'); k >= 0 {
		port := p[k+1:]
		if len(port) == 0 || len(port) > 5 || !allDigits(port) {
			return false
		}
		host = p[:k]
	}
	parts := 0
	for _, seg := range strings.Split(host, ".") {
		if len(seg) == 0 || len(seg) > 3 || !allDigits(seg) {
			return false
		}
		parts++
	}
	return parts == 4
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return len(s) > 0
}

func isPath(p string, slashes int) bool {
	if strings.HasPrefix(p, "//") || strings.Contains(p, "://") {
		return false
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") ||
		strings.HasPrefix(p, "~/") || strings.HasPrefix(p, "@") || slashes >= 2 {
		return true
	}
	if len(p) > 2 && isLetter(p[0]) && p[1] == ':' && p[2] == '\\' {
		return true
	}
	last := p[strings.LastIndexAny(p, "/\\")+1:]
	return hasKnownExt(last)
}

// hasKnownExt reports whether name ends in a file extension of the list.
func hasKnownExt(name string) bool {
	k := strings.LastIndexByte(name, '.')
	if k <= 0 || k == len(name)-1 {
		return false
	}
	ext := name[k+1:]
	if len(ext) > 10 {
		return false
	}
	var buf [10]byte
	for i := 0; i < len(ext); i++ {
		buf[i] = ext[i] | 0x20
	}
	_, ok := knownExt[string(buf[:len(ext)])]
	return ok
}

var knownExt = setOf("go mod sum ts tsx js jsx mjs cjs py pyi rs md mdx json jsonl json5 yaml yml toml txt " +
	"sh bash zsh fish ps1 c h cc cpp cxx hpp java kt kts rb php html htm css scss sass less sql proto swift " +
	"zig lua cfg ini conf env lock log csv tsv xml svg png jpg jpeg gif webp pdf gz tgz zip tar wasm vue svelte " +
	"dart scala clj ex exs erl hs ml nix tf hcl dockerfile gradle pem crt key pub db sqlite diff patch bak tmp " +
	"ipynb rst tex bin so dll exe dylib a o out")

var tlds = setOf("com org net io dev ai app co uk de fr jp cn ru sh gg xyz cloud local internal localhost " +
	"edu gov us eu info biz me tv ch nl se no fi pl it es ca au in br")

func setOf(words string) map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(words) {
		m[w] = struct{}{}
	}
	return m
}

func isHostPort(p string) bool {
	k := strings.IndexByte(p, ':')
	host, port := p[:k], p[k+1:]
	if len(port) == 0 || len(port) > 5 || !allDigits(port) || len(host) == 0 {
		return false
	}
	if host == "localhost" {
		return true
	}
	return strings.IndexByte(host, '.') > 0 && (isIPv4Port(host) || isHost(host))
}

func isHost(h string) bool {
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if len(l) == 0 {
			return false
		}
		for i := 0; i < len(l); i++ {
			if !(isLower(l[i]) || isDigit(l[i]) || l[i] == '-') {
				return false
			}
		}
	}
	_, ok := tlds[labels[len(labels)-1]]
	return ok
}

// dotted classifies a word with dots: a dotfile or a file name (Path), a
// host name (Host), a qualified name (Name).
func dotted(p string) Kind {
	if p[0] == '.' {
		// a dotfile: .gitignore, .env
		rest := p[1:]
		if len(rest) < 2 || strings.IndexByte(rest, '.') >= 0 && !hasKnownExt(rest) {
			return ""
		}
		for i := 0; i < len(rest); i++ {
			if !(isLower(rest[i]) || isDigit(rest[i]) || rest[i] == '-' || rest[i] == '_' || rest[i] == '.') {
				return ""
			}
		}
		return Path
	}
	if hasKnownExt(p) {
		return Path
	}
	if isHost(p) {
		return Host
	}
	// a qualified name: core.Truncate, a.b.c, obj.someField
	parts := strings.Split(p, ".")
	for _, s := range parts {
		if len(s) == 0 || isDigit(s[0]) {
			return ""
		}
		for i := 0; i < len(s); i++ {
			if !isIdentByte(s[i]) {
				return ""
			}
		}
	}
	if len(parts) == 2 && isLower(parts[0][0]) && isUpper(parts[1][0]) && len(parts[0]) >= 2 {
		return Name
	}
	if len(parts) >= 3 {
		for _, s := range parts {
			if len(s) < 2 {
				return ""
			}
		}
		return Name
	}
	for _, s := range parts {
		if isSnakeOrCamel(s, strings.Count(s, "_")) {
			return Name
		}
	}
	return ""
}

// isSnakeOrCamel reports snake_case (an underscore between alphanumerics)
// and camelCase (a lower-case letter followed by an upper-case one) names.
func isSnakeOrCamel(p string, unders int) bool {
	if !isIdentByte(p[0]) && p[0] != '-' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if !isIdentByte(p[i]) {
			return false
		}
	}
	for i := 1; i+1 < len(p); i++ {
		if unders > 0 && p[i] == '_' && p[i-1] != '_' && p[i+1] != '_' {
			return true
		}
	}
	for i := 1; i < len(p); i++ {
		if isUpper(p[i]) && (isLower(p[i-1]) || isDigit(p[i-1])) {
			return true
		}
	}
	return false
}

package summarize

import "strings"

// Identifiers returns the opaque identifiers found in text, in order of first
// appearance, without duplicates: URLs, UUIDs, hex hashes of 7 or more
// characters (with at least one digit and one letter), file paths and file
// names with a known extension, IPv4 addresses, host names, host:port pairs,
// e-mail-like and name@version tokens, qualified names (core.Truncate,
// a.b.c), snake_case and camelCase names. It never returns a string that is
// not a substring of text. The scan is linear and allocation-light.
func Identifiers(text string) []string {
	var out []string
	seen := map[string]struct{}{}
	scanIdentifiers(text, func(id string) {
		if _, ok := seen[id]; ok {
			return
		}
		seen[id] = struct{}{}
		out = append(out, id)
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

// scanIdentifiers calls fn with every identifier of text, in order (with
// repeats).
func scanIdentifiers(text string, fn func(string)) {
	i := 0
	for i < len(text) {
		for i < len(text) && isDelim(text[i]) {
			i++
		}
		j := i
		for j < len(text) && !isDelim(text[j]) {
			// A backslash ends a word (escapes, regexps) except in a
			// Windows path (C:\dir\file).
			if text[j] == '\\' && !(j-i >= 2 && text[i+1] == ':' && isLetter(text[i])) {
				break
			}
			j++
		}
		if j < len(text) && j == i && text[j] == '\\' {
			j++ // skip a lone backslash
		}
		if j > i {
			scanWord(text[i:j], fn)
		}
		i = j
	}
}

// trimWord removes sentence punctuation around a word.
func trimWord(w string) string {
	for len(w) > 0 {
		switch w[len(w)-1] {
		case '.', ':', '!', '?', '=':
			w = w[:len(w)-1]
			continue
		}
		break
	}
	for len(w) > 0 && (w[0] == ':' || w[0] == '=' || w[0] == '$') {
		w = w[1:]
	}
	return w
}

func scanWord(w string, fn func(string)) {
	if k := strings.Index(w, "://"); k > 0 {
		j := k
		for j > 0 && isSchemeByte(w[j-1]) {
			j--
		}
		if j < k && isLetter(w[j]) {
			u := trimWord(w[j:])
			if len(u) > k-j+3 {
				fn(u)
				return
			}
		}
	}
	for len(w) > 0 {
		k := strings.IndexByte(w, '=')
		part := w
		if k >= 0 {
			part, w = w[:k], w[k+1:]
		} else {
			w = ""
		}
		if p := trimWord(part); isIdentifier(p) {
			fn(p)
		}
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

// isIdentifier classifies one trimmed word.
func isIdentifier(p string) bool {
	n := len(p)
	if n < 3 || n > 2048 {
		return false
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
			return false // non-ASCII or other punctuation
		}
	}
	if letters == 0 {
		return isIPv4Port(p)
	}
	if n == 36 && isUUID(p) {
		return true
	}
	if slashes > 0 {
		return isPath(p, slashes)
	}
	if ats > 0 {
		k := strings.IndexByte(p, '@')
		return ats == 1 && k > 0 && k < n-1 && (strings.IndexByte(p[k+1:], '.') >= 0 || isDigit(p[k+1]))
	}
	if colons > 0 {
		return colons == 1 && isHostPort(p)
	}
	if dots > 0 {
		return isDotted(p)
	}
	if hexOnly == 1 && n >= 7 && digits > 0 {
		return true
	}
	return isSnakeOrCamel(p, unders)
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

func isDotted(p string) bool {
	if p[0] == '.' {
		// a dotfile: .gitignore, .env
		rest := p[1:]
		if len(rest) < 2 || strings.IndexByte(rest, '.') >= 0 && !hasKnownExt(rest) {
			return false
		}
		for i := 0; i < len(rest); i++ {
			if !(isLower(rest[i]) || isDigit(rest[i]) || rest[i] == '-' || rest[i] == '_' || rest[i] == '.') {
				return false
			}
		}
		return true
	}
	if hasKnownExt(p) || isHost(p) {
		return true
	}
	// a qualified name: core.Truncate, a.b.c, obj.someField
	parts := strings.Split(p, ".")
	for _, s := range parts {
		if len(s) == 0 || isDigit(s[0]) {
			return false
		}
		for i := 0; i < len(s); i++ {
			if !isIdentByte(s[i]) {
				return false
			}
		}
	}
	if len(parts) == 2 && isLower(parts[0][0]) && isUpper(parts[1][0]) && len(parts[0]) >= 2 {
		return true
	}
	if len(parts) >= 3 {
		for _, s := range parts {
			if len(s) < 2 {
				return false
			}
		}
		return true
	}
	for _, s := range parts {
		if isSnakeOrCamel(s, strings.Count(s, "_")) {
			return true
		}
	}
	return false
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

package compaction

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Section keys of a compaction summary, in the order they are written.
const (
	SecGoal        = "Goal"
	SecConstraints = "Constraints & Preferences"
	SecDone        = "Done"
	SecInProgress  = "In Progress"
	SecBlocked     = "Blocked"
	SecDecisions   = "Key Decisions"
	SecNextSteps   = "Next Steps"
	SecCritical    = "Critical Context"
	SecTurn        = "Turn Context (split turn)"
)

// Summary is a compaction summary split into its fixed sections, plus the
// files read and modified.
type Summary struct {
	// Sections maps a section key (SecGoal, ...) to its lines.
	Sections map[string][]string
	// Files are the files read and modified (written as <read-files> and
	// <modified-files> blocks, as OpenClaw does).
	Files FileOps
}

var headingAliases = map[string]string{
	"goal": SecGoal, "goals": SecGoal, "objective": SecGoal,
	"constraints & preferences": SecConstraints, "constraints and preferences": SecConstraints,
	"constraints": SecConstraints, "preferences": SecConstraints,
	"done": SecDone, "completed": SecDone, "completed work": SecDone, "progress": SecDone,
	"in progress": SecInProgress, "current work": SecInProgress,
	"blocked": SecBlocked, "blockers": SecBlocked,
	"key decisions": SecDecisions, "decisions": SecDecisions, "key decisions made": SecDecisions,
	"next steps": SecNextSteps, "next": SecNextSteps,
	"critical context": SecCritical, "context": SecCritical,
	"turn context (split turn)": SecTurn, "turn context": SecTurn,
}

// lookupHeading maps a heading to a section key: an alias, or a heading
// that starts with an alias followed by a space or "(" ("Completed Work
// (WP1-WP3)").
func lookupHeading(name string) (string, bool) {
	if k, ok := headingAliases[name]; ok {
		return k, true
	}
	best, bestLen := "", 0
	for alias, k := range headingAliases {
		if len(alias) > bestLen && len(name) > len(alias) && strings.HasPrefix(name, alias) &&
			(name[len(alias)] == ' ' || name[len(alias)] == '(') {
			best, bestLen = k, len(alias)
		}
	}
	return best, bestLen > 0
}

var reHeading = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$`)

// ParseSummary splits text into sections by its Markdown headings (known
// names and common aliases; case and trailing colons ignored) and reads its
// <read-files> and <modified-files> blocks. Lines before any known heading,
// or under an unknown one, go to unheaded. ok reports whether at least one
// known heading was found.
func ParseSummary(text string) (s Summary, unheaded []string, ok bool) {
	s.Sections = map[string][]string{}
	cur := ""
	block := ""
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		switch t {
		case "<read-files>", "<modified-files>":
			block = t
			continue
		case "</read-files>", "</modified-files>":
			block = ""
			continue
		}
		if block != "" {
			if t != "" {
				if block == "<read-files>" {
					s.Files.Read = append(s.Files.Read, t)
				} else {
					s.Files.Modified = append(s.Files.Modified, t)
				}
			}
			continue
		}
		if m := reHeading.FindStringSubmatch(line); m != nil {
			name := strings.ToLower(strings.TrimRight(strings.TrimSpace(m[1]), ":"))
			if key, known := lookupHeading(name); known {
				cur = key
				ok = true
				continue
			}
			cur = ""
		}
		if t == "" {
			continue
		}
		if cur == "" {
			unheaded = append(unheaded, t)
		} else {
			s.Sections[cur] = append(s.Sections[cur], t)
		}
	}
	return s, unheaded, ok
}

// Render writes the summary with its fixed headings. Empty sections are
// written as "(none)" so that the layout is always the same.
func (s Summary) Render() string {
	var sb strings.Builder
	sec := func(title, key string, level string) {
		sb.WriteString(level + " " + title + "\n")
		lines := s.Sections[key]
		if len(lines) == 0 {
			sb.WriteString("(none)\n")
		}
		for _, l := range lines {
			sb.WriteString(l)
			sb.WriteByte('\n')
		}
		sb.WriteByte('\n')
	}
	sec(SecGoal, SecGoal, "##")
	sec(SecConstraints, SecConstraints, "##")
	sb.WriteString("## Progress\n")
	sec(SecDone, SecDone, "###")
	sec(SecInProgress, SecInProgress, "###")
	sec(SecBlocked, SecBlocked, "###")
	sec(SecDecisions, SecDecisions, "##")
	sec(SecNextSteps, SecNextSteps, "##")
	sec(SecCritical, SecCritical, "##")
	if len(s.Sections[SecTurn]) > 0 {
		sec(SecTurn, SecTurn, "##")
	}
	if len(s.Files.Read) > 0 {
		sb.WriteString("<read-files>\n" + strings.Join(s.Files.Read, "\n") + "\n</read-files>\n\n")
	}
	if len(s.Files.Modified) > 0 {
		sb.WriteString("<modified-files>\n" + strings.Join(s.Files.Modified, "\n") + "\n</modified-files>\n")
	}
	return strings.TrimRight(sb.String(), "\n")
}

// add appends lines to a section, skipping blanks and exact duplicates.
func (s *Summary) add(key string, lines ...string) {
	have := map[string]bool{}
	for _, l := range s.Sections[key] {
		have[l] = true
	}
	for _, l := range lines {
		l = normalizeLine(l)
		if l == "" || have[l] {
			continue
		}
		have[l] = true
		s.Sections[key] = append(s.Sections[key], l)
	}
}

// normalizeLine trims l, collapses stacked list markers ("- - x" to "- x")
// and returns "" for empty placeholders.
func normalizeLine(l string) string {
	l = strings.TrimSpace(l)
	for strings.HasPrefix(l, "- - ") || strings.HasPrefix(l, "- * ") || strings.HasPrefix(l, "* - ") {
		l = "- " + strings.TrimSpace(l[4:])
	}
	if t := strings.TrimSpace(strings.TrimLeft(l, "-* ")); t == "" || t == "(none)" {
		return ""
	}
	return l
}

// dropOrder is the order in which lines are dropped to meet the character
// cap: least valuable first. Within a section the oldest lines go first,
// except in Goal, Constraints and Next Steps, where the last go first.
var dropOrder = []struct {
	key  string
	keep int // lines this step leaves in place
}{{SecDone, 8}, {SecInProgress, 6}, {SecBlocked, 6}, {SecDecisions, 8}, {SecNextSteps, 8},
	{SecTurn, 4}, {SecCritical, 8}, {"ids", 0}, {"read", 0},
	{SecDone, 0}, {SecTurn, 0}, {SecDecisions, 0}, {SecCritical, 0}, {SecInProgress, 0},
	{SecBlocked, 0}, {SecConstraints, 0}, {SecNextSteps, 0}, {"modified", 0}, {SecGoal, 0}}

// capTo drops lines until the rendered summary fits max characters (bytes),
// then cuts it hard at a line boundary as a last resort.
func (s *Summary) capTo(max int, ids *[]string) string {
	for {
		out := s.Render()
		if len(out) <= max {
			return out
		}
		dropped := false
		for _, step := range dropOrder {
			key := step.key
			switch key {
			case "ids":
				if ids != nil && len(*ids) > 0 {
					// Drop the tail of the identifier list (least important last).
					over := len(out) - max
					n := len(*ids)
					for over > 0 && n > 0 {
						n--
						over -= len((*ids)[n]) + 2
					}
					*ids = (*ids)[:n]
					s.setIDs(*ids)
					dropped = true
				}
			case "read":
				if l := len(s.Files.Read); l > 0 {
					s.Files.Read = s.Files.Read[:l-1]
					dropped = true
				}
			case "modified":
				if l := len(s.Files.Modified); l > 0 {
					s.Files.Modified = s.Files.Modified[:l-1]
					dropped = true
				}
			default:
				lines := s.Sections[key]
				if len(lines) <= step.keep {
					continue
				}
				if key == SecGoal || key == SecConstraints || key == SecNextSteps {
					s.Sections[key] = lines[:len(lines)-1]
				} else {
					s.Sections[key] = lines[1:]
				}
				dropped = true
			}
			if dropped {
				break
			}
		}
		if !dropped {
			return hardCut(out, max)
		}
	}
}

const idsPrefix = "- Identifiers: "

// setIDs replaces the identifier line of Critical Context.
func (s *Summary) setIDs(ids []string) {
	lines := s.Sections[SecCritical][:0:0]
	for _, l := range s.Sections[SecCritical] {
		if !strings.HasPrefix(l, idsPrefix) {
			lines = append(lines, l)
		}
	}
	if len(ids) > 0 {
		lines = append(lines, idsPrefix+strings.Join(ids, ", "))
	}
	s.Sections[SecCritical] = lines
}

func hardCut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	out := s[:i]
	if j := strings.LastIndexByte(out, '\n'); j > max/2 {
		out = out[:j]
	}
	return out
}

// bullet makes s a one-line list item of at most max bytes.
func bullet(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return ""
	}
	s = strings.TrimLeft(s, "-*• ")
	if len(s) > max {
		s = hardCut(s, max) + "…"
	}
	return "- " + s
}

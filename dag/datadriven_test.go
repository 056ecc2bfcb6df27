package dag_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/internal/testutil"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/dag expected outputs")

// testCase is one command block of a data-driven file.
type testCase struct {
	cmd      string
	args     map[string]string
	flags    map[string]bool
	line     int
	expected string
	input    string // the command line as written
}

// parseDataDriven reads blocks of "command line\n----\nexpected\n" separated
// by blank lines; lines starting with # outside expected output are kept as
// comments.
func parseDataDriven(data string) ([]testCase, []string, error) {
	lines := strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n")
	var cases []testCase
	var preamble []string
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			if len(cases) == 0 && l != "" {
				preamble = append(preamble, lines[i])
			}
			continue
		}
		tc := testCase{line: i + 1, input: l, args: map[string]string{}, flags: map[string]bool{}}
		f := strings.Fields(l)
		tc.cmd = f[0]
		for _, a := range f[1:] {
			if k, v, ok := strings.Cut(a, "="); ok {
				tc.args[k] = v
			} else {
				tc.flags[a] = true
			}
		}
		i++
		if i >= len(lines) || strings.TrimSpace(lines[i]) != "----" {
			return nil, nil, fmt.Errorf("line %d: want ---- after %q", i+1, l)
		}
		var exp []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			exp = append(exp, lines[i])
		}
		tc.expected = strings.Join(exp, "\n")
		cases = append(cases, tc)
	}
	return cases, preamble, nil
}

func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testutil.RepoRoot(), "testdata", "dag", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/dag files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runDataDriven(t, file) })
	}
}

func runDataDriven(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cases, preamble, err := parseDataDriven(string(data))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	e := &ddEnv{mem: dag.NewMemory(), sum: &fakeSum{mode: "ok"}, newID: seqIDs(), cfg: dag.Config{}}
	var out bytes.Buffer
	for _, l := range preamble {
		out.WriteString(l + "\n")
	}
	if len(preamble) > 0 {
		out.WriteString("\n")
	}
	for i, tc := range cases {
		got, err := e.run(tc)
		if err != nil {
			got = "error: " + err.Error()
		}
		if cerr := dag.Check(context.Background(), e.mem, e.mem.MessageSeqs()); cerr != nil {
			t.Errorf("%s:%d: %s: invariants: %v", file, tc.line, tc.input, cerr)
		}
		got = strings.TrimRight(got, "\n")
		if !*rewrite && got != tc.expected {
			t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", file, tc.line, tc.input, got, tc.expected)
		}
		if i > 0 {
			out.WriteString("\n")
		}
		fmt.Fprintf(&out, "%s\n----\n%s\n", tc.input, got)
	}
	if *rewrite {
		if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type ddEnv struct {
	mem   *dag.Memory
	sum   *fakeSum
	newID func() string
	cfg   dag.Config
}

func atoi(tc testCase, k string, def int) int {
	v, ok := tc.args[k]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		panic(fmt.Sprintf("line %d: %s=%q: %v", tc.line, k, v, err))
	}
	return n
}

func (e *ddEnv) run(tc testCase) (string, error) {
	ctx := context.Background()
	switch tc.cmd {
	case "config":
		e.cfg.FreshTailMessages = atoi(tc, "tail", e.cfg.FreshTailMessages)
		e.cfg.FreshTailMaxTokens = atoi(tc, "tailmax", e.cfg.FreshTailMaxTokens)
		e.cfg.LeafChunkTokens = atoi(tc, "chunk", e.cfg.LeafChunkTokens)
		e.cfg.LeafTargetTokens = atoi(tc, "leaf", e.cfg.LeafTargetTokens)
		e.cfg.CondensedTargetTokens = atoi(tc, "condensed", e.cfg.CondensedTargetTokens)
		e.cfg.CondensedChunkTokens = atoi(tc, "cchunk", e.cfg.CondensedChunkTokens)
		e.cfg.MinFanIn = atoi(tc, "fanin", e.cfg.MinFanIn)
		e.cfg.Concurrency = atoi(tc, "conc", e.cfg.Concurrency)
		e.cfg.MaxRounds = atoi(tc, "rounds", e.cfg.MaxRounds)
		return "ok", nil
	case "summarizer":
		e.sum = &fakeSum{mode: tc.args["mode"]}
		return "ok", nil
	case "append":
		roles := strings.Split(tc.args["roles"], ",")
		if tc.args["roles"] == "" {
			roles = []string{"user", "assistant"}
		}
		n, tok := atoi(tc, "n", 1), atoi(tc, "tokens", 10)
		first, last := appendMsgs(e.mem, n, tok, roles, 1_700_000_000_000)
		return fmt.Sprintf("appended %d..%d", first, last), nil
	case "compact":
		cfg := e.cfg
		cfg.NewID, cfg.Now = e.newID, fixedNow
		cfg.CallTimeout = 50 * time.Millisecond
		c, err := dag.NewCompactor(cfg, e.sum, words{})
		if err != nil {
			return "", err
		}
		tgt := dag.Target{Budget: atoi(tc, "budget", 0), Force: tc.flags["force"], Mode: dag.Mode(tc.args["mode"]), Reserved: atoi(tc, "reserved", 0)}
		res, err := c.Run(ctx, e.mem, tgt)
		if err != nil {
			return "", err
		}
		s := fmt.Sprintf("goal=%d before=%d after=%d tail=%d rounds=%d new=%s aggressive=%d truncated=%d",
			res.Goal, res.TokensBefore, res.TokensAfter, res.TailTokens, res.Rounds, strings.Join(res.NewSummaryIDs, ","), res.Aggressive, res.Truncated)
		if res.TailTooLarge {
			s += " TAIL-TOO-LARGE"
		}
		if res.Reason != "" {
			s += "\nreason: " + res.Reason
		}
		return s, nil
	case "dump":
		return e.dump(ctx, tc.flags["text"])
	case "expand":
		p, err := dag.Expand(ctx, e.mem, tc.args["id"], atoi(tc, "max", 0), tc.args["cursor"])
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("msgs=%s tokens=%d offset=%d total=%d next=%q", seqRange(p.Messages), p.Tokens, p.Offset, p.Total, p.NextCursor), nil
	case "describe":
		d, err := dag.Describe(ctx, e.mem, tc.args["id"])
		if err != nil {
			return "", err
		}
		var kids []string
		for _, c := range d.Children {
			kids = append(kids, c.ID)
		}
		return fmt.Sprintf("%s %s d%d active=%v ancestors=%v children=%v messages=%s", d.Summary.ID, d.Summary.Kind, d.Summary.Depth, d.Active, d.Ancestors, kids, seqRange(d.Messages)), nil
	}
	return "", fmt.Errorf("unknown command %q", tc.cmd)
}

func seqRange(s []uint64) string {
	if len(s) == 0 {
		return "-"
	}
	contiguous := true
	for i := 1; i < len(s); i++ {
		if s[i] != s[i-1]+1 {
			contiguous = false
		}
	}
	if contiguous {
		return fmt.Sprintf("%d..%d", s[0], s[len(s)-1])
	}
	return fmt.Sprint(s)
}

func (e *ddEnv) dump(ctx context.Context, withText bool) (string, error) {
	items, err := e.mem.Items(ctx)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	total := 0
	for _, it := range items {
		total += it.Tokens
	}
	fmt.Fprintf(&b, "items=%d tokens=%d summaries=%d\n", len(items), total, len(e.mem.Summaries()))
	var rawRun []dag.Item
	flush := func() {
		if len(rawRun) == 0 {
			return
		}
		roles := map[string]int{}
		tok := 0
		for _, it := range rawRun {
			roles[it.Role]++
			tok += it.Tokens
		}
		keys := make([]string, 0, len(roles))
		for k := range roles {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var rs []string
		for _, k := range keys {
			rs = append(rs, fmt.Sprintf("%s:%d", k, roles[k]))
		}
		fmt.Fprintf(&b, "raw msgs %d..%d tok=%d [%s]\n", rawRun[0].Ref.Seq, rawRun[len(rawRun)-1].Ref.Seq, tok, strings.Join(rs, " "))
		rawRun = nil
	}
	var tree func(id string, indent string) error
	tree = func(id, indent string) error {
		s, err := e.mem.Summary(ctx, id)
		if err != nil {
			return err
		}
		seqs, err := dag.Flatten(ctx, e.mem, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s%s %s d%d tok=%d covers %s n=%d dtok=%d %s\n", indent, s.ID, s.Kind, s.Depth, s.Tokens, seqRange(seqs), s.DescendantCount, s.DescendantTokens, s.Method)
		if withText {
			fmt.Fprintf(&b, "%s  text: %q\n", indent, s.Text)
		}
		for _, src := range s.Sources {
			if src.Kind == dag.RefSummary {
				if err := tree(src.ID, indent+"  "); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, it := range items {
		if !it.IsSummary() {
			rawRun = append(rawRun, it)
			continue
		}
		flush()
		b.WriteString("@")
		if err := tree(it.Ref.ID, ""); err != nil {
			return "", err
		}
	}
	flush()
	return b.String(), nil
}

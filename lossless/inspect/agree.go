package inspect

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// checkAgreement cross-checks conversation c's record with the records
// stored for it, and returns what disagrees, one problem a line (issue
// 37: a damaged table can bring an older version of the record, or of
// its context items, back, which the summary DAG's own check does not
// see when the older items are consistent among themselves):
//
//   - no message at or after the record's next sequence number; with
//     deep, every message header read: as many stored as the record
//     counts, its next seq one past them (the read of every message
//     reports a gap among them);
//   - no context item at or after the record's next position;
//   - as many summaries stored as the record counts (and refused ones);
//   - each summary's sources stored (a source summary, a message of the
//     conversation);
//   - every stored summary reached from the context items: a summary none
//     reaches means the items are older than the summary (a conversation
//     rolled back to before a compaction), and the messages it covers
//     that the items list raw are named.
//
// Every summary and item is read once (res.Records counts them).
func checkAgreement(r store.Reader, c store.ConvID, rec store.Conversation, deep bool, res *CheckResult) ([]string, error) {
	var probs []string
	add := func(f string, a ...any) { probs = append(probs, fmt.Sprintf(f, a...)) }
	older := "the record is older than what is stored (a damaged store: an older version of it came back)"

	// Messages.
	var stored map[uint64]bool // with deep: every stored seq
	if deep {
		stored = map[uint64]bool{}
		want, n := uint64(1), int64(0)
		var gaps []string
		for m, err := range r.Messages(c, 1, false) {
			if err != nil {
				if !errors.Is(err, store.ErrCorrupt) {
					return nil, fmt.Errorf("lossless: check: conversation %s: read messages: %w", c, err)
				}
				add("a message record after message %d does not decode (%v): the messages after it were not cross-checked", want-1, err)
				break
			}
			if m.Seq >= rec.NextSeq {
				add("message %d is stored at or after the record's next seq %d: %s", m.Seq, rec.NextSeq, older)
				break
			}
			if m.Seq > want {
				gaps = append(gaps, seqRange(want, m.Seq-1))
			}
			stored[m.Seq] = true
			want, n = m.Seq+1, n+1
		}
		if want < rec.NextSeq && len(probs) == 0 {
			gaps = append(gaps, seqRange(want, rec.NextSeq-1))
		}
		// A gap within the record's count is reported by the read of
		// every message (Messages); one beyond it, and a count that
		// disagrees, here.
		if n != rec.Messages && len(probs) == 0 {
			add("%d messages stored (missing: %s), the record counts %d (next seq %d)", n, strings.Join(gaps, ", "), rec.Messages, rec.NextSeq)
		} else if uint64(rec.Messages)+1 != rec.NextSeq && len(probs) == 0 {
			add("the record counts %d messages and its next seq is %d (it should be %d)", rec.Messages, rec.NextSeq, rec.Messages+1)
		}
	} else {
		for m, err := range r.Messages(c, rec.NextSeq, false) {
			switch {
			case err == nil:
				add("message %d is stored at or after the record's next seq %d: %s", m.Seq, rec.NextSeq, older)
			case errors.Is(err, store.ErrCorrupt):
				add("a record that does not decode is stored at or after the record's next seq %d as a message (%v): %s", rec.NextSeq, err, older)
			default:
				return nil, fmt.Errorf("lossless: check: conversation %s: read messages: %w", c, err)
			}
			break
		}
	}
	isMessage := func(seq uint64) bool {
		if stored != nil {
			return stored[seq]
		}
		return seq >= 1 && seq < rec.NextSeq
	}

	// Context items.
	var items []store.Item
	for it, err := range r.Items(c, 0, ^uint64(0), false) {
		if err != nil {
			return nil, fmt.Errorf("lossless: check: conversation %s: %w", c, err)
		}
		res.Records++
		items = append(items, it)
	}
	for _, it := range items {
		if it.Pos >= rec.NextPos {
			add("a context item (%s) is stored at position %d, at or after the record's next position %d: %s", refName(it.Ref), it.Pos, rec.NextPos, older)
			break
		}
	}

	// Summaries: their count and their sources.
	sums := map[string]dag.Summary{}
	var ids []string
	refused := int64(0)
	for s, err := range r.Summaries(c) {
		if err != nil {
			return nil, fmt.Errorf("lossless: check: conversation %s: %w", c, err)
		}
		res.Records++
		sums[s.ID] = s
		ids = append(ids, s.ID)
		if s.Method == dag.MethodRefused {
			refused++
		}
	}
	if n := int64(len(sums)); n != rec.Summaries {
		what := ""
		if n > rec.Summaries {
			what = ": " + older
		}
		add("%d summaries stored, the record counts %d%s", n, rec.Summaries, what)
	}
	if refused != rec.RefusedSummaries {
		add("%d refused summaries stored (method %q), the record counts %d", refused, dag.MethodRefused, rec.RefusedSummaries)
	}
	for _, id := range ids {
		for _, src := range sums[id].Sources {
			switch {
			case src.Kind == dag.RefSummary && sums[src.ID].ID == "":
				add("summary %s: its source summary %s is not stored", id, src.ID)
			case src.Kind == dag.RefMessage && !isMessage(src.Seq):
				add("summary %s: its source message %d is not stored", id, src.Seq)
			}
		}
	}

	// Every summary reached from the context items.
	reached := map[string]bool{}
	var reach func(id string)
	reach = func(id string) {
		if reached[id] {
			return
		}
		reached[id] = true
		for _, src := range sums[id].Sources {
			if src.Kind == dag.RefSummary {
				reach(src.ID)
			}
		}
	}
	for _, it := range items {
		if it.IsSummary() {
			reach(it.Ref.ID)
		}
	}
	var orphans []string
	for _, id := range ids {
		if !reached[id] {
			orphans = append(orphans, id)
		}
	}
	if len(orphans) > 0 {
		// The messages those summaries cover that the items list raw.
		covers := map[uint64]bool{}
		var cover func(id string, seen map[string]bool)
		cover = func(id string, seen map[string]bool) {
			if seen[id] {
				return
			}
			seen[id] = true
			for _, src := range sums[id].Sources {
				if src.Kind == dag.RefSummary {
					cover(src.ID, seen)
				} else {
					covers[src.Seq] = true
				}
			}
		}
		seen := map[string]bool{}
		for _, id := range orphans {
			cover(id, seen)
		}
		var raw []uint64
		for _, it := range items {
			if !it.IsSummary() && covers[it.Ref.Seq] {
				raw = append(raw, it.Ref.Seq)
			}
		}
		shown := orphans
		if len(shown) > 5 {
			shown = append(shown[:5:5], "…")
		}
		p := fmt.Sprintf("%d of the %d stored summaries (%s) are reached by no context item: the context is older than those summaries (rolled back to before a compaction)",
			len(orphans), len(ids), strings.Join(shown, ", "))
		if len(raw) > 0 {
			p += fmt.Sprintf("; %d context items list raw messages those summaries cover (%s)", len(raw), seqRanges(raw))
		}
		add("%s", p)
	}
	return probs, nil
}

// refName names what ref points at.
func refName(ref dag.Ref) string {
	if ref.Kind == dag.RefSummary {
		return "summary " + ref.ID
	}
	return fmt.Sprintf("message %d", ref.Seq)
}

// seqRange is "a" or "a–b".
func seqRange(a, b uint64) string {
	if a == b {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d–%d", a, b)
}

// seqRanges writes seqs as ranges: "1–40, 52".
func seqRanges(seqs []uint64) string {
	s := append([]uint64(nil), seqs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var out []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		out = append(out, seqRange(s[i], s[j]))
		i = j + 1
	}
	return strings.Join(out, ", ")
}

package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// seqSet are sequence numbers, positions and indexes around the byte
// boundaries where a key that does not sort numerically goes wrong.
var seqSet = []uint64{0, 1, 2, 255, 256, 257, 511, 512, 65535, 65536, 1<<24 - 1, 1 << 24,
	1<<32 - 1, 1 << 32, 1 << 40, 1<<56 - 1, 1 << 56, 1 << 63, math.MaxUint64 - 1, math.MaxUint64}

func convID(b ...byte) store.ConvID {
	var c store.ConvID
	copy(c[8-len(b):], b)
	return c
}

func subID(b ...byte) store.SubID {
	var s store.SubID
	copy(s[8-len(b):], b)
	return s
}

func fileTag(b ...byte) store.FileTag {
	var f store.FileTag
	copy(f[8-len(b):], b)
	return f
}

func hashOf(b []byte) store.Hash {
	sum := sha256.Sum256(b)
	var h store.Hash
	copy(h[:], sum[:])
	return h
}

// rawFor returns a message's raw bytes: small JSON, large compressible JSON,
// or every byte value (the store keeps bytes, not text).
func rawFor(c store.ConvID, seq uint64, salt int) []byte {
	switch seq % 3 {
	case 0:
		return fmt.Appendf(nil, `{"role":"user","content":"héllo %s %d/%d \"q\" \\ 世界","timestamp":%d}`, c, seq, salt, 1_700_000_000_000+seq)
	case 1:
		return fmt.Appendf(nil, `{"role":"assistant","content":[{"type":"text","text":%q}]}`,
			strings.Repeat(fmt.Sprintf("lorem ipsum %d %d ", seq, salt), 40))
	}
	b := make([]byte, 0, 300)
	for i := range 256 {
		b = append(b, byte(i))
	}
	return binary.BigEndian.AppendUint64(fmt.Appendf(b, "%d", salt), seq)
}

func message(c store.ConvID, seq uint64, salt int) store.Message {
	raw := rawFor(c, seq, salt)
	return store.Message{Seq: seq, Flags: byte(seq*7+uint64(salt)) & 0x0f, Tokens: int(seq%1000) + salt,
		Timestamp: 1_700_000_000_000 + int64(seq%1_000_000) + int64(salt), Role: []string{"user", "assistant", "toolResult"}[seq%3],
		Hash: hashOf(raw), Raw: raw}
}

func messageItem(pos, seq uint64, salt int) store.Item {
	return store.Item{Item: dag.Item{Pos: pos, Ref: dag.MessageRef(seq), Tokens: int(seq%100) + salt, Depth: -1,
		Timestamp: 1_700_000_000_000 + int64(pos%1_000_000), Role: "assistant"}, Flags: byte(salt) & store.FlagSuperseded}
}

func summaryItem(pos uint64, id string, depth int) store.Item {
	return store.Item{Item: dag.Item{Pos: pos, Ref: dag.SummaryRef(id), Tokens: 42, Depth: depth, Timestamp: 1_800_000_000_000}}
}

func summary(id string, salt int, sources ...dag.Ref) dag.Summary {
	return dag.Summary{ID: id, Kind: dag.KindLeaf, Sources: sources, Text: fmt.Sprintf("summary %s ✓ %d", id, salt),
		Tokens: 5 + salt, Earliest: 1_700_000_000_000, Latest: 1_700_000_009_000, DescendantCount: len(sources),
		DescendantTokens: 100 * len(sources), CreatedAt: 1_800_000_000_000 + int64(salt), Method: "normal"}
}

type entryK struct {
	tag   store.FileTag
	m     store.EntryMap
	index uint64
}

type entryIDK struct {
	tag store.FileTag
	id  string
}

// convData is every record the suite writes for one conversation.
type convData struct {
	id        store.ConvID
	agent     string
	conv      store.Conversation
	names     []store.Name
	msgs      []store.Message
	hashes    map[store.Hash]uint64
	large     map[uint64][]byte
	items     []store.Item
	sums      []dag.Summary
	entries   map[entryK]uint64
	entryIDs  map[entryIDK]uint64
	reconcile map[store.FileTag]uint64
	hosts     []store.HostEntryRecord
	orders    []store.Pair
	turns     map[string]store.Turn
	filePath  string
	fileCP    store.FileCheckpoint
	hostCP    store.HostCheckpoint
	links     []store.SubagentLinkRecord
}

// newConvData builds a conversation of every family, keyed at seqSet.
func newConvData(c store.ConvID, agent string, salt int) *convData {
	d := &convData{id: c, agent: agent, hashes: map[store.Hash]uint64{}, large: map[uint64][]byte{},
		entries: map[entryK]uint64{}, entryIDs: map[entryIDK]uint64{}, reconcile: map[store.FileTag]uint64{},
		turns: map[string]store.Turn{}}
	d.names = []store.Name{{Agent: agent, Kind: store.NameSessionKey, Value: "agent:" + agent + ":" + c.String()},
		{Agent: agent, Kind: store.NameSessionID, Value: "sid-" + c.String()},
		{Agent: agent, Kind: store.NameSessionID, Value: "sid-" + c.String() + "-2"}}
	tags := []store.FileTag{fileTag(1), fileTag(1, 0)}
	for i, seq := range seqSet {
		m := message(c, seq, salt)
		d.msgs = append(d.msgs, m)
		d.hashes[m.Hash] = seq
		if i%4 == 1 {
			d.large[seq] = fmt.Appendf(nil, "[large message %d of %s: %d bytes]", seq, c, len(m.Raw))
		}
		if i%3 != 2 {
			d.items = append(d.items, messageItem(seq, seq, salt))
		}
		if i%5 == 0 {
			d.orders = append(d.orders, store.Pair{Key: seq, Value: seq/2 + uint64(salt)})
		}
		for j, tag := range tags {
			d.entries[entryK{tag, store.EntriesCurrent, seq}] = seq ^ uint64(j)
			if i%2 == 0 {
				d.entries[entryK{tag, store.EntriesPrevious, seq}] = seq / 3
			}
			d.entryIDs[entryIDK{tag, fmt.Sprintf("entry-%d", seq)}] = seq
		}
		if i%2 == 0 {
			d.hosts = append(d.hosts, hostEntry(c, seq, salt))
		}
	}
	d.items[3] = summaryItem(d.items[3].Pos, "sum_a", 0)
	d.reconcile[tags[1]] = 257 + uint64(salt)
	for i, id := range []string{"sum_a", "sum_a0", "sum_b", "sum_10", "sum_2"} {
		d.sums = append(d.sums, summary(id, salt+i, dag.MessageRef(seqSet[i]), dag.MessageRef(seqSet[i+1])))
	}
	d.sums[4].Sources = []dag.Ref{dag.SummaryRef("sum_a"), dag.SummaryRef("sum_b")}
	d.sums[4].Kind, d.sums[4].Depth = dag.KindCondensed, 1
	for i, key := range []string{"adv-1", "adv-10", "adv-2"} {
		d.turns[key] = store.Turn{LogicalTurnID: "turn-" + key, AdmissionEntryID: "in", TerminalEntryID: "out",
			Seqs: []uint64{seqSet[i], seqSet[i+5]}, Stored: 2, CommittedAt: 1_800_000_000_000 + int64(i)}
	}
	d.conv = store.Conversation{Agent: agent, Key: d.names[0].Value, SessionIDs: []string{d.names[1].Value, d.names[2].Value},
		Created: 1_700_000_000_000, Updated: 1_700_000_000_999, NextSeq: math.MaxUint64, NextPos: 1 << 40,
		Messages: int64(len(d.msgs)), Bytes: 12345 + int64(salt), Summaries: int64(len(d.sums)), Tokens: 999}
	d.filePath = "/sessions/" + c.String() + ".jsonl"
	d.fileCP = store.FileCheckpoint{SessionID: d.names[1].Value, Conv: c.String(), Offset: 4096, Line: 12, Index: 11,
		MtimeNs: 1_700_000_000_000_000_000, HeadHash: "h", PrefixHash: "p", TailStart: 4000, TailHash: "t", Reconcile: 3}
	d.hostCP = store.HostCheckpoint{Conv: c.String(), Cursor: "cur-" + c.String(), Entries: 33, Imported: 30, Skipped: 3}
	for i := range 2 {
		s := subID(byte(salt), byte(i+1))
		d.links = append(d.links, store.SubagentLinkRecord{ID: s, ChildKey: fmt.Sprintf("agent:main:subagent:%x", s)})
	}
	d.links[1].ChildKey = "" // a link whose value is empty
	return d
}

// hostEntry is entry index of c's host-kept transcript.
func hostEntry(c store.ConvID, index uint64, salt int) store.HostEntryRecord {
	return store.HostEntryRecord{Index: index, HostEntry: store.HostEntry{Seq: index/5 + uint64(salt),
		Key: hashOf(fmt.Appendf(nil, "%s %d %d", c, index, salt)), EntryID: fmt.Sprintf("host-entry-%d-%d", index, salt)}}
}

func (d *convData) write(w store.Writer) error {
	errs := []error{w.PutConversation(d.id, d.conv)}
	for _, n := range d.names {
		errs = append(errs, w.PutName(n, d.id))
	}
	for _, m := range d.msgs {
		errs = append(errs, w.PutMessage(d.id, m))
	}
	for h, seq := range d.hashes {
		errs = append(errs, w.PutHash(d.id, h, seq))
	}
	for seq, ref := range d.large {
		errs = append(errs, w.PutLarge(d.id, seq, ref))
	}
	for _, it := range d.items {
		errs = append(errs, w.PutItem(d.id, it))
	}
	for _, s := range d.sums {
		errs = append(errs, w.PutSummary(d.id, s))
	}
	for k, seq := range d.entries {
		errs = append(errs, w.PutEntrySeq(d.id, k.tag, k.m, k.index, seq))
	}
	for k, index := range d.entryIDs {
		errs = append(errs, w.PutEntryIndex(d.id, k.tag, k.id, index))
	}
	for tag, seq := range d.reconcile {
		errs = append(errs, w.PutReconcileFrom(d.id, tag, seq))
	}
	for _, e := range d.hosts {
		errs = append(errs, w.PutHostEntry(d.id, e.Index, e.HostEntry))
	}
	for _, p := range d.orders {
		errs = append(errs, w.PutOrder(d.id, p.Key, p.Value))
	}
	for k, t := range d.turns {
		errs = append(errs, w.PutTurn(d.id, k, t))
	}
	errs = append(errs, w.PutFileCheckpoint(d.agent, d.filePath, d.fileCP), w.PutHostCheckpoint(d.agent, d.id, d.hostCP))
	for _, l := range d.links {
		errs = append(errs, w.PutSubagentLink(d.id, l.ID, l.ChildKey))
	}
	return errors.Join(errs...)
}

// checkScoped checks the records DeleteConversationData deletes: all
// present as written, or all absent.
func (d *convData) checkScoped(r store.Reader, present bool) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	for _, m := range d.msgs {
		got, err := r.Message(d.id, m.Seq)
		add(expect(fmt.Sprintf("Message(%s, %d)", d.id, m.Seq), got, err, m, present))
		h := m
		h.Raw = nil
		got, err = r.MessageHeader(d.id, m.Seq)
		add(expect(fmt.Sprintf("MessageHeader(%s, %d)", d.id, m.Seq), got, err, h, present))
	}
	got, err := all(r.Messages(d.id, 0, true))
	add(expectScan(fmt.Sprintf("Messages(%s, 0, true)", d.id), got, err, keep(d.msgs, present)))
	for h, seq := range d.hashes {
		got, err := r.SeqByHash(d.id, h)
		add(expect(fmt.Sprintf("SeqByHash(%s, %x)", d.id, h), got, err, seq, present))
	}
	for seq, ref := range d.large {
		got, err := r.Large(d.id, seq)
		add(expect(fmt.Sprintf("Large(%s, %d)", d.id, seq), got, err, ref, present))
	}
	for _, it := range d.items {
		got, err := r.Item(d.id, it.Pos)
		add(expect(fmt.Sprintf("Item(%s, %d)", d.id, it.Pos), got, err, it, present))
	}
	items, err := all(r.Items(d.id, 0, math.MaxUint64, false))
	add(expectScan(fmt.Sprintf("Items(%s, 0, max)", d.id), items, err, keep(d.items, present)))
	for _, s := range d.sums {
		got, err := r.Summary(d.id, s.ID)
		add(expect(fmt.Sprintf("Summary(%s, %q)", d.id, s.ID), got, err, s, present))
	}
	sums, err := all(r.Summaries(d.id))
	want := slices.SortedFunc(slices.Values(d.sums), func(a, b dag.Summary) int { return strings.Compare(a.ID, b.ID) })
	add(expectScan(fmt.Sprintf("Summaries(%s)", d.id), sums, err, keep(want, present)))
	maps := map[[2]any][]store.EntryPair{}
	for k, seq := range d.entries {
		got, err := r.EntrySeq(d.id, k.tag, k.m, k.index)
		add(expect(fmt.Sprintf("EntrySeq(%s, %x, %c, %d)", d.id, k.tag, k.m, k.index), got, err, seq, present))
		maps[[2]any{k.tag, k.m}] = append(maps[[2]any{k.tag, k.m}], store.EntryPair{Index: k.index, Seq: seq})
	}
	for k, pairs := range maps {
		tag, m := k[0].(store.FileTag), k[1].(store.EntryMap)
		slices.SortFunc(pairs, func(a, b store.EntryPair) int { return cmpU64(a.Index, b.Index) })
		got, err := all(r.Entries(d.id, tag, m, 0))
		add(expectScan(fmt.Sprintf("Entries(%s, %x, %c, 0)", d.id, tag, m), got, err, keep(pairs, present)))
	}
	for k, index := range d.entryIDs {
		got, err := r.EntryIndex(d.id, k.tag, k.id)
		add(expect(fmt.Sprintf("EntryIndex(%s, %x, %q)", d.id, k.tag, k.id), got, err, index, present))
	}
	for tag, seq := range d.reconcile {
		got, err := r.ReconcileFrom(d.id, tag)
		add(expect(fmt.Sprintf("ReconcileFrom(%s, %x)", d.id, tag), got, err, seq, present))
	}
	for _, e := range d.hosts {
		got, err := r.HostEntry(d.id, e.Index)
		add(expect(fmt.Sprintf("HostEntry(%s, %d)", d.id, e.Index), got, err, e.HostEntry, present))
	}
	hosts, err := all(r.HostEntries(d.id, 0))
	add(expectScan(fmt.Sprintf("HostEntries(%s, 0)", d.id), hosts, err, keep(d.hosts, present)))
	for _, p := range d.orders {
		got, err := r.Order(d.id, p.Key)
		add(expect(fmt.Sprintf("Order(%s, %d)", d.id, p.Key), got, err, p.Value, present))
	}
	orders, err := all(r.Orders(d.id))
	add(expectScan(fmt.Sprintf("Orders(%s)", d.id), orders, err, keep(d.orders, present)))
	for k, turn := range d.turns {
		got, err := r.Turn(d.id, k)
		add(expect(fmt.Sprintf("Turn(%s, %q)", d.id, k), got, err, turn, present))
	}
	return errors.Join(errs...)
}

// checkUnscoped checks the records of the conversation that
// DeleteConversationData keeps.
func (d *convData) checkUnscoped(r store.Reader, present bool) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	got, err := r.Conversation(d.id)
	add(expect(fmt.Sprintf("Conversation(%s)", d.id), got, err, d.conv, present))
	for _, n := range d.names {
		got, err := r.ConvByName(n)
		add(expect(fmt.Sprintf("ConvByName(%+v)", n), got, err, d.id, present))
	}
	fcp, err := r.FileCheckpoint(d.agent, d.filePath)
	add(expect(fmt.Sprintf("FileCheckpoint(%q, %q)", d.agent, d.filePath), fcp, err, d.fileCP, present))
	hcp, err := r.HostCheckpoint(d.agent, d.id)
	add(expect(fmt.Sprintf("HostCheckpoint(%q, %s)", d.agent, d.id), hcp, err, d.hostCP, present))
	links, err := all(r.SubagentLinks(d.id))
	add(expectScan(fmt.Sprintf("SubagentLinks(%s)", d.id), sortedLinks(links), err, keep(d.links, present)))
	return errors.Join(errs...)
}

func (d *convData) check(r store.Reader) error {
	return errors.Join(d.checkScoped(r, true), d.checkUnscoped(r, true))
}

// globals are the records outside conversations.
type globals struct {
	meta     store.Meta
	subs     map[store.SubID]store.Subagent
	children map[[2]string]store.SubID
	forks    map[store.SubID][]store.Item
}

func newGlobals(salt int) *globals {
	g := &globals{meta: store.Meta{Format: 3 + salt, Engine: "lossless", Tokenizer: "o200k_base"},
		subs: map[store.SubID]store.Subagent{}, children: map[[2]string]store.SubID{}, forks: map[store.SubID][]store.Item{}}
	for i, s := range []store.SubID{subID(1), subID(1, 0), subID(2), subID(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)} {
		g.subs[s] = store.Subagent{Agent: "main", ChildSessionKey: fmt.Sprintf("agent:main:subagent:%d", i),
			ChildSessionID: fmt.Sprintf("child-%d", i), ParentAgent: "main", ParentKey: "agent:main:main",
			ParentSessionID: "parent", ParentConv: convID(9).String(), Mode: "fork", State: "running",
			Created: 1_700_000_000_000 + int64(salt), ExpiresAt: 1_800_000_000_000, SnapshotItems: 3, SnapshotTokens: 300,
			Token: fmt.Sprintf("tok-%d-%d", i, salt)}
		g.children[[2]string{"main", fmt.Sprintf("child-%d", i)}] = s
		if i != 1 {
			for _, pos := range seqSet[i : i+4] {
				g.forks[s] = append(g.forks[s], messageItem(pos, pos+1, salt))
			}
		}
	}
	// An orphan snapshot: items without a record.
	g.forks[subID(3)] = []store.Item{summaryItem(65536, "sum_x", 2)}
	return g
}

func (g *globals) write(w store.Writer) error {
	errs := []error{w.PutMeta(g.meta)}
	for s, r := range g.subs {
		errs = append(errs, w.PutSubagent(s, r))
	}
	for k, s := range g.children {
		errs = append(errs, w.PutSubagentByChild(k[0], k[1], s))
	}
	for s, its := range g.forks {
		for _, it := range its {
			errs = append(errs, w.PutForkItem(s, it))
		}
	}
	return errors.Join(errs...)
}

func (g *globals) check(r store.Reader) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	m, err := r.Meta()
	add(expect("Meta()", m, err, g.meta, true))
	var recs []store.SubagentRecord
	for s, sub := range g.subs {
		got, err := r.Subagent(s)
		add(expect(fmt.Sprintf("Subagent(%x)", s), got, err, sub, true))
		recs = append(recs, store.SubagentRecord{ID: s, Subagent: sub})
	}
	slices.SortFunc(recs, func(a, b store.SubagentRecord) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	gotRecs, err := all(r.Subagents())
	add(expectScan("Subagents()", gotRecs, err, recs))
	for k, s := range g.children {
		got, err := r.SubagentByChild(k[0], k[1])
		add(expect(fmt.Sprintf("SubagentByChild(%q, %q)", k[0], k[1]), got, err, s, true))
	}
	var snaps []store.SubID
	for s, its := range g.forks {
		got, err := all(r.ForkItems(s))
		add(expectScan(fmt.Sprintf("ForkItems(%x)", s), got, err, its))
		snaps = append(snaps, s)
	}
	gotSnaps, err := all(r.ForkSnapshots())
	add(expectScan("ForkSnapshots()", gotSnaps, err, sortedIDs(snaps)))
	return errors.Join(errs...)
}

// world is a store's worth of fixtures: conversations and globals.
type world struct {
	convs []*convData
	g     *globals
}

func newWorld(salt int, ids ...store.ConvID) *world {
	w := &world{g: newGlobals(salt)}
	for i, c := range ids {
		w.convs = append(w.convs, newConvData(c, []string{"main", "main2", "ops"}[i%3], salt+i))
	}
	return w
}

func (w *world) write(wr store.Writer) error {
	errs := []error{w.g.write(wr)}
	for _, d := range w.convs {
		errs = append(errs, d.write(wr))
	}
	return errors.Join(errs...)
}

// check checks every record of the world, and the scans over every
// conversation, name and checkpoint.
func (w *world) check(r store.Reader) error {
	errs := []error{w.g.check(r)}
	var convs []store.ConvRecord
	var names []store.NameRecord
	var cps []store.CheckpointRecord
	for _, d := range w.convs {
		errs = append(errs, d.check(r))
		convs = append(convs, store.ConvRecord{ID: d.id, Conversation: d.conv})
		for _, n := range d.names {
			names = append(names, store.NameRecord{Name: n, Conv: d.id})
		}
		fcp, hcp := d.fileCP, d.hostCP
		cps = append(cps, store.CheckpointRecord{Agent: d.agent, Path: d.filePath, File: &fcp},
			store.CheckpointRecord{Agent: d.agent, HostConv: d.id, Host: &hcp})
	}
	slices.SortFunc(convs, func(a, b store.ConvRecord) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	slices.SortFunc(names, cmpName)
	gotConvs, err := all(r.Conversations())
	errs = append(errs, expectScan("Conversations()", gotConvs, err, convs))
	gotNames, err := all(r.Names())
	errs = append(errs, expectScan("Names()", gotNames, err, names))
	gotCps, err := all(r.Checkpoints())
	errs = append(errs, expectScan("Checkpoints() (as a set)", sortedCheckpoints(gotCps), err, sortedCheckpoints(cps)))
	return errors.Join(errs...)
}

func keep[T any](v []T, present bool) []T {
	if !present {
		return nil
	}
	return v
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpName(a, b store.NameRecord) int {
	if c := strings.Compare(a.Agent, b.Agent); c != 0 {
		return c
	}
	if a.Kind != b.Kind {
		return int(a.Kind) - int(b.Kind)
	}
	return strings.Compare(a.Value, b.Value)
}

func sortedIDs[T store.SubID | store.ConvID](ids []T) []T {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b T) int {
		x, y := [8]byte(a), [8]byte(b)
		return bytes.Compare(x[:], y[:])
	})
	return out
}

func sortedLinks(links []store.SubagentLinkRecord) []store.SubagentLinkRecord {
	out := slices.Clone(links)
	slices.SortFunc(out, func(a, b store.SubagentLinkRecord) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return out
}

func sortedCheckpoints(cps []store.CheckpointRecord) []store.CheckpointRecord {
	out := slices.Clone(cps)
	slices.SortFunc(out, func(a, b store.CheckpointRecord) int {
		return strings.Compare(checkpointKey(a), checkpointKey(b))
	})
	return out
}

func checkpointKey(r store.CheckpointRecord) string {
	if r.Host != nil {
		return r.Agent + "\x00h" + string(r.HostConv[:])
	}
	return r.Agent + "\x00f" + r.Path
}

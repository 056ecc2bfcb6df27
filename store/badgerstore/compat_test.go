package badgerstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/third_party/badger"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

// golden2 is what package lossless wrote (store format 2, before records
// carried checksums) for one record of every family:
// key and value in hex, printed by a throwaway test in package lossless
// (its encoders and key builders are unexported) at commit 2cd0abb, run on
// the records compatRecords writes. The package still reads them
// (TestReadGolden); it writes golden3.
var golden2 = []goldenKV{
	{"meta", "00666f726d6174", "7b22666f726d6174223a322c22656e67696e65223a226c6f73736c657373222c22746f6b656e697a6572223a226f3230306b5f62617365227d"},
	{"conv-full", "430102030405060708", "7b226167656e74223a226d61696e222c226b6579223a226167656e743a6d61696e3a7331222c2273657373696f6e496473223a5b227369642d31222c227369642d32225d2c2263726561746564223a313730303030303030303030302c2275706461746564223a313730303030303030313030302c226e657874536571223a342c226e657874506f73223a3236323134342c226d65737361676573223a332c226279746573223a313233342c2273756d6d6172696573223a312c22746f6b656e73223a3536372c227265746972696e67223a747275657d"},
	{"conv-min", "430807060504030201", "7b226167656e74223a226f7073222c2273657373696f6e496473223a6e756c6c2c2263726561746564223a302c2275706461746564223a302c226e657874536571223a312c226e657874506f73223a36353533362c226d65737361676573223a302c226279746573223a302c2273756d6d6172696573223a302c22746f6b656e73223a307d"},
	{"name-key", "4e6d61696e006b3a6167656e743a6d61696e3a7331", "0102030405060708"},
	{"name-sid", "4e6d61696e00733a7369642d31", "0102030405060708"},
	{"msg-small", "4d01020304050607080000000000000001", "01032af6a1abfef9620475736572a0a1a2a3a4a5a6a7a8a9aaabacadaeaf7b22726f6c65223a2275736572222c22636f6e74656e74223a226869222c2274696d657374616d70223a313730303030303030303132337d"},
	{"msg-zstd", "4d01020304050607080000000000000002", "0200840790a7abfef96209617373697374616e74a0a1a2a3a4a5a6a7a8a9aaabacadaeaf28b52ffd64c60915030072c6151a706b032064b09147da5ebcb0cdfab30da2aa2286019607aa8a438fe071018624b46924a588bc0b1759b62498435b16aa18b906451c09a32822f7f90d6fe437bccfb834b713385fe1551e46be4a670963c9675472d909015419052f23976016d02914"},
	{"msg-incompressible", "4d01020304050607080000000000000003", "010400090a746f6f6c526573756c74a0a1a2a3a4a5a6a7a8a9aaabacadaeaf637aa07ee1eaf23dc7396d0da678168005123aa74ede9f789c7063000be6c825213dad22bc70b385da21236336177bc379fd626cf96643f11fbd6163bd7c999067f3d198f08c88d390343f14d1aaff72482735f9de344eb04a10d8d5837e10a4574dd731393c269f5669483b0d3234a70c793d1a2437bfc28bd21620cf847cbec6babbf4773f3289c9bbaeed0b7d14a71ee0ed3c0f8f3eb778b67e2338047c014d4b5438bdcc3af0632320c64b4bfbffbd4233755fff20e5406d896ff64377f8f41f1e0487ba00e4216e90f146fdfd0247052a179e5fd9807869830a7367d2829c0b03e3c0f49d3374f19f581a8e02277851b6eb45106d4aadfe9066c1e1e6bf8c9d9f30e8e41adc28b740d7e3782ccb8c0196342651cb32ab0a18143f03ad2e125857d67b4dda20c6eef24f"},
	{"hash", "480102030405060708a0a1a2a3a4a5a6a7a8a9aaabacadaeaf", "0000000000000002"},
	{"item-msg", "4901020304050607080000000000010000", "010301012a01f6a1abfef9620475736572"},
	{"item-sum", "4901020304050607080000000000020000", "0100020773756d2d616263ac020490a7abfef96200"},
	{"large", "4c01020304050607080000000000000001", "7b22726f6c65223a2275736572222c22636f6e74656e74223a225b6c6172676520636f6e74656e743a206c636d2d6c617267653a613061315d227d"},
	{"summary", "53010203040506070873756d2d616263", "017b226964223a2273756d2d616263222c226b696e64223a226c656166222c226465707468223a302c22736f7572636573223a5b7b226b696e64223a312c22736571223a317d2c7b226b696e64223a312c22736571223a327d5d2c2274657874223a22776861742068617070656e6564222c22746f6b656e73223a3330302c226561726c69657374223a313730303030303030303132332c226c6174657374223a313730303030303030303435362c2264657363656e64616e74436f756e74223a322c2264657363656e64616e74546f6b656e73223a3934322c22637265617465644174223a313730303030303030393939392c226d6574686f64223a226e6f726d616c227d"},
	{"entry-x", "450102030405060708f1f2f3f4f5f6f7f8780000000000000005", "0000000000000007"},
	{"entry-o", "450102030405060708f1f2f3f4f5f6f7f86f0000000000000005", "0000000000000006"},
	{"entry-i", "450102030405060708f1f2f3f4f5f6f7f869656e7472792d616263", "0000000000000005"},
	{"entry-f", "450102030405060708f1f2f3f4f5f6f7f866", "0000000000000009"},
	{"order", "4f01020304050607080000000000000004", "0000000000030007"},
	{"file-checkpoint", "466d61696e002f686f6d652f752f2e6f70656e636c61772f6167656e74732f6d61696e2f73657373696f6e732f73312e6a736f6e6c", "7b2273657373696f6e4964223a227369642d31222c22636f6e76223a2230313032303330343035303630373038222c226f6666736574223a343039362c226c696e65223a31322c22696e646578223a31312c226d74696d654e73223a313730303030303030303132333435363738392c226865616448617368223a226868222c2270726566697848617368223a227068222c227461696c5374617274223a343030302c227461696c48617368223a227468222c227265636f6e63696c65223a337d"},
	{"file-checkpoint-min", "466d61696e0072656c2f73322e6a736f6e6c", "7b2273657373696f6e4964223a227369642d32222c22636f6e76223a2230313032303330343035303630373038222c226f6666736574223a302c226c696e65223a302c22696e646578223a302c226d74696d654e73223a302c226865616448617368223a22222c227461696c5374617274223a302c227461696c48617368223a22227d"},
	{"host-checkpoint", "466d61696e00686f73743a30313032303330343035303630373038", "7b22636f6e76223a2230313032303330343035303630373038222c22637572736f72223a226375722d39222c22656e7472696573223a342c22696d706f72746564223a332c22736b6970706564223a317d"},
	{"host-entry", "4501020304050607081d70fba01f8ea0d8680000000000000003", "0000000000000002a0a1a2a3a4a5a6a7a8a9aaabacadaeaf656e7472792d6833"},
	{"turn", "5401020304050607086164762d6b65792d31", "7b226c6f676963616c5475726e4964223a226c74222c2261646d697373696f6e456e7472794964223a226165222c227465726d696e616c456e7472794964223a227465222c2273657173223a5b312c325d2c2273746f726564223a322c22636f6d6d69747465644174223a313730303030303030323030307d"},
	{"turn-min", "5401020304050607086164762d6b65792d32", "7b2273657173223a5b335d2c2273746f726564223a302c22636f6d6d69747465644174223a313730303030303030333030307d"},
	{"subagent", "47090a0b0c0d0e0f10", "7b226167656e74223a226d61696e222c226368696c6453657373696f6e4b6579223a226167656e743a6d61696e3a7375626167656e743a31222c226368696c6453657373696f6e4964223a226368696c642d736964222c22706172656e744167656e74223a226d61696e222c22706172656e7453657373696f6e4b6579223a226167656e743a6d61696e3a7331222c22706172656e7453657373696f6e4964223a227369642d31222c22706172656e74436f6e766572736174696f6e223a2230313032303330343035303630373038222c22636f6e746578744d6f6465223a22666f726b222c227374617465223a22656e646564222c22656e64526561736f6e223a22636f6d706c65746564222c2263726561746564223a313730303030303030303030302c22657870697265734174223a313730303030303630303030302c22656e6465644174223a313730303030303730303030302c22736e617073686f744974656d73223a322c22736e617073686f74546f6b656e73223a3334322c22746f6b656e223a22746f6b227d"},
	{"subagent-min", "47100f0e0d0c0b0a09", "7b226167656e74223a226d61696e222c226368696c6453657373696f6e4b6579223a226167656e743a6d61696e3a7375626167656e743a32222c22706172656e744167656e74223a226d61696e222c22636f6e746578744d6f6465223a2269736f6c61746564222c227374617465223a227072657061726564222c2263726561746564223a312c22736e617073686f744974656d73223a302c22736e617073686f74546f6b656e73223a302c22746f6b656e223a227432227d"},
	{"sub-alias", "676d61696e006368696c642d736964", "090a0b0c0d0e0f10"},
	{"fork-item", "59090a0b0c0d0e0f100000000000010000", "010301012a01f6a1abfef9620475736572"},
	{"sub-link", "4b0102030405060708090a0b0c0d0e0f10", "6167656e743a6d61696e3a7375626167656e743a31"},
}

// The values the golden records hold.
var (
	gConv  = store.ConvID{1, 2, 3, 4, 5, 6, 7, 8}
	gConv2 = store.ConvID{8, 7, 6, 5, 4, 3, 2, 1}
	gTag   = store.FileTag{0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8}
	gSub   = store.SubID{9, 10, 11, 12, 13, 14, 15, 16}
	gSub2  = store.SubID{16, 15, 14, 13, 12, 11, 10, 9}
	// gHostTag is package lossless's hostTag (SHA-256 of
	// "host-transcript", first 8 bytes).
	gHostTag = store.FileTag{0x1d, 0x70, 0xfb, 0xa0, 0x1f, 0x8e, 0xa0, 0xd8}
)

func gHash() store.Hash {
	var h store.Hash
	for i := range h {
		h[i] = byte(0xa0 + i)
	}
	return h
}

// gRandom is 300 bytes that do not compress (xorshift32).
func gRandom() []byte {
	b := make([]byte, 300)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// compatRecords are the golden records, written through store.Writer, and
// read back by checkRead.
type compatRecords struct {
	meta             store.Meta
	conv, convMin    store.Conversation
	nameKey, nameSID store.Name
	msgs             []store.Message
	itemMsg, itemSum store.Item
	large            []byte
	summary          dag.Summary
	fileCP, fileCP2  store.FileCheckpoint
	filePath         string
	filePath2        string
	hostCP           store.HostCheckpoint
	hostEntry        store.HostEntryRecord
	turn, turnMin    store.Turn
	sub, subMin      store.Subagent
}

func newCompatRecords() compatRecords {
	h := gHash()
	return compatRecords{
		meta: store.Meta{Format: 2, Engine: "lossless", Tokenizer: "o200k_base"},
		conv: store.Conversation{Agent: "main", Key: "agent:main:s1", SessionIDs: []string{"sid-1", "sid-2"},
			Created: 1700000000000, Updated: 1700000001000, NextSeq: 4, NextPos: 4 << 16, Messages: 3, Bytes: 1234,
			Summaries: 1, Tokens: 567, Retiring: true},
		convMin: store.Conversation{Agent: "ops", NextSeq: 1, NextPos: 1 << 16},
		nameKey: store.Name{Agent: "main", Kind: store.NameSessionKey, Value: "agent:main:s1"},
		nameSID: store.Name{Agent: "main", Kind: store.NameSessionID, Value: "sid-1"},
		msgs: []store.Message{
			{Seq: 1, Flags: store.FlagHeartbeat | store.FlagLarge, Tokens: 42, Timestamp: 1700000000123, Role: "user", Hash: h,
				Raw: []byte(`{"role":"user","content":"hi","timestamp":1700000000123}`)},
			{Seq: 2, Tokens: 900, Timestamp: 1700000000456, Role: "assistant", Hash: h,
				Raw: []byte(`{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("the quick brown fox jumps over the lazy dog; ", 60) + `"}]}`)},
			{Seq: 3, Flags: store.FlagHidden, Tokens: 0, Timestamp: -5, Role: "toolResult", Hash: h, Raw: gRandom()},
		},
		itemMsg: store.Item{Item: dag.Item{Pos: 1 << 16, Ref: dag.MessageRef(1), Tokens: 42, Depth: -1, Timestamp: 1700000000123, Role: "user"},
			Flags: store.FlagHeartbeat | store.FlagLarge},
		itemSum: store.Item{Item: dag.Item{Pos: 2 << 16, Ref: dag.SummaryRef("sum-abc"), Tokens: 300, Depth: 2, Timestamp: 1700000000456}},
		large:   []byte(`{"role":"user","content":"[large content: lcm-large:a0a1]"}`),
		summary: dag.Summary{ID: "sum-abc", Kind: dag.KindLeaf, Depth: 0, Sources: []dag.Ref{dag.MessageRef(1), dag.MessageRef(2)},
			Text: "what happened", Tokens: 300, Earliest: 1700000000123, Latest: 1700000000456, DescendantCount: 2,
			DescendantTokens: 942, CreatedAt: 1700000009999, Method: "normal"},
		filePath: "/home/u/.openclaw/agents/main/sessions/s1.jsonl",
		fileCP: store.FileCheckpoint{SessionID: "sid-1", Conv: gConv.String(), Offset: 4096, Line: 12, Index: 11,
			MtimeNs: 1700000000123456789, HeadHash: "hh", PrefixHash: "ph", TailStart: 4000, TailHash: "th", Reconcile: 3},
		filePath2: "rel/s2.jsonl",
		fileCP2:   store.FileCheckpoint{SessionID: "sid-2", Conv: gConv.String()},
		hostCP:    store.HostCheckpoint{Conv: gConv.String(), Cursor: "cur-9", Entries: 4, Imported: 3, Skipped: 1},
		hostEntry: store.HostEntryRecord{Index: 3, HostEntry: store.HostEntry{Seq: 2, Key: h, EntryID: "entry-h3"}},
		turn: store.Turn{LogicalTurnID: "lt", AdmissionEntryID: "ae", TerminalEntryID: "te", Seqs: []uint64{1, 2}, Stored: 2,
			CommittedAt: 1700000002000},
		turnMin: store.Turn{Seqs: []uint64{3}, CommittedAt: 1700000003000},
		sub: store.Subagent{Agent: "main", ChildSessionKey: "agent:main:subagent:1", ChildSessionID: "child-sid",
			ParentAgent: "main", ParentKey: "agent:main:s1", ParentSessionID: "sid-1", ParentConv: gConv.String(),
			Mode: "fork", State: "ended", EndReason: "completed", Created: 1700000000000, ExpiresAt: 1700000600000,
			EndedAt: 1700000700000, SnapshotItems: 2, SnapshotTokens: 342, Token: "tok"},
		subMin: store.Subagent{Agent: "main", ChildSessionKey: "agent:main:subagent:2", ParentAgent: "main",
			Mode: "isolated", State: "prepared", Created: 1, Token: "t2"},
	}
}

// write writes every golden record with w; with enc, the messages are
// encoded by it first (store.Message.Encoded).
func (g *compatRecords) write(w store.Writer, enc store.MessageEncoder) error {
	msg := func(m store.Message) error {
		if enc != nil {
			m.Encoded = enc.EncodeMessage(m)
		}
		return w.PutMessage(gConv, m)
	}
	steps := []func() error{
		func() error { return w.PutMeta(g.meta) },
		func() error { return w.PutConversation(gConv, g.conv) },
		func() error { return w.PutConversation(gConv2, g.convMin) },
		func() error { return w.PutName(g.nameKey, gConv) },
		func() error { return w.PutName(g.nameSID, gConv) },
		func() error { return msg(g.msgs[0]) },
		func() error { return msg(g.msgs[1]) },
		func() error { return msg(g.msgs[2]) },
		func() error { return w.PutHash(gConv, gHash(), 2) },
		func() error { return w.PutItem(gConv, g.itemMsg) },
		func() error { return w.PutItem(gConv, g.itemSum) },
		func() error { return w.PutLarge(gConv, 1, g.large) },
		func() error { return w.PutSummary(gConv, g.summary) },
		func() error { return w.PutEntrySeq(gConv, gTag, store.EntriesCurrent, 5, 7) },
		func() error { return w.PutEntrySeq(gConv, gTag, store.EntriesPrevious, 5, 6) },
		func() error { return w.PutEntryIndex(gConv, gTag, "entry-abc", 5) },
		func() error { return w.PutReconcileFrom(gConv, gTag, 9) },
		func() error { return w.PutOrder(gConv, 4, 3<<16+7) },
		func() error { return w.PutFileCheckpoint("main", g.filePath, g.fileCP) },
		func() error { return w.PutFileCheckpoint("main", g.filePath2, g.fileCP2) },
		func() error { return w.PutHostCheckpoint("main", gConv, g.hostCP) },
		func() error { return w.PutHostEntry(gConv, g.hostEntry.Index, g.hostEntry.HostEntry) },
		func() error { return w.PutTurn(gConv, "adv-key-1", g.turn) },
		func() error { return w.PutTurn(gConv, "adv-key-2", g.turnMin) },
		func() error { return w.PutSubagent(gSub, g.sub) },
		func() error { return w.PutSubagent(gSub2, g.subMin) },
		func() error { return w.PutSubagentByChild("main", "child-sid", gSub) },
		func() error { return w.PutForkItem(gSub, g.itemMsg) },
		func() error { return w.PutSubagentLink(gConv, gSub, g.sub.ChildSessionKey) },
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// rawKVs returns every key and value of the database, in hex.
func rawKVs(t *testing.T, db *badger.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			out[hex.EncodeToString(it.Item().Key())] = hex.EncodeToString(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkGolden compares the database with golden: the same keys, each with
// the same value, and nothing else.
func checkGolden(t *testing.T, db *badger.DB, golden []goldenKV) {
	t.Helper()
	got := rawKVs(t, db)
	seen := map[string]bool{}
	for _, g := range golden {
		seen[g.key] = true
		v, ok := got[g.key]
		switch {
		case !ok:
			t.Errorf("%s: key %s not written", g.name, g.key)
		case v != g.value:
			t.Errorf("%s: value differs from package lossless's\n got %s\nwant %s", g.name, v, g.value)
		}
	}
	for k, v := range got {
		if !seen[k] {
			t.Errorf("unexpected key %s (value %s)", k, v)
		}
	}
}

// TestByteCompat writes one record of every family through Update and
// compares the raw Badger keys and values with what package lossless
// writes; the messages are written as they are, and encoded first
// (store.Message.Encoded, made by Store.EncodeMessage).
func TestByteCompat(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) {
			ctx := context.Background()
			s := openTest(t, Options{})
			g := newCompatRecords3()
			var enc store.MessageEncoder
			if encoded {
				enc = s
			}
			if err := s.Update(ctx, func(tx store.Tx) error { return g.write(tx, enc) }); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, s.db, golden3)
			g.checkRead(t, s)
		})
	}
}

// TestByteCompatBatch is TestByteCompat through a batch.
func TestByteCompatBatch(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) {
			ctx := context.Background()
			s := openTest(t, Options{})
			g := newCompatRecords3()
			var enc store.MessageEncoder
			if encoded {
				enc = s
			}
			b, err := s.NewBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.write(b, enc); err != nil {
				t.Fatal(err)
			}
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, s.db, golden3)
			g.checkRead(t, s)
		})
	}
}

// TestHostTag: the package's host tag is package lossless's (the golden
// host entry's key holds it).
func TestHostTag(t *testing.T) {
	if hostTag != gHostTag {
		t.Errorf("hostTag = %x, want %x (package lossless's)", hostTag, gHostTag)
	}
	if got, want := fmt.Sprintf("%x", hostEntryKey(gConv, 3)), "4501020304050607081d70fba01f8ea0d8680000000000000003"; got != want {
		t.Errorf("host entry key %s, want the golden %s", got, want)
	}
}

// TestReadGolden writes the golden bytes into Badger directly, as package
// lossless would have, and reads every record through the store.
func TestReadGolden(t *testing.T) {
	s := openTest(t, Options{})
	err := s.db.Update(func(txn *badger.Txn) error {
		for _, g := range golden2 {
			k, _ := hex.DecodeString(g.key)
			v, _ := hex.DecodeString(g.value)
			if err := txn.Set(k, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	g := newCompatRecords()
	g.checkRead(t, s)
}

// checkRead reads every golden record back through the store and compares
// it with what was written.
func (g *compatRecords) checkRead(t *testing.T, s *Store) {
	t.Helper()
	eq := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
		}
	}
	err := s.View(context.Background(), func(r store.Reader) error {
		m, err := r.Meta()
		must(t, err)
		eq("meta", m, g.meta)
		c, err := r.Conversation(gConv)
		must(t, err)
		eq("conversation", c, g.conv)
		c, err = r.Conversation(gConv2)
		must(t, err)
		eq("conversation (min)", c, g.convMin)
		for _, n := range []store.Name{g.nameKey, g.nameSID} {
			id, err := r.ConvByName(n)
			must(t, err)
			eq("name "+n.Value, id, gConv)
		}
		for _, want := range g.msgs {
			got, err := r.Message(gConv, want.Seq)
			must(t, err)
			eq("message", got, want)
			hdr, err := r.MessageHeader(gConv, want.Seq)
			must(t, err)
			want.Raw = nil
			eq("message header", hdr, want)
		}
		seq, err := r.SeqByHash(gConv, gHash())
		must(t, err)
		eq("hash", seq, uint64(2))
		for _, want := range []store.Item{g.itemMsg, g.itemSum} {
			got, err := r.Item(gConv, want.Pos)
			must(t, err)
			eq("item", got, want)
		}
		l, err := r.Large(gConv, 1)
		must(t, err)
		eq("large", l, g.large)
		sum, err := r.Summary(gConv, "sum-abc")
		must(t, err)
		eq("summary", sum, g.summary)
		x, err := r.EntrySeq(gConv, gTag, store.EntriesCurrent, 5)
		must(t, err)
		eq("entry x", x, uint64(7))
		o, err := r.EntrySeq(gConv, gTag, store.EntriesPrevious, 5)
		must(t, err)
		eq("entry o", o, uint64(6))
		he, err := r.HostEntry(gConv, g.hostEntry.Index)
		must(t, err)
		eq("host entry", he, g.hostEntry.HostEntry)
		idx, err := r.EntryIndex(gConv, gTag, "entry-abc")
		must(t, err)
		eq("entry id", idx, uint64(5))
		from, err := r.ReconcileFrom(gConv, gTag)
		must(t, err)
		eq("reconcile", from, uint64(9))
		pos, err := r.Order(gConv, 4)
		must(t, err)
		eq("order", pos, uint64(3<<16+7))
		fcp, err := r.FileCheckpoint("main", g.filePath)
		must(t, err)
		eq("file checkpoint", fcp, g.fileCP)
		fcp, err = r.FileCheckpoint("main", g.filePath2)
		must(t, err)
		eq("file checkpoint (min)", fcp, g.fileCP2)
		hcp, err := r.HostCheckpoint("main", gConv)
		must(t, err)
		eq("host checkpoint", hcp, g.hostCP)
		var hes []store.HostEntryRecord
		for e, err := range r.HostEntries(gConv, 0) {
			must(t, err)
			hes = append(hes, e)
		}
		eq("host entries", hes, []store.HostEntryRecord{g.hostEntry})
		tr, err := r.Turn(gConv, "adv-key-1")
		must(t, err)
		eq("turn", tr, g.turn)
		tr, err = r.Turn(gConv, "adv-key-2")
		must(t, err)
		eq("turn (min)", tr, g.turnMin)
		sub, err := r.Subagent(gSub)
		must(t, err)
		eq("subagent", sub, g.sub)
		sub, err = r.Subagent(gSub2)
		must(t, err)
		eq("subagent (min)", sub, g.subMin)
		sid, err := r.SubagentByChild("main", "child-sid")
		must(t, err)
		eq("subagent alias", sid, gSub)
		var fork []store.Item
		for it, err := range r.ForkItems(gSub) {
			must(t, err)
			fork = append(fork, it)
		}
		eq("fork items", fork, []store.Item{g.itemMsg})
		var links []store.SubagentLinkRecord
		for l, err := range r.SubagentLinks(gConv) {
			must(t, err)
			links = append(links, l)
		}
		eq("links", links, []store.SubagentLinkRecord{{ID: gSub, ChildKey: g.sub.ChildSessionKey}})
		return nil
	})
	must(t, err)
}

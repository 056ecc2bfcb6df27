package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/third_party/badger"

	"github.com/lossless-engine/contextengine/store"
)

// goldenKV is one golden record: its name, key and value in hex.
type goldenKV struct{ name, key, value string }

// newCompatRecords3 is newCompatRecords with the format record of a store
// created at format 3.
func newCompatRecords3() compatRecords {
	g := newCompatRecords()
	g.meta = store.Meta{Format: 3, Engine: "lossless", Tokenizer: "o200k_base", Since: 3}
	return g
}

// TestPrintGolden3 prints golden3 from what the package writes, when
// LOSSLESS_PRINT_GOLDEN is set: for a deliberate change of the format.
func TestPrintGolden3(t *testing.T) {
	if os.Getenv("LOSSLESS_PRINT_GOLDEN") == "" {
		t.Skip("set LOSSLESS_PRINT_GOLDEN to print the golden records")
	}
	s := openTest(t, Options{})
	g := newCompatRecords3()
	must(t, s.Update(context.Background(), func(tx store.Tx) error { return g.write(tx, nil) }))
	got := rawKVs(t, s.db)
	var b strings.Builder
	for _, r := range golden2 {
		fmt.Fprintf(&b, "\t{%q, %q, %q},\n", r.name, r.key, got[r.key])
	}
	t.Logf("\n%s", b.String())
}

// golden3 is what the package writes (store format 3) for the records of
// golden2, in a store created at format 3: the meta has "since", the
// messages are as before, every other record is checked (checksum.go). A
// change here is a change of the on-disk format.
var golden3 = []goldenKV{
	{"meta", "00666f726d6174", "7b22666f726d6174223a332c22656e67696e65223a226c6f73736c657373222c22746f6b656e697a6572223a226f3230306b5f62617365222c2273696e6365223a337d"},
	{"conv-full", "430102030405060708", "037b226167656e74223a226d61696e222c226b6579223a226167656e743a6d61696e3a7331222c2273657373696f6e496473223a5b227369642d31222c227369642d32225d2c2263726561746564223a313730303030303030303030302c2275706461746564223a313730303030303030313030302c226e657874536571223a342c226e657874506f73223a3236323134342c226d65737361676573223a332c226279746573223a313233342c2273756d6d6172696573223a312c22746f6b656e73223a3536372c227265746972696e67223a747275657d246f53fa"},
	{"conv-min", "430807060504030201", "037b226167656e74223a226f7073222c2273657373696f6e496473223a6e756c6c2c2263726561746564223a302c2275706461746564223a302c226e657874536571223a312c226e657874506f73223a36353533362c226d65737361676573223a302c226279746573223a302c2273756d6d6172696573223a302c22746f6b656e73223a307dc8b6cf09"},
	{"name-key", "4e6d61696e006b3a6167656e743a6d61696e3a7331", "030102030405060708fae61e0c"},
	{"name-sid", "4e6d61696e00733a7369642d31", "0301020304050607087612ad95"},
	{"msg-small", "4d01020304050607080000000000000001", "01032af6a1abfef9620475736572a0a1a2a3a4a5a6a7a8a9aaabacadaeaf7b22726f6c65223a2275736572222c22636f6e74656e74223a226869222c2274696d657374616d70223a313730303030303030303132337d"},
	{"msg-zstd", "4d01020304050607080000000000000002", "0200840790a7abfef96209617373697374616e74a0a1a2a3a4a5a6a7a8a9aaabacadaeaf28b52ffd64c60915030072c6151a706b032064b09147da5ebcb0cdfab30da2aa2286019607aa8a438fe071018624b46924a588bc0b1759b62498435b16aa18b906451c09a32822f7f90d6fe437bccfb834b713385fe1551e46be4a670963c9675472d909015419052f23976016d02914"},
	{"msg-incompressible", "4d01020304050607080000000000000003", "010400090a746f6f6c526573756c74a0a1a2a3a4a5a6a7a8a9aaabacadaeaf637aa07ee1eaf23dc7396d0da678168005123aa74ede9f789c7063000be6c825213dad22bc70b385da21236336177bc379fd626cf96643f11fbd6163bd7c999067f3d198f08c88d390343f14d1aaff72482735f9de344eb04a10d8d5837e10a4574dd731393c269f5669483b0d3234a70c793d1a2437bfc28bd21620cf847cbec6babbf4773f3289c9bbaeed0b7d14a71ee0ed3c0f8f3eb778b67e2338047c014d4b5438bdcc3af0632320c64b4bfbffbd4233755fff20e5406d896ff64377f8f41f1e0487ba00e4216e90f146fdfd0247052a179e5fd9807869830a7367d2829c0b03e3c0f49d3374f19f581a8e02277851b6eb45106d4aadfe9066c1e1e6bf8c9d9f30e8e41adc28b740d7e3782ccb8c0196342651cb32ab0a18143f03ad2e125857d67b4dda20c6eef24f"},
	{"hash", "480102030405060708a0a1a2a3a4a5a6a7a8a9aaabacadaeaf", "0300000000000000027fe066af"},
	{"item-msg", "4901020304050607080000000000010000", "030301012a01f6a1abfef96204757365722552db36"},
	{"item-sum", "4901020304050607080000000000020000", "0300020773756d2d616263ac020490a7abfef96200ce231eac"},
	{"large", "4c01020304050607080000000000000001", "037b22726f6c65223a2275736572222c22636f6e74656e74223a225b6c6172676520636f6e74656e743a206c636d2d6c617267653a613061315d227d60035eb6"},
	{"summary", "53010203040506070873756d2d616263", "037b226964223a2273756d2d616263222c226b696e64223a226c656166222c226465707468223a302c22736f7572636573223a5b7b226b696e64223a312c22736571223a317d2c7b226b696e64223a312c22736571223a327d5d2c2274657874223a22776861742068617070656e6564222c22746f6b656e73223a3330302c226561726c69657374223a313730303030303030303132332c226c6174657374223a313730303030303030303435362c2264657363656e64616e74436f756e74223a322c2264657363656e64616e74546f6b656e73223a3934322c22637265617465644174223a313730303030303030393939392c226d6574686f64223a226e6f726d616c227d1b5dbb53"},
	{"entry-x", "450102030405060708f1f2f3f4f5f6f7f8780000000000000005", "030000000000000007e028fae0"},
	{"entry-o", "450102030405060708f1f2f3f4f5f6f7f86f0000000000000005", "030000000000000006c8cc5582"},
	{"entry-i", "450102030405060708f1f2f3f4f5f6f7f869656e7472792d616263", "030000000000000005b5acf048"},
	{"entry-f", "450102030405060708f1f2f3f4f5f6f7f866", "030000000000000009f83122cd"},
	{"order", "4f01020304050607080000000000000004", "0300000000000300075268d26f"},
	{"file-checkpoint", "466d61696e002f686f6d652f752f2e6f70656e636c61772f6167656e74732f6d61696e2f73657373696f6e732f73312e6a736f6e6c", "037b2273657373696f6e4964223a227369642d31222c22636f6e76223a2230313032303330343035303630373038222c226f6666736574223a343039362c226c696e65223a31322c22696e646578223a31312c226d74696d654e73223a313730303030303030303132333435363738392c226865616448617368223a226868222c2270726566697848617368223a227068222c227461696c5374617274223a343030302c227461696c48617368223a227468222c227265636f6e63696c65223a337d3e0feccd"},
	{"file-checkpoint-min", "466d61696e0072656c2f73322e6a736f6e6c", "037b2273657373696f6e4964223a227369642d32222c22636f6e76223a2230313032303330343035303630373038222c226f6666736574223a302c226c696e65223a302c22696e646578223a302c226d74696d654e73223a302c226865616448617368223a22222c227461696c5374617274223a302c227461696c48617368223a22227d67a00e14"},
	{"host-checkpoint", "466d61696e00686f73743a30313032303330343035303630373038", "037b22636f6e76223a2230313032303330343035303630373038222c22637572736f72223a226375722d39222c22656e7472696573223a342c22696d706f72746564223a332c22736b6970706564223a317d2967687d"},
	{"host-entry", "4501020304050607081d70fba01f8ea0d8680000000000000003", "030000000000000002a0a1a2a3a4a5a6a7a8a9aaabacadaeaf656e7472792d683349cc8bae"},
	{"turn", "5401020304050607086164762d6b65792d31", "037b226c6f676963616c5475726e4964223a226c74222c2261646d697373696f6e456e7472794964223a226165222c227465726d696e616c456e7472794964223a227465222c2273657173223a5b312c325d2c2273746f726564223a322c22636f6d6d69747465644174223a313730303030303030323030307dfbaaad50"},
	{"turn-min", "5401020304050607086164762d6b65792d32", "037b2273657173223a5b335d2c2273746f726564223a302c22636f6d6d69747465644174223a313730303030303030333030307da8a61bc5"},
	{"subagent", "47090a0b0c0d0e0f10", "037b226167656e74223a226d61696e222c226368696c6453657373696f6e4b6579223a226167656e743a6d61696e3a7375626167656e743a31222c226368696c6453657373696f6e4964223a226368696c642d736964222c22706172656e744167656e74223a226d61696e222c22706172656e7453657373696f6e4b6579223a226167656e743a6d61696e3a7331222c22706172656e7453657373696f6e4964223a227369642d31222c22706172656e74436f6e766572736174696f6e223a2230313032303330343035303630373038222c22636f6e746578744d6f6465223a22666f726b222c227374617465223a22656e646564222c22656e64526561736f6e223a22636f6d706c65746564222c2263726561746564223a313730303030303030303030302c22657870697265734174223a313730303030303630303030302c22656e6465644174223a313730303030303730303030302c22736e617073686f744974656d73223a322c22736e617073686f74546f6b656e73223a3334322c22746f6b656e223a22746f6b227d526cda85"},
	{"subagent-min", "47100f0e0d0c0b0a09", "037b226167656e74223a226d61696e222c226368696c6453657373696f6e4b6579223a226167656e743a6d61696e3a7375626167656e743a32222c22706172656e744167656e74223a226d61696e222c22636f6e746578744d6f6465223a2269736f6c61746564222c227374617465223a227072657061726564222c2263726561746564223a312c22736e617073686f744974656d73223a302c22736e617073686f74546f6b656e73223a302c22746f6b656e223a227432227d8911c6a6"},
	{"sub-alias", "676d61696e006368696c642d736964", "03090a0b0c0d0e0f10d6d81524"},
	{"fork-item", "59090a0b0c0d0e0f100000000000010000", "030301012a01f6a1abfef962047573657261af9be2"},
	{"sub-link", "4b0102030405060708090a0b0c0d0e0f10", "036167656e743a6d61696e3a7375626167656e743a313882e04e"},
}

// TestGolden3Layout checks golden3 against the format's description,
// computed here without the package's encoders: each record but the
// format record and the messages is 3, its format-2 body (the golden2
// value, without its version byte for items and summaries), and CRC-32C
// over the key and those bytes, big-endian.
func TestGolden3Layout(t *testing.T) {
	if len(golden3) != len(golden2) {
		t.Fatalf("%d golden3 records, %d golden2", len(golden3), len(golden2))
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	for i, g3 := range golden3 {
		g2 := golden2[i]
		if g3.name != g2.name || g3.key != g2.key {
			t.Fatalf("record %d: %s/%s, golden2 has %s/%s", i, g3.name, g3.key, g2.name, g2.key)
		}
		key, _ := hex.DecodeString(g3.key)
		v2, _ := hex.DecodeString(g2.value)
		var want []byte
		switch {
		case g3.name == "meta":
			continue // plain JSON in both (TestByteCompat checks its bytes)
		case strings.HasPrefix(g3.name, "msg-"):
			want = v2
		default:
			body := v2
			if strings.HasPrefix(g3.name, "item-") || g3.name == "fork-item" || g3.name == "summary" {
				body = v2[1:]
			}
			head := append([]byte{3}, body...)
			crc := crc32.Update(crc32.Checksum(key, table), table, head)
			want = binary.BigEndian.AppendUint32(head, crc)
		}
		if got, _ := hex.DecodeString(g3.value); !bytes.Equal(got, want) {
			t.Errorf("%s: golden3 value %x, the format says %x", g3.name, got, want)
		}
	}
}

// TestUncheckedRecords: a store created before format 3 (its format
// record without "since", or none) reads format-2 records; one created at
// format 3 refuses each of them, naming the record, as it refuses a
// checked record with a changed byte.
func TestUncheckedRecords(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		meta   string // the format record's JSON ("" for none)
		strict bool
	}{
		{"no format record", "", false},
		{"format 2", `{"format":2,"engine":"lossless","tokenizer":"o200k_base"}`, false},
		{"format 3 migrated from 2", `{"format":3,"engine":"lossless","tokenizer":"o200k_base"}`, false},
		{"created at format 3", `{"format":3,"engine":"lossless","tokenizer":"o200k_base","since":3}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, Options{})
			must(t, s.db.Update(func(txn *badger.Txn) error {
				for _, g := range golden2 {
					if g.name == "meta" {
						continue
					}
					k, _ := hex.DecodeString(g.key)
					v, _ := hex.DecodeString(g.value)
					if err := txn.Set(k, v); err != nil {
						return err
					}
				}
				if tc.meta != "" {
					return txn.Set(metaKey, []byte(tc.meta))
				}
				return nil
			}))
			g := newCompatRecords()
			if !tc.strict {
				must(t, s.View(ctx, func(r store.Reader) error {
					_, err := r.Summary(gConv, "sum-abc")
					return err
				}))
				return
			}
			err := s.View(ctx, func(r store.Reader) error {
				_, err := r.Summary(gConv, g.summary.ID)
				return err
			})
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), `summary "sum-abc" of conversation 0102030405060708`) {
				t.Fatalf("format-2 summary in a format-3 store: %v, want ErrCorrupt naming it", err)
			}
			for name, read := range map[string]func(r store.Reader) error{
				"item":       func(r store.Reader) error { _, err := r.Item(gConv, g.itemMsg.Pos); return err },
				"conv":       func(r store.Reader) error { _, err := r.Conversation(gConv); return err },
				"name":       func(r store.Reader) error { _, err := r.ConvByName(g.nameSID); return err },
				"hash":       func(r store.Reader) error { _, err := r.SeqByHash(gConv, gHash()); return err },
				"large":      func(r store.Reader) error { _, err := r.Large(gConv, 1); return err },
				"host entry": func(r store.Reader) error { _, err := r.HostEntry(gConv, 3); return err },
				"turn":       func(r store.Reader) error { _, err := r.Turn(gConv, "adv-key-1"); return err },
				"subagent":   func(r store.Reader) error { _, err := r.Subagent(gSub); return err },
				"alias":      func(r store.Reader) error { _, err := r.SubagentByChild("main", "child-sid"); return err },
				"checkpoint": func(r store.Reader) error { _, err := r.FileCheckpoint("main", g.filePath); return err },
				"link": func(r store.Reader) error {
					for _, err := range r.SubagentLinks(gConv) {
						return err
					}
					return errors.New("no link")
				},
			} {
				err := s.View(ctx, func(r store.Reader) error { return read(r) })
				if !errors.Is(err, store.ErrCorrupt) {
					t.Errorf("format-2 %s in a format-3 store: %v, want ErrCorrupt", name, err)
				}
			}
			// Messages have no record checksum: they read as before.
			must(t, s.View(ctx, func(r store.Reader) error { _, err := r.Message(gConv, 1); return err }))
			must(t, s.db.DropAll()) // damaged on purpose: no verify at the end
		})
	}
}

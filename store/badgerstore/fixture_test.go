package badgerstore

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/third_party/badger"

	"github.com/lossless-engine/contextengine/store"
)

// losslessFixture is the store package lossless wrote with its format-2
// code through its public API (lossless/store_fixture_write_test.go):
// conversations with compressed and plain messages, summaries, large
// references, imported files with entry maps, a committed turn, a
// host-kept transcript, subagents with a fork snapshot and a link.
const losslessFixture = "../../lossless/testdata/store-format2"

// TestLosslessFixture reads every record of the fixture through the
// Reader (every key of the database, by its family) and writes what it read
// into a new store through the Writer: the new store must hold the same
// keys with the same values, byte for byte, in format 3 (format3).
func TestLosslessFixture(t *testing.T) {
	if _, err := os.Stat(losslessFixture); err != nil {
		t.Skipf("no fixture: %v", err)
	}
	dir := t.TempDir()
	copyDir(t, losslessFixture, dir)
	src := openTest(t, Options{Dir: dir, ReadOnly: true})
	dst := openTest(t, Options{})
	want := rawKVs(t, src.db)
	if len(want) < 100 {
		t.Fatalf("the fixture holds %d keys", len(want))
	}
	ctx := context.Background()
	families := map[byte]int{}
	must(t, src.View(ctx, func(r store.Reader) error {
		return dst.Update(ctx, func(tx store.Tx) error {
			c := &fixtureCopy{t: t, r: r, w: tx, hostDone: map[store.ConvID]bool{}, forkDone: map[store.SubID]bool{}}
			return src.db.View(func(txn *badger.Txn) error {
				it := txn.NewIterator(badger.IteratorOptions{})
				defer it.Close()
				for it.Rewind(); it.Valid(); it.Next() {
					k := it.Item().KeyCopy(nil)
					families[k[0]]++
					if err := c.copy(k); err != nil {
						t.Errorf("key %x: %v", k, err)
					}
				}
				return nil
			})
		})
	}))
	var counts []string
	for p, n := range families {
		counts = append(counts, fmt.Sprintf("%q:%d", p, n))
	}
	sort.Strings(counts)
	t.Logf("keys by family: %s", strings.Join(counts, " "))
	for _, p := range []byte{pMeta, pConv, pName, pMsg, pHash, pItem, pLarge, pSummary, pEntry, pCheck, pTurn, pSub, pSubAlias, pForkItem, pSubLink} {
		if families[p] == 0 {
			t.Errorf("the fixture has no key of family %q", p)
		}
	}
	got := rawKVs(t, dst.db)
	for k, v := range want {
		v = format3(k, v)
		switch g, ok := got[k]; {
		case !ok:
			t.Errorf("key %s not written back", k)
		case g != v:
			t.Errorf("key %s written back differs:\n got %s\nwant %s", k, g, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("key %s written back is not in the fixture", k)
		}
	}
	compressed := 0
	must(t, src.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{pMsg}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			_ = it.Item().Value(func(v []byte) error {
				if v[0] == recordZstd {
					compressed++
				}
				return nil
			})
		}
		return nil
	}))
	if compressed == 0 {
		t.Error("the fixture has no compressed message: the test does not cover them")
	}
}

// fixtureCopy reads the record of one raw key through a Reader and writes
// it through a Writer.
type fixtureCopy struct {
	t        *testing.T
	r        store.Reader
	w        store.Tx
	hostDone map[store.ConvID]bool
	forkDone map[store.SubID]bool
}

func (f *fixtureCopy) copy(k []byte) error {
	var c store.ConvID
	var s store.SubID
	if len(k) >= 9 {
		copy(c[:], k[1:9])
		copy(s[:], k[1:9])
	}
	u64At := func(i int) uint64 { return binary.BigEndian.Uint64(k[i:]) }
	agentRest := func() (string, string) {
		agent, rest, _ := strings.Cut(string(k[1:]), "\x00")
		return agent, rest
	}
	switch k[0] {
	case pMeta:
		m, err := f.r.Meta()
		if err != nil {
			return err
		}
		return f.w.PutMeta(m)
	case pConv:
		rec, err := f.r.Conversation(c)
		if err != nil {
			return err
		}
		return f.w.PutConversation(c, rec)
	case pName:
		agent, rest := agentRest()
		n := store.Name{Agent: agent, Kind: store.NameKind(rest[0]), Value: rest[2:]}
		id, err := f.r.ConvByName(n)
		if err != nil {
			return err
		}
		return f.w.PutName(n, id)
	case pMsg:
		m, err := f.r.Message(c, u64At(9))
		if err != nil {
			return err
		}
		return f.w.PutMessage(c, m)
	case pHash:
		var h store.Hash
		copy(h[:], k[9:])
		seq, err := f.r.SeqByHash(c, h)
		if err != nil {
			return err
		}
		return f.w.PutHash(c, h, seq)
	case pItem:
		it, err := f.r.Item(c, u64At(9))
		if err != nil {
			return err
		}
		return f.w.PutItem(c, it)
	case pLarge:
		ref, err := f.r.Large(c, u64At(9))
		if err != nil {
			return err
		}
		return f.w.PutLarge(c, u64At(9), ref)
	case pSummary:
		sum, err := f.r.Summary(c, string(k[9:]))
		if err != nil {
			return err
		}
		return f.w.PutSummary(c, sum)
	case pEntry:
		var tag store.FileTag
		copy(tag[:], k[9:17])
		switch k[17] {
		case 'x', 'o':
			m := store.EntryMap(k[17])
			seq, err := f.r.EntrySeq(c, tag, m, u64At(18))
			if err != nil {
				return err
			}
			return f.w.PutEntrySeq(c, tag, m, u64At(18), seq)
		case hostKind:
			if tag != hostTag {
				return fmt.Errorf("a host entry under tag %x, not the host tag %x", tag, hostTag)
			}
			if f.hostDone[c] {
				return nil
			}
			f.hostDone[c] = true
			for e, err := range f.r.HostEntries(c, 0) {
				if err != nil {
					return err
				}
				if err := f.w.PutHostEntry(c, e.Index, e.HostEntry); err != nil {
					return err
				}
			}
			return nil
		case 'i':
			id := string(k[18:])
			index, err := f.r.EntryIndex(c, tag, id)
			if err != nil {
				return err
			}
			return f.w.PutEntryIndex(c, tag, id, index)
		case 'f':
			seq, err := f.r.ReconcileFrom(c, tag)
			if err != nil {
				return err
			}
			return f.w.PutReconcileFrom(c, tag, seq)
		}
	case pOrder:
		pos, err := f.r.Order(c, u64At(9))
		if err != nil {
			return err
		}
		return f.w.PutOrder(c, u64At(9), pos)
	case pCheck:
		agent, path := agentRest()
		if hexID, ok := strings.CutPrefix(path, hostCheckPrefix); ok {
			if hc, ok := store.ParseConvID(hexID); ok {
				cp, err := f.r.HostCheckpoint(agent, hc)
				if err != nil {
					return err
				}
				return f.w.PutHostCheckpoint(agent, hc, cp)
			}
		}
		cp, err := f.r.FileCheckpoint(agent, path)
		if err != nil {
			return err
		}
		return f.w.PutFileCheckpoint(agent, path, cp)
	case pTurn:
		tr, err := f.r.Turn(c, string(k[9:]))
		if err != nil {
			return err
		}
		return f.w.PutTurn(c, string(k[9:]), tr)
	case pSub:
		rec, err := f.r.Subagent(s)
		if err != nil {
			return err
		}
		return f.w.PutSubagent(s, rec)
	case pSubAlias:
		agent, sid := agentRest()
		id, err := f.r.SubagentByChild(agent, sid)
		if err != nil {
			return err
		}
		return f.w.PutSubagentByChild(agent, sid, id)
	case pForkItem:
		if f.forkDone[s] {
			return nil
		}
		f.forkDone[s] = true
		for it, err := range f.r.ForkItems(s) {
			if err != nil {
				return err
			}
			if err := f.w.PutForkItem(s, it); err != nil {
				return err
			}
		}
		return nil
	case pSubLink:
		var child store.SubID
		copy(child[:], k[9:])
		for l, err := range f.r.SubagentLinks(c) {
			if err != nil {
				return err
			}
			if l.ID == child {
				return f.w.PutSubagentLink(c, child, l.ChildKey)
			}
		}
		return fmt.Errorf("link %x not in SubagentLinks(%s)", child, c)
	}
	f.t.Errorf("key %x: not a family of the layout", k)
	return nil
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	must(t, err)
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		src, err := os.Open(filepath.Join(from, e.Name()))
		must(t, err)
		dst, err := os.Create(filepath.Join(to, e.Name()))
		must(t, err)
		_, err = io.Copy(dst, src)
		src.Close()
		must(t, err)
		must(t, dst.Close())
	}
}

// format3 is the format-3 value (hex) of format-2 value v (hex) under key
// k (hex): the format record and the messages as they are, every other
// record checked (its version byte dropped for items and summaries).
func format3(k, v string) string {
	key, _ := hex.DecodeString(k)
	val, _ := hex.DecodeString(v)
	switch key[0] {
	case pMeta, pMsg:
		return v
	case pItem, pForkItem, pSummary:
		val = val[1:]
	}
	return hex.EncodeToString(checked(key, val))
}

package subagent

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/store"
)

func TestIDIsTheHashPrefix(t *testing.T) {
	h := sha256.Sum256([]byte("main\x00agent:main:subagent:1"))
	id := ID("main", "agent:main:subagent:1")
	if string(id[:]) != string(h[:8]) {
		t.Fatalf("ID = %x, want %x", id, h[:8])
	}
	if ID("main", "a") == ID("other", "a") || ID("main", "a") == ID("main", "b") {
		t.Fatal("ID does not depend on both the agent and the child key")
	}
}

func TestNewTokenIsFresh(t *testing.T) {
	a, b := NewToken(), NewToken()
	if len(a) != 24 || a == b {
		t.Fatalf("tokens %q, %q: want two different 24-digit hex strings", a, b)
	}
}

// TestExpiredRulesBeforeTheChildIsRead covers the cases Expired decides
// without reading the child's conversation (r unused).
func TestExpiredRulesBeforeTheChildIsRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  store.Subagent
		now  int64
	}{
		{"active", store.Subagent{State: Active, ExpiresAt: 10}, 20},
		{"ended", store.Subagent{State: Ended, ExpiresAt: 10}, 20},
		{"no ttl", store.Subagent{State: Prepared}, 20},
		{"before expiry", store.Subagent{State: Prepared, ExpiresAt: 30}, 20},
	} {
		if Expired(nil, tc.rec, tc.now) {
			t.Errorf("%s: expired", tc.name)
		}
	}
}

func TestReversed(t *testing.T) {
	items := []store.Item{{Item: dag.Item{Pos: 1}}, {Item: dag.Item{Pos: 2}}, {Item: dag.Item{Pos: 3}}}
	var got []uint64
	for it, err := range Reversed(items) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it.Pos)
		if len(got) == 2 {
			break
		}
	}
	if fmt.Sprint(got) != "[3 2]" {
		t.Fatalf("Reversed yielded %v, want [3 2] (stopping early)", got)
	}
}

func TestForksBoundedAndDropped(t *testing.T) {
	var f Forks
	if f.Len() != 0 || f.Contains(ID("main", "x")) {
		t.Fatal("a zero Forks is not empty")
	}
	for i := 0; i < 3*MaxForkCaches; i++ {
		f.Get(ID("main", fmt.Sprintf("k%d", i)))
	}
	if n := f.Len(); n > MaxForkCaches {
		t.Fatalf("%d fork caches kept, bound %d", n, MaxForkCaches)
	}
	last := ID("main", fmt.Sprintf("k%d", 3*MaxForkCaches-1))
	c := f.Get(last)
	if f.Get(last) != c {
		t.Fatal("Get of a kept cache returned another one")
	}
	f.Drop(last)
	if f.Contains(last) {
		t.Fatal("a dropped cache is still kept")
	}
}

func TestRefsAndFound(t *testing.T) {
	if refs := Refs("main", "", ""); len(refs) != 0 {
		t.Fatalf("a session without names has refs %v", refs)
	}
	refs := Refs("main", "sid", "key")
	if len(refs) != 2 || refs[0].Kind != store.RefSubagent || refs[0].Sub != ID("main", "key") ||
		refs[1].Kind != store.RefSubagentByChild || refs[1].ID != "sid" {
		t.Fatalf("Refs = %+v", refs)
	}
	alias := ID("main", "other")
	missing := store.Got{Err: store.ErrNotFound}
	byAlias := store.Got{Sub: alias, Subagent: store.Subagent{ChildSessionKey: "other"}}
	if l := Found("main", "key", []store.Got{missing, byAlias}); !l.Done || !l.Found || l.ID != alias {
		t.Fatalf("found by the alias: %+v", l)
	}
	byKey := store.Got{Subagent: store.Subagent{ChildSessionKey: "key"}}
	if l := Found("main", "key", []store.Got{byKey, byAlias}); !l.Found || l.ID != ID("main", "key") || l.Rec.ChildSessionKey != "key" {
		t.Fatalf("found by the key: %+v", l)
	}
	if l := Found("main", "key", []store.Got{missing, missing}); !l.Done || l.Found || l.ID != ID("main", "key") {
		t.Fatalf("not found: %+v", l)
	}
}

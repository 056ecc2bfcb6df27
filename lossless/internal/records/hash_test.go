package records

import "testing"

func TestHashMessageRawIsHashRaw(t *testing.T) {
	for _, raw := range []string{
		`{"role":"user","content":"a b"}`,
		`{"role": "user", "content": "a b"}`,
		"{\"role\":\"user\",\n\"content\":\"tab\\t and \\\" quote\"}",
		`{"content":"\\","role":"user"}`,
	} {
		if got, want := HashMessageRaw([]byte(raw)), HashRaw([]byte(raw)); got != want {
			t.Errorf("HashMessageRaw(%s) = %x, HashRaw %x", raw, got, want)
		}
	}
	if HashRaw([]byte(`{"a": 1}`)) != HashRaw([]byte(`{"a":1}`)) {
		t.Error("HashRaw differs on whitespace outside strings")
	}
	if HashRaw([]byte(`{"a":"x y"}`)) == HashRaw([]byte(`{"a":"xy"}`)) {
		t.Error("HashRaw ignores whitespace inside strings")
	}
}

func TestLockNames(t *testing.T) {
	c := NewConvID("main", "s1")
	if ConvLockName(c) != "conv:"+c.String() || CompactLockName(c) != "compact:"+c.String() ||
		NamesLockName("main") != "names:main" || ImportLockName("k") != "import:k" {
		t.Error("lock names changed: processes of two builds would not exclude each other")
	}
}

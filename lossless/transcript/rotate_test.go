package transcript

import (
	"encoding/json"
	"testing"
)

func FuzzRewriteEntry(f *testing.F) {
	for _, s := range []string{`{"type":"message","id":"a","parentId":null,"message":{"role": "user", "content": "<b>"}}`, `{"type":"model_change"}`, `{}`, `[]`, `{"a":1,`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := RewriteEntry(raw, "id1", "p1", "2026-01-01T00:00:00.000Z")
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			// Input with duplicate or odd members may not round trip, but
			// valid JSON objects must.
			if json.Valid(raw) {
				t.Fatalf("rewrite of valid %q gave invalid %q: %v", raw, out, err)
			}
			return
		}
		if string(m["id"]) != `"id1"` || string(m["parentId"]) != `"p1"` {
			t.Fatalf("id/parentId not set: %s", out)
		}
	})
}

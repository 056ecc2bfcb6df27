package bridge

import (
	"fmt"
	"strings"
	"testing"
)

// TestInvalidUTF8NamesRefused: a session id, session key or agent id that
// decoding would change (an invalid byte, an unpaired surrogate escape) is
// refused with invalid params naming the key, kind invalid_session_id,
// under the request's id, and the engine is not called (issue #37: "s\xff"
// was stored as "s\uFFFD"). Valid names, a surrogate pair among them, are
// accepted, and so is a message whose own content holds such a key with an
// unpaired surrogate (the message is stored as it is, byte for byte).
func TestInvalidUTF8NamesRefused(t *testing.T) {
	f := newFake()
	c := startServer(t, Static(f), Options{})
	c.initialize()
	msg := `{"role":"user","content":"hi","timestamp":1}`
	bad := []struct{ method, params, key string }{
		{MethodIngest, `{"sessionId":"s` + "\xff" + `","message":` + msg + `}`, "sessionId"},
		{MethodIngest, `{"sessionId":"s","sessionKey":"k` + "\xc3" + `","message":` + msg + `}`, "sessionKey"},
		{MethodIngest, `{"sessionId":"s\ud800x","message":` + msg + `}`, "sessionId"},
		{MethodIngest, `{"sessionId":"s\udc00\ud800","message":` + msg + `}`, "sessionId"},
		{MethodIngestBatch, `{"sessionId":"s","messages":[` + msg + `],"sessionTarget":{"agentId":"a` + "\xfe" + `"}}`, "sessionTarget.agentId"},
		{MethodAssemble, `{"sessionId":"ok","sessionKey":"\ud83d"}`, "sessionKey"},
		{MethodPrepareSubagentSpawn, `{"parentSessionKey":"p","childSessionKey":"c` + "\x80" + `"}`, "childSessionKey"},
		{MethodInitialize, `{"config":{"agentId":"a\udfff"}}`, "config.agentId"},
	}
	for i, tc := range bad {
		id := 900 + i
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, tc.method, tc.params))
		m := c.nextStray()
		if m.Error == nil || m.Error.Code != CodeInvalidParams || idKey(m.ID) != fmt.Sprint(id) ||
			!strings.Contains(m.Error.Message, tc.key+" is not valid UTF-8") || string(m.Error.Data) != `{"kind":"invalid_session_id"}` {
			t.Errorf("%s %q: got %s, want invalid params naming %s", tc.method, tc.params, m.Line, tc.key)
		}
	}
	f.mu.Lock()
	calls := append([]string(nil), f.calls...)
	f.mu.Unlock()
	if len(calls) != 0 {
		t.Fatalf("the engine was called for refused requests: %v", calls)
	}
	for i, params := range []string{
		`{"sessionId":"s\u00e9 é \ud83d\ude42","message":` + msg + `}`,
		`{"sessionId":"s2","message":{"role":"user","content":"hi","sessionId":"x\ud800","timestamp":1}}`,
	} {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ingest","params":%s}`, 950+i, params))
		if m := c.nextStray(); m.Error != nil || !strings.Contains(string(m.Result), `"ingested":true`) {
			t.Fatalf("%s: %s", params, m.Line)
		}
	}
	if got := f.sessions["s\u00e9 é \U0001F642"]; len(got) != 1 {
		t.Fatalf("the valid name was not given to the engine as sent: %v", f.sessions)
	}
}

// TestTooDeepSaysSo: a line nested deeper than the decoder's limit is
// answered "deeper than 10000 levels", not "not valid JSON" (it is valid).
func TestTooDeepSaysSo(t *testing.T) {
	c := startServer(t, Static(newFake()), Options{})
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	c.send(`{"jsonrpc":"2.0","method":"assemble","params":{"x":` + deep + `},"id":5}`)
	m := c.nextStray()
	if m.Error == nil || m.Error.Code != CodeParseError || !strings.Contains(m.Error.Message, "deeper than 10000 levels") {
		t.Fatalf("a 100K-deep line: %s", m.Line)
	}
	c.send(`{"jsonrpc":"2.0","id":6,"method":"assemble","params":{"x":` + deep + `}}`)
	m = c.nextStray()
	if m.Error == nil || idKey(m.ID) != "6" || !strings.Contains(m.Error.Message, "deeper than 10000 levels") {
		t.Fatalf("a 100K-deep request with its id first: %s", m.Line)
	}
	c.send(`{"jsonrpc":"2.0","id":7,"method":"assemble","params":{"x":[}}`)
	if m = c.nextStray(); m.Error == nil || !strings.Contains(m.Error.Message, "not valid JSON") {
		t.Fatalf("invalid JSON: %s", m.Line)
	}
}

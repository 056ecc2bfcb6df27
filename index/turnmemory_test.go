package index

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// TestTurnMemoryBounded checks that the memory of previous turns (the
// recall index's context of each session's next turn) keeps a copy of the
// clipped text, not a slice that keeps the whole text alive, and that it
// stays within its byte bound however many sessions pass, forgetting the
// least recent (the soak's heap profiles found it growing with every
// session and subagent a gateway met: #27).
func TestTurnMemoryBounded(t *testing.T) {
	var m turnMemory
	big := strings.Repeat("tool output ", 1<<17) // 1.5 MB
	m.context(&Doc{Agent: "a", Session: "s-big", Kind: KindMessage, Text: big})
	v, ok := m.get("a\x00s-big")
	if !ok || len(v) > maxCtxBytes || !strings.HasPrefix(big, v) {
		t.Fatalf("remembered %d bytes (ok %v), want the first ≤ %d of the text", len(v), ok, maxCtxBytes)
	}
	if unsafe.StringData(v) == unsafe.StringData(big) {
		t.Fatalf("the remembered turn is a slice of the %d-byte text: it keeps all of it alive", len(big))
	}
	text := strings.Repeat("x", maxCtxBytes)
	n := 3 * maxPrevBytes / maxCtxBytes
	for i := 0; i < n; i++ {
		m.context(&Doc{Agent: "a", Session: fmt.Sprintf("s-%06d", i), Kind: KindMessage, Text: text})
		if b := m.bytes(); b > maxPrevBytes {
			t.Fatalf("after %d sessions the memory holds %d bytes, bound %d", i+1, b, maxPrevBytes)
		}
	}
	if _, ok := m.get(fmt.Sprintf("a\x00s-%06d", n-1)); !ok {
		t.Errorf("the last session's turn is not remembered")
	}
	if _, ok := m.get("a\x00s-000000"); ok {
		t.Errorf("the first of %d sessions is still remembered past the bound", n)
	}
	if cx := m.context(&Doc{Agent: "a", Session: fmt.Sprintf("s-%06d", n-1), Kind: KindMessage, Text: "next"}); cx != text {
		t.Errorf("context of the last session's next turn = %q…, want its previous turn", cx[:min(len(cx), 20)])
	}
}

package bleveindex

import "testing"

// TestDFCache: a frequency is served until the doc count drifts by more
// than a tenth, or the index is replaced (reset); a put after a reset
// waits for the next fill.
func TestDFCache(t *testing.T) {
	var c dfCache
	if _, ok := c.get(1000, "alpha"); ok {
		t.Fatal("an empty cache hit")
	}
	c.put("alpha", 7)
	if n, ok := c.get(1050, "alpha"); !ok || n != 7 {
		t.Fatalf("within a tenth of the doc count: %d %v, want 7 true", n, ok)
	}
	if _, ok := c.get(1200, "alpha"); ok {
		t.Fatal("served after the doc count grew by a fifth")
	}
	c.put("alpha", 9)
	if n, ok := c.get(1200, "alpha"); !ok || n != 9 {
		t.Fatalf("refilled: %d %v, want 9 true", n, ok)
	}
	c.reset()
	c.put("alpha", 11) // from the replaced index: dropped
	if _, ok := c.get(1200, "alpha"); ok {
		t.Fatal("served after reset")
	}
	if _, ok := c.get(1200, "alpha"); ok {
		t.Fatal("a put made before the refill was kept")
	}
}

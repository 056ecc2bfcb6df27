package store

import "testing"

// TestRole: Role gives back every role as it was, and the roles of
// package core without allocating.
func TestRole(t *testing.T) {
	for _, r := range []string{"", "user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary", "someHostRole"} {
		b := []byte(r)
		if got := Role(b); got != r {
			t.Errorf("Role(%q) = %q", r, got)
		}
	}
	b := []byte("toolResult")
	if n := testing.AllocsPerRun(100, func() { _ = Role(b) }); n != 0 {
		t.Errorf("Role(toolResult) allocates %v times", n)
	}
}

package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a buffer the ticker and the test may use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestDraw(t *testing.T) {
	var w bytes.Buffer
	b := New(&w, Options{})
	b.StepNote("importing", 4, "")
	b.Set(2, "s1.jsonl")
	got := b.Line()
	if !strings.HasPrefix(got, "importing [") || !strings.Contains(got, strings.Repeat("=", 15)+strings.Repeat(" ", 15)+"]") ||
		!strings.Contains(got, " 50% 2/4 ") || !strings.HasSuffix(got, "s1.jsonl") {
		t.Fatalf("bar %q", got)
	}
	if !strings.HasPrefix(w.String(), "\rimporting [") {
		t.Fatalf("drawn %q", w.String())
	}
	// In bytes (import): one file of 4 MiB half read.
	by := New(&w, Options{Bytes: true})
	by.StepNote("importing", 4<<20, "big.jsonl")
	by.Set(2<<20, "big.jsonl")
	if got := by.Line(); !strings.Contains(got, strings.Repeat("=", 15)+strings.Repeat(" ", 15)) || !strings.Contains(got, "2.0 MiB/4.0 MiB") {
		t.Fatalf("byte bar %q", got)
	}
	// Unknown size: a spinner with the note.
	s := New(&w, Options{})
	s.StepNote("compacting", 0, "sess-1")
	if got := s.Line(); !strings.HasPrefix(got, "compacting ") || !strings.HasSuffix(got, "sess-1") || strings.Contains(got, "[") {
		t.Fatalf("spinner %q", got)
	}
	// A narrow terminal cuts the line.
	n := New(&w, Options{Width: func() int { return 30 }})
	n.Step("a long step name that does not fit", 10)
	if got := n.Line(); len(got) != 29 {
		t.Fatalf("line of %d columns on a terminal of 30: %q", len(got), got)
	}
}

// TestTicks: a bar redraws a step by itself (its elapsed time moves) while
// nothing is added, and draws nothing after Clear, which erases its line.
func TestTicks(t *testing.T) {
	var buf lockedBuffer
	b := New(&buf, Options{Width: func() int { return 60 }, Tick: time.Millisecond})
	b.Step("ingest: engine, bootstrap import", 1)
	deadline := time.Now().Add(30 * time.Second) // a bound, not a timing
	for strings.Count(buf.String(), "\r") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the bar did not redraw by itself: %q", buf.String())
		}
		time.Sleep(time.Millisecond)
	}
	b.Clear()
	out := buf.String()
	if !strings.HasSuffix(out, "\r\x1b[K") {
		t.Fatalf("Clear did not erase the line: %q", out[max(0, len(out)-40):])
	}
	b.Add(1)
	b.Set(1, "late")
	b.Clear()
	time.Sleep(10 * time.Millisecond)
	if buf.String() != out {
		t.Fatal("the bar drew after Clear")
	}
}

// TestAddDrawsAtMostEveryMinRedraw: updates faster than minRedraw draw
// once, and the last unit of a step draws at once.
func TestAddDrawsAtMostEveryMinRedraw(t *testing.T) {
	var w bytes.Buffer
	b := New(&w, Options{})
	b.Step("step", 1000)
	for range 999 {
		b.Add(1)
	}
	if n := strings.Count(w.String(), "\r"); n > 3 {
		t.Fatalf("%d draws for 999 quick updates", n)
	}
	b.Add(1)
	if got := w.String(); !strings.Contains(got[strings.LastIndex(got, "\r"):], "1000/1000") {
		t.Fatalf("the step's end was not drawn: %q", got)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 2 << 20: "2.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

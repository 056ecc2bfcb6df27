package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgressOnlyOnTerminals(t *testing.T) {
	var out, errb bytes.Buffer
	p := newProgress(&stdio{out: &out, err: &errb}, "importing", 3)
	p.set(1, "/x/a.jsonl")
	time.Sleep(200 * time.Millisecond)
	p.done()
	if out.Len() != 0 || errb.Len() != 0 {
		t.Fatalf("progress drawn on a pipe: %q %q", out.String(), errb.String())
	}
}

func TestProgressDraw(t *testing.T) {
	var w bytes.Buffer
	p := &progress{w: &w, label: "importing", total: 4, start: time.Now()}
	p.set(2, "/some/dir/s1.jsonl")
	p.draw()
	got := w.String()
	if !strings.HasPrefix(got, "\rimporting [") || !strings.Contains(got, strings.Repeat("=", 15)+strings.Repeat(" ", 15)) ||
		!strings.Contains(got, "2/4") || !strings.Contains(got, "s1.jsonl") || strings.Contains(got, "/some/dir") {
		t.Fatalf("bar %q", got)
	}
	w.Reset()
	s := &progress{w: &w, label: "compacting", start: time.Now()}
	s.set(0, "sess-1")
	s.draw()
	if !strings.HasPrefix(w.String(), "\rcompacting ") || !strings.Contains(w.String(), "sess-1") {
		t.Fatalf("spinner %q", w.String())
	}
}

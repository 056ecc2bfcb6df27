package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestProgressOnlyOnTerminals(t *testing.T) {
	var out, errb bytes.Buffer
	p := newProgress(&stdio{out: &out, err: &errb}, "importing", 3, false)
	p.Set(1, "a.jsonl")
	time.Sleep(200 * time.Millisecond)
	p.Clear()
	if out.Len() != 0 || errb.Len() != 0 {
		t.Fatalf("progress drawn on a pipe: %q %q", out.String(), errb.String())
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2026-11-01", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-11-01T08:30", time.Date(2026, 11, 1, 8, 30, 0, 0, time.UTC)},
		{"2026-11-01T08:30:05Z", time.Date(2026, 11, 1, 8, 30, 5, 0, time.UTC)},
		{"36h", now.Add(-36 * time.Hour)},
		{"90m", now.Add(-90 * time.Minute)},
		{"7d", now.Add(-7 * 24 * time.Hour)},
	} {
		got, err := parseTime(tc.in, now)
		if err != nil || got != tc.want.UnixMilli() {
			t.Errorf("parseTime(%q) = %d, %v; want %d", tc.in, got, err, tc.want.UnixMilli())
		}
	}
	for _, bad := range []string{"", "yesterday", "-3d", "-5h", "2026-13-01"} {
		if _, err := parseTime(bad, now); err == nil {
			t.Errorf("parseTime(%q) accepted", bad)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-11-01", "2026-11-01T08:30", "2026-11-01T08:30:05.123Z", "36h", "7d", "", "-1d", "9999999999d"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := parseTime(s, now)
		if err != nil {
			return
		}
		// Relative forms never point into the future.
		if _, derr := time.ParseDuration(strings.TrimSpace(s)); derr == nil && ms > now.UnixMilli() {
			t.Fatalf("%q: %d is after now", s, ms)
		}
	})
}

func FuzzWithDefaults(f *testing.F) {
	for _, s := range []string{`{}`, `null`, ``, `{"storeDir":"/x"}`, `{"agentId":"a","recall":{"enabled":true}}`, `[1]`, `"s"`, `{"storeDir":`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out, err := withDefaults([]byte(raw), map[string]any{"storeDir": "/default"}, true, "agent")
		if err != nil {
			return
		}
		var m map[string]any
		if jerr := json.Unmarshal(out, &m); jerr != nil {
			t.Fatalf("withDefaults(%q) = %q, not a JSON object: %v", raw, out, jerr)
		}
		if _, ok := m["storeDir"]; !ok {
			t.Fatalf("withDefaults(%q) lost storeDir: %s", raw, out)
		}
		if _, ok := m["agentId"]; !ok {
			t.Fatalf("withDefaults(%q) lost agentId: %s", raw, out)
		}
	})
}

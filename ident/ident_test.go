package ident_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lossless-engine/contextengine/ident"
)

func TestValues(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"session 3f2b9c1e-8d4a-4e6b-9f1a-2c3d4e5f6a7b started", []string{"3f2b9c1e-8d4a-4e6b-9f1a-2c3d4e5f6a7b"}},
		{"commit 0894b93 and deadbeefcafe1234, not 1234567 nor defaced", []string{"0894b93", "deadbeefcafe1234"}},
		{"see https://example.com/a/b?c=d&e=f. Then", []string{"https://example.com/a/b?c=d&e=f"}},
		{"(http://localhost:8080/health)", []string{"http://localhost:8080/health"}},
		{"edit /work/main/core/tokens.go and ./dag/dag.go, ~/go/pkg, ../x/y", []string{"/work/main/core/tokens.go", "./dag/dag.go", "~/go/pkg", "../x/y"}},
		{"open core/tokens.go or package.json or .gitignore", []string{"core/tokens.go", "package.json", ".gitignore"}},
		{"and/or input/output 11/30/2026", nil},
		{"connect to 10.0.0.12:5432 or 192.168.1.1 or db.internal:5432 or localhost:3000", []string{"10.0.0.12:5432", "192.168.1.1", "db.internal:5432", "localhost:3000"}},
		{"host api.openai.com is up; time 20:55 is not a port", []string{"api.openai.com"}},
		{"set max_tokens and OPENAI_API_KEY; call getEncoding on TokenCounter", []string{"max_tokens", "OPENAI_API_KEY", "getEncoding", "TokenCounter"}},
		{"use core.Truncate and plugins.entries.lossless, e.g. not i.e. this", []string{"core.Truncate", "plugins.entries.lossless"}},
		{"install openclaw@2026.9.6 and mail me@example.com", []string{"openclaw@2026.9.6", "me@example.com"}},
		{"call _disconnectFromAgent() then $HOME_DIR", []string{"_disconnectFromAgent", "HOME_DIR"}},
		{`C:\Users\me\file.txt and a\nb escape`, []string{`C:\Users\me\file.txt`}},
		{"key=max_tokens path=/a/b.go", []string{"max_tokens", "/a/b.go"}},
		{"dup tokens.go tokens.go", []string{"tokens.go"}},
		{"plain English words only. Nothing here!", nil},
		{"", nil},
	}
	for _, c := range cases {
		got := ident.Values(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Values(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestKinds(t *testing.T) {
	text := "see https://example.com/a/b?x=1, order 0b7e4f3c-5d2a-4e8f-9c1b-2a3d4e5f6a7b at 10.0.3.7:8080 " +
		"and db.internal:5432 or api.openai.com; commit a1b2c3d; edit /srv/app/main.go, ./cmd/run.sh, pkg/util.go, " +
		".gitignore and go.mod; call parseJSON, core.Truncate, max_tokens, openclaw@2026.9.6. " +
		"Not ids: and/or, 1/2, 2024, deadbeef (no digit), the end."
	got := map[string]ident.Kind{}
	for _, id := range ident.All(text) {
		got[id.Value] = id.Kind
	}
	want := map[string]ident.Kind{
		"https://example.com/a/b?x=1":          ident.URL,
		"0b7e4f3c-5d2a-4e8f-9c1b-2a3d4e5f6a7b": ident.UUID,
		"10.0.3.7:8080":                        ident.Host,
		"db.internal:5432":                     ident.Host,
		"api.openai.com":                       ident.Host,
		"a1b2c3d":                              ident.Hash,
		"/srv/app/main.go":                     ident.Path,
		"./cmd/run.sh":                         ident.Path,
		"pkg/util.go":                          ident.Path,
		".gitignore":                           ident.Path,
		"go.mod":                               ident.Path,
		"parseJSON":                            ident.Name,
		"core.Truncate":                        ident.Name,
		"max_tokens":                           ident.Name,
		"openclaw@2026.9.6":                    ident.Name,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kinds\n got %v\nwant %v", got, want)
	}
}

// TestScanOffsets: Scan reports offsets into the text, with repeats.
func TestScanOffsets(t *testing.T) {
	text := "(a/b.go) x a/b.go, key=max_tokens."
	var got []string
	ident.Scan(text, func(s, e int, k ident.Kind) { got = append(got, fmt.Sprintf("%d-%d %s %s", s, e, k, text[s:e])) })
	want := []string{"1-7 path a/b.go", "11-17 path a/b.go", "23-33 name max_tokens"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Scan(%q)\n got %q\nwant %q", text, got, want)
	}
}

func FuzzScan(f *testing.F) {
	for _, s := range []string{
		"3f2b9c1e-8d4a-4e6b-9f1a-2c3d4e5f6a7b", "https://x.io/a?b=c", "/a/b/c.go", "C:\\x\\y.txt", "10.0.0.1:80",
		"a.b.c", "snake_case camelCase", "::://", "a@b.c", "\\\\\\", "é/ü.go", "....", "x=y=z", "http://",
		"会话 /路径/文件.go", "\x00\xff", strings.Repeat("a_", 3000), "héllo/wörld.go", "\xff/x.go", "1.2.3.4:80",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		last := 0
		ident.Scan(s, func(start, end int, k ident.Kind) {
			if start < last || end <= start || end > len(s) {
				t.Fatalf("span %d-%d after %d in %d bytes", start, end, last, len(s))
			}
			last = end
			if k == "" {
				t.Fatalf("no kind for %q", s[start:end])
			}
			if utf8.ValidString(s) && !utf8.ValidString(s[start:end]) {
				t.Fatalf("invalid UTF-8 identifier %q", s[start:end])
			}
		})
		ids := ident.All(s)
		seen := map[string]bool{}
		for _, id := range ids {
			if id.Value == "" || !strings.Contains(s, id.Value) {
				t.Fatalf("%q is not a substring of the input", id.Value)
			}
			if seen[id.Value] {
				t.Fatalf("duplicate %q", id.Value)
			}
			seen[id.Value] = true
		}
		if again := ident.All(s); !reflect.DeepEqual(again, ids) {
			t.Fatalf("not deterministic")
		}
	})
}

// BenchmarkValues measures the scanner on 1 MB of chat-like text.
func BenchmarkValues(b *testing.B) {
	line := "edit /work/main/core/tokens.go then call parseJSON on https://example.com/a?b=c, commit 0894b93 " +
		"and the plain words of an ordinary sentence that carries no identifier at all.\n"
	text := strings.Repeat(line, 1<<20/len(line))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ident.Values(text)
	}
}

func ExampleAll() {
	for _, id := range ident.All("edit ./cmd/run.sh, commit a1b2c3d, then call core.Truncate") {
		fmt.Println(id.Kind, id.Value)
	}
	// Output:
	// path ./cmd/run.sh
	// hash a1b2c3d
	// name core.Truncate
}

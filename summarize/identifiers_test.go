package summarize

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestIdentifiers(t *testing.T) {
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
		{"dup tokens.go tokens.go", []string{"tokens.go"}},
		{"plain English words only. Nothing here!", nil},
		{"", nil},
	}
	for _, c := range cases {
		got := Identifiers(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Identifiers(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func FuzzIdentifiers(f *testing.F) {
	for _, s := range []string{
		"3f2b9c1e-8d4a-4e6b-9f1a-2c3d4e5f6a7b", "https://x.io/a?b=c", "/a/b/c.go", "C:\\x\\y.txt", "10.0.0.1:80",
		"a.b.c", "snake_case camelCase", "::://", "a@b.c", "\\\\\\", "é/ü.go", "....", "x=y=z", "http://",
		"会话 /路径/文件.go", "\x00\xff", strings.Repeat("a_", 3000),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := Identifiers(s)
		seen := map[string]bool{}
		for _, id := range ids {
			if id == "" || !strings.Contains(s, id) {
				t.Fatalf("%q is not a substring of the input", id)
			}
			if seen[id] {
				t.Fatalf("duplicate %q", id)
			}
			seen[id] = true
			if utf8.ValidString(s) && !utf8.ValidString(id) {
				t.Fatalf("invalid UTF-8 identifier %q", id)
			}
		}
		if again := Identifiers(s); !reflect.DeepEqual(again, ids) {
			t.Fatalf("not deterministic")
		}
	})
}

package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/lossless"
)

func TestResolveVersion(t *testing.T) {
	t.Parallel()
	dev := lossless.Version + "-dev"
	for _, tc := range []struct{ stamped, module, want string }{
		{"1.2.3", "(devel)", "1.2.3"},
		{"v1.2.3", "", "1.2.3"},
		{" 0.0.0-ci.2 ", "v9.9.9", "0.0.0-ci.2"}, // the stamp wins over the module version
		{"", "v1.4.0", "1.4.0"},                  // go install …@v1.4.0
		{"", "v1.5.0-rc.1", "1.5.0-rc.1"},
		{"", "(devel)", dev},
		{"", "", dev},
		{"", "v0.0.0-20261207073734-aa2debe12345", dev},       // a commit, not a release
		{"", "v1.2.4-0.20261207073734-aa2debe12345", dev},     // likewise, after a tag
		{"", "v0.0.0-20261207073734-aa2debe12345+dirty", dev}, // a checkout with changes
	} {
		if got := resolveVersion(tc.stamped, tc.module); got != tc.want {
			t.Errorf("resolveVersion(%q, %q) = %q, want %q", tc.stamped, tc.module, got, tc.want)
		}
	}
}

// TestVersionStamped links the command with the release command's ldflags
// and checks that `lossless version` and the bridge's initialize (which the
// OpenClaw plugin compares with its package.json) report the stamp, while
// a plain build reports a -dev version.
func TestVersionStamped(t *testing.T) {
	t.Parallel()
	const stamp = "9.8.7-test.1"
	bin := filepath.Join(t.TempDir(), "lossless")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.version="+stamp, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags -X main.version: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("lossless version: %v", err)
	}
	if !strings.HasPrefix(string(out), "lossless "+stamp+" (") {
		t.Fatalf("stamped lossless version printed %q, want it to start with %q", out, "lossless "+stamp+" (")
	}
	if got := serveVersion(t, bin); got != stamp {
		t.Fatalf("stamped serve --stdio: initialize reports server version %q, want %q", got, stamp)
	}

	plain := runCLI(t, "", nil, "version")
	plain.want(t, 0, "lossless ")
	if strings.Contains(plain.stdout, stamp) || !strings.Contains(plain.stdout, "-dev (") {
		t.Fatalf("a plain build's version is %q; want a -dev version", plain.stdout)
	}
	if got := serveVersion(t, binary(t)); !strings.HasSuffix(got, "-dev") || !strings.Contains(plain.stdout, " "+got+" (") {
		t.Fatalf("plain serve --stdio reports server version %q; lossless version printed %q", got, plain.stdout)
	}
}

// serveVersion runs `bin serve --stdio`, sends initialize and returns the
// server version it reports.
func serveVersion(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(bin, "serve", "--stdio", "--store", filepath.Join(dir, "store"))
	cmd.Env = []string{"HOME=" + dir, "LOSSLESS_TOKENIZER=chars4"}
	req := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"config":{"storeDir":` +
		strings.TrimSpace(mustJSON(t, filepath.Join(dir, "store"))) + `,"tokenizer":"chars4"},"protocolVersion":1}}` + "\n"
	cmd.Stdin = strings.NewReader(req)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s serve --stdio: %v", bin, err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var resp struct {
			ID     int `json:"id"`
			Result *struct {
				Server struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"server"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &resp) != nil || resp.ID != 1 {
			continue
		}
		if resp.Result == nil {
			t.Fatalf("initialize failed: %s", resp.Error)
		}
		return resp.Result.Server.Version
	}
	t.Fatalf("no initialize answer from %s serve --stdio; stdout:\n%s", bin, out)
	return ""
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

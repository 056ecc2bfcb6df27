package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// snapshotDir maps every file under dir to its size, mtime and content hash.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[p] = fmt.Sprintf("dir %v", info.ModTime().UnixNano())
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%d %v %x", info.Size(), info.ModTime().UnixNano(), sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffSnapshots(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, fmt.Sprintf("%s: %q -> %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d = append(d, fmt.Sprintf("%s: new %q", k, v))
		}
	}
	return d
}

// TestDoctorReadOnly: doctor changes nothing in the store (every file and
// directory keeps its bytes and mtime), does not rebuild a missing recall
// index (it reports it missing), and starts no retention pass; it prints
// no FAIL line when it finds no problem.
func TestDoctorReadOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-ro", 3)
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0)
	if err := os.RemoveAll(filepath.Join(store, "index")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "openclaw.json")
	body := `{"plugins":{"slots":{"contextEngine":"lossless"},"entries":{"lossless":{"config":{"storeDir":` + jsonString(store) +
		`,"recall":{"enabled":true},"retention":{"maxAgeDays":1,"intervalMinutes":1}}}}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, store)
	time.Sleep(20 * time.Millisecond) // a write now would show in an mtime

	r := runCLI(t, "", nil, "doctor", "--config", cfg)
	r.want(t, 0, "engine     lossless (configured)", "recall     no index yet", "no problems found")
	if strings.Contains(r.stdout, "FAIL") {
		t.Fatalf("FAIL lines with no problem:\n%s", r.stdout)
	}
	r = runCLI(t, "", nil, "doctor", "--config", cfg, "--deep", "--json")
	r.want(t, 0)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	if rep.Store.Messages != 6 || rep.Store.Recall == nil || !rep.Store.Recall.Enabled || rep.Store.Recall.Exists || len(rep.Problems) != 0 {
		t.Fatalf("doctor report: messages %d, recall %+v, problems %v", rep.Store.Messages, rep.Store.Recall, rep.Problems)
	}
	if d := diffSnapshots(before, snapshotDir(t, store)); len(d) > 0 {
		t.Fatalf("doctor changed the store:\n%s", strings.Join(d, "\n"))
	}
	// The engine itself (any writing command) builds the index again.
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0)
	runCLI(t, "", nil, "doctor", "--config", cfg).want(t, 0, "recall     index at ")
}

// TestSessionsShowMessageTimes: sessions lists when the conversation took
// place (its messages' timestamps), not when it was imported.
func TestSessionsShowMessageTimes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	file := filepath.Join(dir, "old.jsonl")
	first := time.Date(2021, 3, 4, 5, 6, 0, 0, time.UTC).UnixMilli()
	last := time.Date(2021, 3, 9, 10, 11, 0, 0, time.UTC).UnixMilli()
	lines := []string{
		`{"type":"session","version":3,"id":"sess-2021","timestamp":"2021-03-04T05:06:00.000Z","cwd":"/w"}`,
		fmt.Sprintf(`{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"hello"}],"timestamp":%d}}`, first),
		fmt.Sprintf(`{"type":"message","id":"a2","parentId":"a1","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"stopReason":"stop","timestamp":%d}}`, last),
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0)
	r := runCLI(t, "", nil, "sessions", "--store", store)
	r.want(t, 0, "FIRST", "LAST", "2021-03-04 05:06Z", "2021-03-09 10:11Z")
	if today := time.Now().UTC().Format("2006-01-02"); strings.Contains(r.stdout, today) {
		t.Fatalf("sessions shows the import time (%s):\n%s", today, r.stdout)
	}
	r = runCLI(t, "", nil, "sessions", "--store", store, "--json")
	r.want(t, 0, fmt.Sprintf(`"firstMessage": %d`, first), fmt.Sprintf(`"lastMessage": %d`, last))
}

// TestDescribeExpandNumbering: describe and expand both number messages
// from 1, with the same conversation message numbers; compact prints the
// new summaries' ids.
func TestDescribeExpandNumbering(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	file := filepath.Join(dir, "s.jsonl")
	writeSession(t, file, "sess-num", 30)
	runCLI(t, "", nil, "import", "--store", store, file).want(t, 0)
	r := runCLI(t, "", nil, "compact", "--store", store, "--session", "sess-num", "--budget", "300", "--force")
	r.want(t, 0, "new summaries (lossless describe/expand ID): ")
	id := regexp.MustCompile(`new summaries \(lossless describe/expand ID\): (\S+)`).FindStringSubmatch(r.stdout)[1]

	r = runCLI(t, "", nil, "describe", "--store", store, id, "--json")
	r.want(t, 0)
	var d struct {
		Description struct {
			Messages []uint64 `json:"messages"`
		} `json:"description"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || len(d.Description.Messages) < 2 {
		t.Fatalf("describe --json: %v %+v\n%s", err, d, r.stdout)
	}
	n := len(d.Description.Messages)
	lo, hi := d.Description.Messages[0], d.Description.Messages[n-1]
	if lo != 1 {
		t.Fatalf("the first summary starts at conversation message %d, want 1", lo)
	}
	runCLI(t, "", nil, "describe", "--store", store, id).want(t, 0, fmt.Sprintf("sources   conversation messages %d-%d (%d)", lo, hi, n))
	runCLI(t, "", nil, "expand", "--store", store, id).want(t, 0, fmt.Sprintf("messages 1-%d of %d (conversation messages %d-%d,", n, n, lo, hi))
	// A page of one message: its place and its number, both from 1.
	r = runCLI(t, "", nil, "expand", "--store", store, id, "--max-tokens", "1")
	r.want(t, 0, fmt.Sprintf("messages 1 of %d (conversation messages %d,", n, lo), "more: --cursor")
}

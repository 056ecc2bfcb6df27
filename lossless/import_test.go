package lossless

import (
	"bytes"
	"context"
	"testing"

	"github.com/lossless-engine/contextengine/internal/testutil"
)

func TestImportRoundTrip(t *testing.T) {
	e := openTest(t)
	ctx := context.Background()
	for _, path := range testutil.PiMono(t) {
		res, err := e.Import(ctx, "", path)
		if err != nil {
			t.Fatal(err)
		}
		want := fileMessages(t, path)
		if res.Imported+res.Duplicates != len(want) {
			t.Errorf("%s: imported %d + %d duplicates, file has %d messages", path, res.Imported, res.Duplicates, len(want))
		}
		got := storedMessages(t, e, "", res.SessionID)
		// Byte-identical messages in one file are stored once (same key);
		// compare against the file with such repeats removed.
		seen := map[msgHash]bool{}
		var uniq [][]byte
		for _, m := range want {
			h := hashRaw(m)
			if !seen[h] {
				seen[h] = true
				uniq = append(uniq, m)
			}
		}
		if len(got) != len(uniq) {
			t.Fatalf("%s: stored %d messages, want %d", path, len(got), len(uniq))
		}
		for i := range got {
			if !bytes.Equal(got[i], uniq[i]) {
				t.Fatalf("%s: message %d differs:\n got %.200s\nwant %.200s", path, i, got[i], uniq[i])
			}
		}
		t.Logf("%s: %+v", path, res)
	}
}

package locomo

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/lossless-engine/contextengine/internal/testutil"
)

var tuneNB = func() int { n, _ := strconv.Atoi(os.Getenv("TUNE_NB")); return n }()

func TestRecallLoCoMo(t *testing.T) {
	p := testutil.SharedFile(t, "data/locomo/locomo-dev3.json")
	rep, err := RunRecall(context.Background(), RecallConfig{Path: p, Dir: t.TempDir(), Neighbours: tuneNB})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
}

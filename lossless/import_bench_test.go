package lossless

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/internal/testutil"
	"github.com/lossless-engine/contextengine/lossless/config"
)

// BenchmarkImportRecall imports before-compaction.jsonl (2.4 MB) into a
// fresh store with the default tokenizer (o200k_base, exact counts), with
// the recall index off and on (its Bleve indexing runs in the background
// while the import runs: the CPU it takes is the import's). Reports MB/s
// (wall) and MB per CPU-second.
func BenchmarkImportRecall(b *testing.B) {
	for _, recall := range []string{"off", "on"} {
		b.Run("recall="+recall, func(b *testing.B) {
			path := testutil.PiMono(b)[0]
			st, _ := os.Stat(path)
			b.SetBytes(st.Size())
			b.ReportAllocs()
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				cfg := config.Default()
				cfg.StoreDir = b.TempDir()
				// Through JSON, as a user's config file sets it.
				if err := json.Unmarshal([]byte(`{"recall":{"enabled":`+map[string]string{"on": "true", "off": "false"}[recall]+`}}`), &cfg); err != nil {
					b.Fatal(err)
				}
				e, err := Open(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				cpu0 := cpuTime()
				if _, err := e.Import(context.Background(), "", path); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - cpu0
				b.StopTimer()
				e.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(st.Size())*float64(b.N)/cpu.Seconds()/1e6, "MB/cpu-s")
		})
	}
}

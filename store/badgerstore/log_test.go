package badgerstore

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestBadgerLogLevels: Badger's periodic block-cache statistics are logged
// at debug level, its other warnings at warning level.
func TestBadgerLogLevels(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	badgerLogger{}.Warningf("Block cache might be too small. Metrics: %s", "hit: 1 miss: 9")
	badgerLogger{}.Warningf("Cache life expectancy (in seconds): %s", "histogram")
	badgerLogger{}.Warningf("value log %d truncated", 7)
	var levels []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if !strings.Contains(line, "badgerstore: badger:") {
			continue
		}
		for _, l := range []string{"DEBUG", "WARN"} {
			if strings.Contains(line, "level="+l) {
				levels = append(levels, l)
			}
		}
	}
	if got := strings.Join(levels, ","); got != "DEBUG,DEBUG,WARN" {
		t.Fatalf("levels %s, want DEBUG,DEBUG,WARN:\n%s", got, buf.String())
	}
}

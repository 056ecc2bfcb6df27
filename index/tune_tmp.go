package index

import (
	"os"
	"strconv"

	"github.com/blevesearch/bleve/v2/search"
)

// temporary tuning knobs (removed before the final commit)
func tuneF(name string, def float64) float64 {
	if v := os.Getenv("TUNE_" + name); v != "" {
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	return def
}

func init() {
	ctxBoost = tuneF("CTX", ctxBoost)
	search.BM25_k1 = tuneF("K1", search.BM25_k1)
}

func init() {
	neighbourDecay = tuneF("DECAY", neighbourDecay)
	recallFetchMin = int(tuneF("FETCH", float64(recallFetchMin)))
}

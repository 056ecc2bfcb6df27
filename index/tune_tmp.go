package index

import (
	"os"
	"strconv"
)

func tuneF(name string, def float64) float64 {
	if v := os.Getenv("TUNE_" + name); v != "" {
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	return def
}

func init() {
	commonTermShare = tuneF("COMMON", commonTermShare)
	maxSearchTerms = int(tuneF("MAXT", float64(maxSearchTerms)))
	ctxBoost = tuneF("CTX", ctxBoost)
	recallFetchMin = int(tuneF("FETCH", float64(recallFetchMin)))
}

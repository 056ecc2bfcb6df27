package bench

import (
	"strings"
	"testing"
)

// TestSoakTooFewSamples: a run whose middle or last third holds fewer than
// minThirdSamples samples gets no verdict, and its report says so rather
// than a growth from an empty third (a 3 s soak under the race detector on
// a loaded machine sampled once and printed "middle third 0.0 MB, last
// third 37.2 MB (+37.2 MB): NOT FLAT").
func TestSoakTooFewSamples(t *testing.T) {
	r := &SoakReport{Samples: []HeapSample{{T: 3.9, LiveMB: 37.2}}}
	r.Judge(4)
	if r.judged() || r.Flat {
		t.Fatalf("one sample judged (flat %v)", r.Flat)
	}
	var b strings.Builder
	writeSoak(&b, r)
	if !strings.Contains(b.String(), "TOO FEW SAMPLES") || strings.Contains(b.String(), "NOT FLAT") {
		t.Errorf("the report of one sample:\n%s", b.String())
	}
	for i := 0; i < 12; i++ {
		r.Samples = append(r.Samples, HeapSample{T: float64(i) / 3, LiveMB: 37})
	}
	r.Judge(4)
	if !r.judged() || !r.Flat {
		t.Errorf("13 samples, a steady heap: judged %v, flat %v (%d and %d samples)", r.judged(), r.Flat, r.MiddleSamples, r.LastSamples)
	}
}

package bench

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkRawBadgerWriteBatch is the raw Badger baseline of the ingest
// suite: one op writes a batch of n synthetic messages into a fresh store.
func BenchmarkRawBadgerWriteBatch(b *testing.B) {
	for _, n := range []int{100, 1000} {
		msgs, bytes, err := synthMessages(1, n)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("msgs=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(bytes)
			for b.Loop() {
				if _, err := rawBadger(context.Background(), b.TempDir(), msgs, nopProgress{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkRawBleveBatch is the raw Bleve baseline of the ingest suite: one
// op indexes n synthetic messages in batches of 1,000 into a fresh index.
func BenchmarkRawBleveBatch(b *testing.B) {
	for _, n := range []int{100, 1000} {
		msgs, bytes, err := synthMessages(1, n)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("msgs=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(bytes)
			for b.Loop() {
				if _, err := rawBleve(context.Background(), b.TempDir(), msgs, nopProgress{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

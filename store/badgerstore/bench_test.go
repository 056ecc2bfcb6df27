package badgerstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/store"
)

// BenchmarkItemsReverse is assemble's budget walk: every item of a
// conversation, newest first.
func BenchmarkItemsReverse(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint("items=", n), func(b *testing.B) {
			s := openTest(b, Options{})
			ctx := context.Background()
			bt, err := s.NewBatch(ctx)
			must(b, err)
			for i := 1; i <= n; i++ {
				must(b, bt.PutItem(gConv, msgItem(uint64(i)<<16, uint64(i), 100)))
			}
			must(b, bt.Flush())
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				err := s.View(ctx, func(r store.Reader) error {
					tokens := 0
					for it, err := range r.Items(gConv, 0, ^uint64(0), true) {
						if err != nil {
							return err
						}
						tokens += it.Tokens
					}
					if tokens != 100*n {
						b.Fatalf("%d tokens", tokens)
					}
					return nil
				})
				must(b, err)
			}
		})
	}
}

// BenchmarkMessage reads one compressed message whole and its header only
// (which must not decompress).
func BenchmarkMessage(b *testing.B) {
	s := openTest(b, Options{})
	ctx := context.Background()
	update(b, s, func(tx store.Tx) error {
		return tx.PutMessage(gConv, testMessage(1, strings.Repeat("a fairly compressible sentence. ", 400)))
	})
	for _, header := range []bool{false, true} {
		b.Run(fmt.Sprint("header=", header), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				err := s.View(ctx, func(r store.Reader) error {
					var err error
					if header {
						_, err = r.MessageHeader(gConv, 1)
					} else {
						_, err = r.Message(gConv, 1)
					}
					return err
				})
				must(b, err)
			}
		})
	}
}

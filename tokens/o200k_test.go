package tokens

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// TestBPEHeapMatchesDirect: the O(n log n) merge gives the same count as
// tiktoken's quadratic one on long pieces of base64, hex, repeated and
// mixed text (and so the fast counter still matches tiktoken-go there).
func TestBPEHeapMatchesDirect(t *testing.T) {
	f := mustO200k(t)
	f.load()
	rng := rand.New(rand.NewPCG(1, 2))
	alphabets := []string{
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
		"0123456789abcdef", "ab", "a", "thequickbrownfox", "xyzXYZ",
	}
	for i := 0; i < 300; i++ {
		alpha := alphabets[i%len(alphabets)]
		n := 1 + rng.IntN(3000)
		b := make([]byte, n)
		for j := range b {
			b[j] = alpha[rng.IntN(len(alpha))]
		}
		if got, want := bpeCountHeap(b, f.ranks), bpeCountDirect(b, f.ranks); got != want {
			t.Fatalf("piece %d (%d bytes of %q): heap %d, direct %d", i, n, alpha[:min(len(alpha), 8)], got, want)
		}
	}
	ref := tiktokenO200k(t)
	long := make([]byte, 20000)
	for j := range long {
		long[j] = alphabets[0][rng.IntN(64)]
	}
	if got, want := f.CountText(string(long)), ref.CountText(string(long)); got != want {
		t.Fatalf("20K base64 characters: fast %d, tiktoken %d", got, want)
	}
}

func mustO200k(tb testing.TB) *O200k {
	tb.Helper()
	f, err := NewO200k()
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// tiktokenO200k is tiktoken-go's own o200k_base encoder, the reference.
func tiktokenO200k(tb testing.TB) interface{ CountText(string) int } {
	tb.Helper()
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(Encoding)
	if err != nil {
		tb.Fatal(err)
	}
	return refEncoder{enc}
}

type refEncoder struct{ enc *tiktoken.Tiktoken }

func (r refEncoder) CountText(s string) int { return len(r.enc.EncodeOrdinary(s)) }

// BenchmarkCountRun counts runs of base64 without spaces, 25K to 1M
// characters: the time per character stays flat (linear, not quadratic).
func BenchmarkCountRun(b *testing.B) {
	f := mustO200k(b)
	rng := rand.New(rand.NewPCG(3, 4))
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for _, n := range []int{25_000, 100_000, 250_000, 1_000_000} {
		s := make([]byte, n)
		for j := range s {
			s[j] = alpha[rng.IntN(len(alpha))]
		}
		text := string(s)
		b.Run(fmt.Sprintf("%dK", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				f.CountText(text)
			}
		})
	}
}

// base64Run returns n characters of base64 without a space.
func base64Run(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b := make([]byte, n)
	for j := range b {
		b[j] = alpha[rng.IntN(len(alpha))]
	}
	return string(b)
}

// BenchmarkCount32MiB counts a 32 MiB message without spaces (the issue's
// target: under 5 s).
func BenchmarkCount32MiB(b *testing.B) {
	f := mustO200k(b)
	s := base64Run(32<<20, 9)
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		f.CountText(s)
	}
}

// TestParallelCountMatchesSequential: a text long enough to be counted
// across the cores gives the same count as counted on one (mixed prose,
// code, CJK and a run of base64 longer than a cut).
func TestParallelCountMatchesSequential(t *testing.T) {
	f := mustO200k(t)
	var sb strings.Builder
	for sb.Len() < 3<<20 {
		sb.WriteString("The quick brown fox jumps over the lazy dog, don't it? 12345 ")
		sb.WriteString("func main() { fmt.Println(\"hi\") }\n日本語のテキストです。")
		sb.WriteString(base64Run(70_000, uint64(sb.Len())))
		sb.WriteString("\n\n")
	}
	s := sb.String()
	par := f.CountText(s)
	old := runtime.GOMAXPROCS(1)
	seq := f.CountText(s)
	runtime.GOMAXPROCS(old)
	if old > 1 && par != seq {
		t.Fatalf("parallel count %d, sequential %d", par, seq)
	}
	if par == 0 {
		t.Fatal("no tokens counted")
	}
}

// TestPieceCacheBoundedInBytes: counting many distinct long pieces (text
// without spaces, as minified code) keeps the piece cache within its byte
// budget: it was bounded by count only, and a count of 64K-rune pieces is
// gigabytes.
func TestPieceCacheBoundedInBytes(t *testing.T) {
	f := shared
	r := rand.New(rand.NewPCG(1, 2))
	letters := "abcdefghijklmnopqrstuvwxyz"
	for i := 0; i < 2000; i++ {
		b := make([]byte, 200+r.IntN(3000))
		for j := range b {
			b[j] = letters[r.IntN(len(letters))]
		}
		f.CountText(string(b))
	}
	total := f.cache.c.Bytes()
	if total > pieceCacheBytes || f.cache.c.Len() == 0 {
		t.Fatalf("piece cache: %d bytes in %d pieces (budget %d)", total, f.cache.c.Len(), pieceCacheBytes)
	}
	// A piece over pieceCacheLongest is not cached, one under it is.
	short, long := strings.Repeat("qz", 250), strings.Repeat("qx", 600)
	f.CountText(short)
	f.CountText(long)
	if _, ok := f.cache.c.Get(short); !ok {
		t.Fatalf("a piece of %d bytes was not cached", len(short))
	}
	if _, ok := f.cache.c.Get(long); ok {
		t.Fatalf("a piece of %d bytes is cached (longest cached: %d)", len(long), pieceCacheLongest)
	}
	t.Logf("piece cache: %d bytes", total)
}

package tokens

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// O200k counts o200k_base tokens exactly as tiktoken-go does, about an
// order of magnitude faster: tiktoken-go splits text with a backtracking
// regular expression (regexp2), which dominates its cost (and turns
// quadratic on some code), while this counter splits with a hand-written
// matcher of the same pattern, then byte-pair-merges the pieces that are
// not whole tokens (cached). TestFastCounterMatchesTiktoken and
// FuzzFastCounter check it against tiktoken-go.
//
// The o200k pattern, alternatives tried in order at each position:
//
//	1 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	2 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	3 \p{N}{1,3}
//	4  ?[^\s\p{L}\p{N}]+[\r\n/]*
//	5 \s*[\r\n]+
//	6 \s+(?!\S)
//	7 \s+
//
// O200k implements core.TokenCounter and core.ContextCounter; it is safe
// for concurrent use.
type O200k struct {
	once  sync.Once
	ranks map[string]int
	cache pieceCache
}

// shared is the one O200k of the process: its ranks (about 200K entries)
// and its piece cache are loaded and filled once, whoever counts.
var shared = &O200k{cache: newPieceCache()}

// NewO200k returns the shared o200k_base counter. The BPE ranks (about
// 200K entries, from the offline loader compiled into the binary) are
// loaded on first use, not here, so that opening a store stays light; the
// error reports a build without them.
func NewO200k() (*O200k, error) {
	// The ranks are loaded on first use: check here, cheaply, that the
	// asset they are loaded from is in the binary.
	if err := checkBPEAsset(assets.Assets, o200kAsset); err != nil {
		return nil, err
	}
	return shared, nil
}

// o200kAsset is the name of the o200k_base ranks in the offline loader's
// embedded assets.
const o200kAsset = "o200k_base.tiktoken"

// checkBPEAsset reports an error unless fsys holds a non-empty file name
// (it stats the file; it does not read it).
func checkBPEAsset(fsys fs.FS, name string) error {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return fmt.Errorf("tokens: the embedded BPE ranks %s are missing from the build: %w", name, err)
	}
	if st.IsDir() || st.Size() == 0 {
		return fmt.Errorf("tokens: the embedded BPE ranks %s are empty", name)
	}
	return nil
}

func (f *O200k) load() {
	f.once.Do(func() {
		ranks, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(o200kAsset)
		if err != nil {
			// The ranks are compiled into the binary (NewO200k checked
			// they are there): a failure is a build defect.
			panic(fmt.Errorf("tokens: load o200k_base ranks: %w", err))
		}
		f.ranks = ranks
	})
}

// Encoding is the name of the encoding O200k counts (core.EncodingO200k).
const Encoding = "o200k_base"

// Name returns Encoding, "o200k_base".
func (f *O200k) Name() string { return Encoding }

// CountText returns the number of o200k_base tokens of s.
func (f *O200k) CountText(s string) int {
	n, _ := f.CountTextContext(context.Background(), s)
	return n
}

// MaxPieceRunes caps one piece: a longer run without a break (base64, a
// minified blob) is counted MaxPieceRunes runes at a time, so that one
// merge does not hold a count (and its context) for long. Counts of such
// runs may differ from tiktoken-go's by a token or two at each cut; text
// without such runs counts exactly as tiktoken-go.
const MaxPieceRunes = 64 << 10

// ctxCheckPieces is how many pieces CountTextContext counts between looks
// at its context.
const ctxCheckPieces = 4096

// CountTextContext is CountText that stops when ctx is done
// (core.ContextCounter), returning ctx's error and the count so far.
func (f *O200k) CountTextContext(ctx context.Context, s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	f.load()
	var buf [512]rune
	r := buf[:0]
	if len(s) <= len(buf) {
		for _, c := range s {
			r = append(r, c)
		}
	} else {
		r = []rune(s)
	}
	if len(r) >= parallelCountRunes && runtime.GOMAXPROCS(0) > 1 {
		return f.countParallel(ctx, r)
	}
	n := 0
	var pb []byte
	pieces := 0
	runEnd := 0 // the end of a long run being counted slice by slice
	for i := 0; i < len(r); {
		end := nextPiece(r, i, &runEnd)
		if pieces++; pieces%ctxCheckPieces == 0 || end-i >= 1024 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		n += f.spanTokens(r[i:end], &pb)
		i = end
	}
	return n, nil
}

// nextPiece returns the end of the piece of r that starts at i. A run
// longer than MaxPieceRunes (a run without a break: base64, a minified
// blob) is cut into slices, so no one merge holds the count (and ctx) for
// long; *runEnd remembers the run's end, so it is not scanned again.
func nextPiece(r []rune, i int, runEnd *int) int {
	var end int
	if i < *runEnd {
		end = *runEnd // the rest of a cut run
	} else {
		end = matchO200k(r, i)
	}
	if end <= i { // cannot happen: every rune matches an alternative
		end = i + 1
	}
	if end-i > MaxPieceRunes {
		*runEnd = end
		end = i + MaxPieceRunes
	}
	return end
}

// spanTokens counts one piece given as runes (pb is scratch space).
func (f *O200k) spanTokens(piece []rune, pb *[]byte) int {
	b := (*pb)[:0]
	for _, c := range piece {
		b = utf8.AppendRune(b, c)
	}
	*pb = b
	return f.pieceTokens(b)
}

// parallelCountRunes is the text length from which CountTextContext
// merges pieces on every core: one goroutine finds the pieces (the cheap
// part), the others count them.
const parallelCountRunes = 1 << 20

// countParallel is CountTextContext for a long text: pieces are found in
// order and counted in batches across the cores (a piece's count does not
// depend on its neighbours, so the sum is the same).
func (f *O200k) countParallel(ctx context.Context, r []rune) (int, error) {
	type span struct{ i, end int }
	const batchPieces = 4096
	batches := make(chan []span, 4)
	var total atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pb []byte
			for b := range batches {
				if ctx.Err() != nil {
					continue // cancelled: drain without counting
				}
				n := 0
				for _, sp := range b {
					n += f.spanTokens(r[sp.i:sp.end], &pb)
				}
				total.Add(int64(n))
			}
		}()
	}
	var err error
	batch := make([]span, 0, batchPieces)
	runEnd := 0
	for i := 0; i < len(r); {
		end := nextPiece(r, i, &runEnd)
		batch = append(batch, span{i, end})
		i = end
		if len(batch) == batchPieces || end-batch[0].i >= MaxPieceRunes {
			if err = ctx.Err(); err != nil {
				break
			}
			batches <- batch
			batch = make([]span, 0, batchPieces)
		}
	}
	if err == nil && len(batch) > 0 {
		batches <- batch
	}
	close(batches)
	wg.Wait()
	if err != nil {
		return int(total.Load()), err
	}
	return int(total.Load()), ctx.Err()
}

func (f *O200k) pieceTokens(p []byte) int {
	if _, ok := f.ranks[string(p)]; ok {
		return 1
	}
	if len(p) == 1 {
		return 1
	}
	if len(p) <= pieceDirectMax {
		// A short merge costs less than the cache's lock and its churn
		// (random text such as base64 never repeats a piece).
		return bpeCountDirect(p, f.ranks)
	}
	if len(p) > pieceCacheLongest {
		return bpeCount(p, f.ranks) // long runs (base64, minified code) rarely repeat
	}
	if n, ok := f.cache.get(p); ok {
		return n
	}
	n := bpeCount(p, f.ranks)
	f.cache.put(string(p), n)
	return n
}

// bpeCount returns the number of tokens byte-pair merging gives piece
// (tiktoken's merge: repeatedly merge the adjacent pair of lowest rank, the
// leftmost on a tie). Short pieces use the direct quadratic merge, which is
// fastest there; long ones (a run of base64 or minified code without
// spaces) a heap of candidate pairs over a linked list, O(n log n), so a
// 32 MiB run is counted in seconds, not hours.
func bpeCount(piece []byte, ranks map[string]int) int {
	if len(piece) > bpeHeapMin {
		return bpeCountHeap(piece, ranks)
	}
	return bpeCountDirect(piece, ranks)
}

// bpeCountDirect is tiktoken's quadratic merge.
func bpeCountDirect(piece []byte, ranks map[string]int) int {
	type part struct{ start, rank int }
	var buf [pieceDirectMax * 8]part
	var parts []part
	if len(piece) < len(buf) {
		parts = buf[:len(piece)+1]
	} else {
		parts = make([]part, len(piece)+1)
	}
	for i := range parts {
		parts[i] = part{i, math.MaxInt}
	}
	rank := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := ranks[string(piece[parts[i].start:parts[i+skip+2].start])]; ok {
				return r
			}
		}
		return math.MaxInt
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rank(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIdx := math.MaxInt, -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < minRank {
				minRank, minIdx = parts[i].rank, i
			}
		}
		if minIdx < 0 {
			break
		}
		i := minIdx
		parts[i].rank = rank(i, 1)
		if i > 0 {
			parts[i-1].rank = rank(i-1, 1)
		}
		parts = append(parts[:i+1], parts[i+2:]...)
	}
	return len(parts) - 1
}

// pieceDirectMax is the piece length up to which pieceTokens merges
// without the cache.
const pieceDirectMax = 8

// bpeHeapMin is the piece length above which bpeCount uses the heap.
const bpeHeapMin = 256

// bpeCountHeap is bpeCount in O(n log n): the parts are a doubly linked
// list of byte ranges; a min-heap holds every adjacent pair that has a rank,
// ordered by (rank, start), with a version per part so that pairs made
// stale by a merge are skipped when popped.
func bpeCountHeap(piece []byte, ranks map[string]int) int {
	n := len(piece)
	next := make([]int32, n) // next part's start, n at the end
	prev := make([]int32, n) // previous part's start, -1 at the start
	ver := make([]uint32, n) // bumped when the part at i changes or goes
	for i := 0; i < n; i++ {
		next[i] = int32(i + 1)
		prev[i] = int32(i - 1)
	}
	h := make(pairHeap, 0, n)
	push := func(i int) {
		j := int(next[i])
		if j >= n {
			return
		}
		k := int(next[j])
		if r, ok := ranks[string(piece[i:k])]; ok {
			h = append(h, pairItem{rank: int32(r), start: int32(i), vi: ver[i], vj: ver[j]})
			h.up(len(h) - 1)
		}
	}
	for i := 0; i < n-1; i++ {
		push(i)
	}
	parts := n
	for len(h) > 0 {
		it := h.pop()
		i := int(it.start)
		if ver[i] != it.vi {
			continue
		}
		j := int(next[i])
		if j >= n || ver[j] != it.vj {
			continue
		}
		// Merge j into i.
		k := next[j]
		next[i] = k
		if int(k) < n {
			prev[k] = int32(i)
		}
		ver[i]++
		ver[j]++
		parts--
		if p := prev[i]; p >= 0 {
			push(int(p)) // its old pair with i is stale (ver[i] moved)
		}
		push(i)
	}
	return parts
}

type pairItem struct {
	rank, start int32
	vi, vj      uint32
}

// pairHeap is a min-heap of pairs by (rank, start).
type pairHeap []pairItem

func (h pairHeap) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].start < h[b].start
}

func (h pairHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (h *pairHeap) pop() pairItem {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	old = old[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(old) {
			break
		}
		m := l
		if r := l + 1; r < len(old) && old.less(r, l) {
			m = r
		}
		if !old.less(m, i) {
			break
		}
		old[i], old[m] = old[m], old[i]
		i = m
	}
	*h = old
	return top
}

func isUpperish(c rune) bool { // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	if c < utf8.RuneSelf {
		return 'A' <= c && c <= 'Z'
	}
	return unicode.In(c, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

func isLowerish(c rune) bool { // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	if c < utf8.RuneSelf {
		return 'a' <= c && c <= 'z'
	}
	return unicode.In(c, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

func isLetter(c rune) bool {
	if c < utf8.RuneSelf {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	return unicode.IsLetter(c)
}

func isNumber(c rune) bool {
	if c < utf8.RuneSelf {
		return '0' <= c && c <= '9'
	}
	return unicode.IsNumber(c)
}

func isSpace(c rune) bool {
	if c < utf8.RuneSelf {
		return c == ' ' || '\t' <= c && c <= '\r'
	}
	return unicode.IsSpace(c)
}

// isPrefix is [^\r\n\p{L}\p{N}].
func isPrefix(c rune) bool { return c != '\r' && c != '\n' && !isLetter(c) && !isNumber(c) }

// isPunct is [^\s\p{L}\p{N}].
func isPunct(c rune) bool { return !isSpace(c) && !isLetter(c) && !isNumber(c) }

// contraction returns the length of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or 0.
func contraction(r []rune, i int) int {
	if i >= len(r) || r[i] != '\'' || i+1 >= len(r) {
		return 0
	}
	c := unicode.ToLower(r[i+1])
	switch c {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v', 'l':
		if i+2 < len(r) {
			want := map[rune]rune{'r': 'e', 'v': 'e', 'l': 'l'}[c]
			if unicode.ToLower(r[i+2]) == want {
				return 3
			}
		}
	}
	return 0
}

// matchO200k returns the end of the o200k pattern's match at i.
func matchO200k(r []rune, i int) int {
	n := len(r)
	c := r[i]
	// Alternatives 1 and 2 (letters, with an optional prefix).
	starts := [2]int{i, -1}
	if isPrefix(c) {
		starts = [2]int{i + 1, i}
	}
	for _, p := range starts {
		if p < 0 || p >= n {
			continue
		}
		k := p
		for k < n && isUpperish(r[k]) {
			k++
		}
		for u := k; u >= p; u-- {
			if u < n && isLowerish(r[u]) {
				l := u + 1
				for l < n && isLowerish(r[l]) {
					l++
				}
				return l + contraction(r, l)
			}
		}
	}
	for _, p := range starts {
		if p < 0 || p >= n {
			continue
		}
		k := p
		for k < n && isUpperish(r[k]) {
			k++
		}
		if k > p {
			for k < n && isLowerish(r[k]) {
				k++
			}
			return k + contraction(r, k)
		}
	}
	// 3: numbers, one to three.
	if isNumber(c) {
		e := i + 1
		for e < n && e < i+3 && isNumber(r[e]) {
			e++
		}
		return e
	}
	// 4: punctuation with an optional leading space.
	p := -1
	if c == ' ' && i+1 < n && isPunct(r[i+1]) {
		p = i + 1
	} else if isPunct(c) {
		p = i
	}
	if p >= 0 {
		e := p + 1
		for e < n && isPunct(r[e]) {
			e++
		}
		for e < n && (r[e] == '\r' || r[e] == '\n' || r[e] == '/') {
			e++
		}
		return e
	}
	// 5-7: whitespace.
	w := i
	lastNL := -1
	for w < n && isSpace(r[w]) {
		if r[w] == '\r' || r[w] == '\n' {
			lastNL = w
		}
		w++
	}
	if w == i {
		return i + 1
	}
	if lastNL >= 0 {
		return lastNL + 1
	}
	if w == n {
		return n
	}
	if w-1 > i {
		return w - 1
	}
	return w
}

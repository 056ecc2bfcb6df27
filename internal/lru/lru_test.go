package lru

import (
	"fmt"
	"sync"
	"testing"
)

func strCost(k string, v int) int { return len(k) + 8 }

// TestBoundedInBytes: however much is added, the cache holds at most its
// budget, and what it holds is what was added last.
func TestBoundedInBytes(t *testing.T) {
	c := New[string, int](1000, 1, strCost)
	for i := range 10_000 {
		c.Add(fmt.Sprintf("key-%05d", i), i) // 9+8 = 17 bytes each
		if b := c.Bytes(); b > 1000 {
			t.Fatalf("after %d adds the cache holds %d bytes (budget 1000)", i+1, b)
		}
	}
	if n := c.Len(); n != 1000/17 {
		t.Fatalf("%d entries kept, want %d (the budget over 17 bytes)", n, 1000/17)
	}
	// The newest are kept, the oldest gone.
	if v, ok := c.Get("key-09999"); !ok || v != 9999 {
		t.Fatalf("the last key added: %v %v", v, ok)
	}
	if _, ok := c.Get("key-00000"); ok {
		t.Fatal("the first key added is still cached")
	}
}

// TestLeastRecentlyUsedGoesFirst: a key read since is kept over one not.
func TestLeastRecentlyUsedGoesFirst(t *testing.T) {
	c := New[string, int](3*(1+8), 1, strCost)
	c.Add("a", 1)
	c.Add("b", 2)
	c.Add("c", 3)
	c.Get("a") // b is now the least recently used
	c.Add("d", 4)
	if _, ok := c.Get("b"); ok {
		t.Fatal("b, the least recently used, was kept")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := c.Get(k); !ok {
			t.Fatalf("%s was evicted", k)
		}
	}
}

// TestReplaceAccounting: replacing a key's value counts the new cost
// only, and an entry too big for a shard is not kept (nor its old value).
func TestReplaceAccounting(t *testing.T) {
	cost := func(k string, v string) int { return len(k) + len(v) }
	c := New[string, string](100, 1, cost)
	c.Add("k", "0123456789")
	c.Add("k", "01234")
	if b := c.Bytes(); b != 6 {
		t.Fatalf("after a replace the cache counts %d bytes, want 6", b)
	}
	c.Add("k", string(make([]byte, 200)))
	if _, ok := c.Get("k"); ok {
		t.Fatal("an entry over the budget was kept, or the older value outlived it")
	}
	if b, n := c.Bytes(), c.Len(); b != 0 || n != 0 {
		t.Fatalf("after an oversized add: %d bytes, %d entries, want none", b, n)
	}
	c.Add("x", "y")
	c.Purge()
	if b, n := c.Bytes(), c.Len(); b != 0 || n != 0 {
		t.Fatalf("after Purge: %d bytes, %d entries", b, n)
	}
}

// TestShardsShareTheBudget: with shards, the whole cache stays within
// its budget too.
func TestShardsShareTheBudget(t *testing.T) {
	c := New[int, int](16*100, 16, func(int, int) int { return 10 })
	for i := range 100_000 {
		c.Add(i, i)
	}
	if b := c.Bytes(); b > 1600 || b < 800 {
		t.Fatalf("16 shards of 100 bytes hold %d bytes", b)
	}
}

// TestConcurrent runs readers and writers on every shard at once (run
// with -race).
func TestConcurrent(t *testing.T) {
	c := New[string, int](4096, 8, strCost)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				k := fmt.Sprint(g*7+i%300, "x")
				if v, ok := c.Get(k); ok && v != len(k) {
					t.Errorf("Get(%q) = %d, want %d", k, v, len(k))
					return
				}
				c.Add(k, len(k))
				if i%1000 == 0 {
					c.Purge()
				}
			}
		}()
	}
	wg.Wait()
	if b := c.Bytes(); b > 4096 {
		t.Fatalf("%d bytes held (budget 4096)", b)
	}
}

func BenchmarkGetHit(b *testing.B) {
	c := New[string, int](1<<20, 16, strCost)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("piece-of-text-%d", i)
		c.Add(keys[i], i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.Get(keys[i%len(keys)])
		i++
	}
}

func BenchmarkAddEvict(b *testing.B) {
	c := New[int, int](1<<12, 16, func(int, int) int { return 64 })
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.Add(i, i)
		i++
	}
}

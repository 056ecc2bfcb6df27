package memstore

import "hash/maphash"

// node is a node of a persistent treap ordered by key. Nodes are never
// changed once a tree holding them is published: a write copies the path
// from the root to the node it changes, so an old root stays a consistent
// snapshot for as long as someone holds it.
type node struct {
	key         string
	val         any
	prio        uint64
	left, right *node
}

var prioSeed = maphash.MakeSeed()

func priority(k string) uint64 { return maphash.String(prioSeed, k) }

// get returns the value of k.
func get(n *node, k string) (any, bool) {
	for n != nil {
		switch {
		case k < n.key:
			n = n.left
		case k > n.key:
			n = n.right
		default:
			return n.val, true
		}
	}
	return nil, false
}

// insert returns a tree with k set to v; the returned root is always a new
// node, so a caller may relink it.
func insert(n *node, k string, v any, p uint64) *node {
	if n == nil {
		return &node{key: k, val: v, prio: p}
	}
	c := *n
	switch {
	case k < n.key:
		c.left = insert(n.left, k, v, p)
		if c.left.prio > c.prio { // rotate right; both nodes are new
			l := c.left
			c.left = l.right
			l.right = &c
			return l
		}
	case k > n.key:
		c.right = insert(n.right, k, v, p)
		if c.right.prio > c.prio { // rotate left
			r := c.right
			c.right = r.left
			r.left = &c
			return r
		}
	default:
		c.val = v
	}
	return &c
}

// remove returns a tree without k (n itself when k is absent).
func remove(n *node, k string) *node {
	if n == nil {
		return nil
	}
	switch {
	case k < n.key:
		l := remove(n.left, k)
		if l == n.left {
			return n
		}
		c := *n
		c.left = l
		return &c
	case k > n.key:
		r := remove(n.right, k)
		if r == n.right {
			return n
		}
		c := *n
		c.right = r
		return &c
	}
	return merge(n.left, n.right)
}

// merge joins two trees whose keys are all of a before all of b.
func merge(a, b *node) *node {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		c := *a
		c.right = merge(a.right, b)
		return &c
	default:
		c := *b
		c.left = merge(a, b.left)
		return &c
	}
}

// walk calls fn on every node with lo <= key < hi, in key order or in
// reverse, until fn returns false; it reports whether it went to the end.
func walk(n *node, lo, hi string, reverse bool, fn func(*node) bool) bool {
	if n == nil {
		return true
	}
	ge, lt := n.key >= lo, n.key < hi
	if !reverse {
		if ge && !walk(n.left, lo, hi, false, fn) {
			return false
		}
		if ge && lt && !fn(n) {
			return false
		}
		return !lt || walk(n.right, lo, hi, false, fn)
	}
	if lt && !walk(n.right, lo, hi, true, fn) {
		return false
	}
	if ge && lt && !fn(n) {
		return false
	}
	return !ge || walk(n.left, lo, hi, true, fn)
}

// first returns the node of the smallest key with lo <= key < hi.
func first(n *node, lo, hi string) *node {
	var best *node
	for n != nil {
		if n.key >= lo {
			best = n
			n = n.left
		} else {
			n = n.right
		}
	}
	if best == nil || best.key >= hi {
		return nil
	}
	return best
}

// prefixEnd returns the smallest key after every key starting with p (p
// does not start with 0xff).
func prefixEnd(p string) string {
	b := []byte(p)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	b[len(b)-1]++
	return string(b)
}

package tokens

// Byte-pair merging, as cl100k_base does it: start from a piece's bytes,
// and while two neighbouring parts together are a token, merge the pair
// whose token has the lowest rank (the leftmost of equals). The count is
// the number of parts left. Every byte is a token, so every part is one.

// noRank marks a pair of parts that is no token.
const noRank = 1<<32 - 1

// scanLimit is the piece length below which a linear scan for the lowest
// pair beats the heap: most pieces are words, a few bytes long.
const scanLimit = 96

// parts counts the tokens of piece, which is no token itself (2 bytes or
// more).
func (t *table) parts(piece []byte) int {
	if len(piece) < scanLimit {
		return t.partsScan(piece)
	}
	return t.partsHeap(piece)
}

// pairRank is the rank of piece[start:end], or noRank.
func (t *table) pairRank(piece []byte, start, end int32) uint32 {
	if r, ok := t.rank(piece[start:end]); ok {
		return uint32(r)
	}
	return noRank
}

// partsScan finds the lowest pair by scanning all of them: O(n²) for a
// piece of n bytes, without allocating.
func (t *table) partsScan(piece []byte) int {
	// start[i] is where part i starts; rank[i] the rank of parts i and
	// i+1 together. start[n] is the piece's end.
	var startBuf [scanLimit + 1]int32
	var rankBuf [scanLimit]uint32
	n := len(piece)
	start, rank := startBuf[:n+1], rankBuf[:n]
	for i := range start {
		start[i] = int32(i)
	}
	for i := range n - 1 {
		rank[i] = t.pairRank(piece, start[i], start[i+2])
	}
	rank[n-1] = noRank
	for n > 1 {
		low := 0
		for i := 1; i < n-1; i++ {
			if rank[i] < rank[low] {
				low = i
			}
		}
		if rank[low] == noRank {
			break
		}
		// Merge parts low and low+1: drop where low+1 started.
		copy(start[low+1:], start[low+2:n+1])
		copy(rank[low+1:], rank[low+2:n])
		n--
		start, rank = start[:n+1], rank[:n]
		rank[low] = noRank
		if low+2 <= n {
			rank[low] = t.pairRank(piece, start[low], start[low+2])
		}
		if low > 0 {
			rank[low-1] = t.pairRank(piece, start[low-1], start[low+1])
		}
	}
	return n
}

// partsHeap does the same in O(n log n) for long pieces (a run of
// punctuation, a long word in another script): the parts are a linked
// list, and the pairs that are tokens wait in a heap by rank, then
// position.
func (t *table) partsHeap(piece []byte) int {
	n := int32(len(piece))
	// next[i] is where the part starting at i ends (-1: i starts no part
	// any more); prev[i] where the part before it starts; rank[i] the rank
	// of the part at i with the next.
	next := make([]int32, n)
	prev := make([]int32, n)
	rank := make([]uint32, n)
	for i := range n {
		next[i], prev[i] = i+1, i-1
	}
	pairAt := func(i int32) uint32 {
		j := next[i]
		if j >= n {
			return noRank
		}
		return t.pairRank(piece, i, next[j])
	}
	h := make(pairHeap, 0, n)
	for i := range n {
		if rank[i] = pairAt(i); rank[i] != noRank {
			h = append(h, pair{rank[i], i})
		}
	}
	h.init()
	count := int(n)
	for len(h) > 0 {
		p := h.pop()
		i := p.at
		if next[i] < 0 || rank[i] != p.rank {
			continue // stale: the part at i was merged or grew since
		}
		j := next[i]
		next[i] = next[j]
		next[j], rank[j] = -1, noRank
		if next[i] < n {
			prev[next[i]] = i
		}
		count--
		for _, k := range [2]int32{i, prev[i]} {
			if k < 0 {
				continue
			}
			if rank[k] = pairAt(k); rank[k] != noRank {
				h.push(pair{rank[k], k})
			}
		}
	}
	return count
}

// pair is two neighbouring parts that together are a token: its rank,
// and where the first part starts.
type pair struct {
	rank uint32
	at   int32
}

// pairHeap is a min-heap of pairs by rank, then position (the leftmost of
// equal ranks merges first). Typed, so pushing does not allocate.
type pairHeap []pair

func (h pairHeap) less(a, b int) bool {
	return h[a].rank < h[b].rank || h[a].rank == h[b].rank && h[a].at < h[b].at
}

func (h pairHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *pairHeap) push(p pair) {
	*h = append(*h, p)
	for i := len(*h) - 1; i > 0; {
		up := (i - 1) / 2
		if !h.less(i, up) {
			break
		}
		(*h)[i], (*h)[up] = (*h)[up], (*h)[i]
		i = up
	}
}

func (h *pairHeap) pop() pair {
	top := (*h)[0]
	last := len(*h) - 1
	(*h)[0] = (*h)[last]
	*h = (*h)[:last]
	h.down(0)
	return top
}

func (h pairHeap) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h.less(c+1, c) {
			c++
		}
		if !h.less(c, i) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

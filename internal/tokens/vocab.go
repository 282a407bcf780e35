package tokens

import (
	_ "embed"
	"hash/maphash"
)

// cl100k holds cl100k_base's tokens in rank order (ranks are dense, from
// 0): the length of each, one byte, then their bytes. 744 KB in the
// binary, where tiktoken-go's vocabulary, a Go map literal, took about
// 3.5 MB, and 6.8 MB of memory once built. vocabgen writes it from that
// library's vocabulary, which the tests compare it with.
//
//go:generate go run ./vocabgen
//go:embed cl100k_base.tokens
var cl100k string

const (
	ranks = 100256 // cl100k_base's ordinary tokens

	// A slot of the table is a token's rank+1 (0: empty) in its low
	// rankBits and the top bits of its hash above them.
	rankBits = 17
	tagBits  = 32 - rankBits

	tableBits = 17 // 131,072 slots of 4 bytes for 100,256 tokens: 512 KiB
	tableMask = 1<<tableBits - 1

	// Where every stride-th token's bytes start is kept; the others' are
	// found from there by adding lengths.
	strideBits = 5
)

// table finds a token's rank from its bytes: an open-addressing hash
// (linear probing) of ranks, built at first use in a few milliseconds, and
// where the tokens' bytes start in cl100k, every 32nd kept (13 KB).
type table struct {
	seed   maphash.Seed
	slots  []uint32
	starts []uint32
}

func newTable() *table {
	t := &table{
		seed:   maphash.MakeSeed(),
		slots:  make([]uint32, 1<<tableBits),
		starts: make([]uint32, ranks>>strideBits+1),
	}
	off := ranks
	for r := range ranks {
		if r&(1<<strideBits-1) == 0 {
			t.starts[r>>strideBits] = uint32(off)
		}
		n := int(cl100k[r])
		h := maphash.String(t.seed, cl100k[off:off+n])
		i := h & tableMask
		for t.slots[i] != 0 {
			i = (i + 1) & tableMask
		}
		t.slots[i] = uint32(r+1) | uint32(h>>(64-tagBits))<<rankBits
		off += n
	}
	return t
}

// token returns the bytes of the token of rank r.
func (t *table) token(r int) string {
	off := int(t.starts[r>>strideBits])
	for q := r &^ (1<<strideBits - 1); q < r; q++ {
		off += int(cl100k[q])
	}
	return cl100k[off : off+int(cl100k[r])]
}

// rank returns b's rank, or false if b is no token.
func (t *table) rank(b []byte) (int, bool) {
	h := maphash.Bytes(t.seed, b)
	tag := uint32(h >> (64 - tagBits))
	for i := h & tableMask; ; i = (i + 1) & tableMask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if s>>rankBits != tag {
			continue
		}
		r := int(s&(1<<rankBits-1)) - 1
		if tok := t.token(r); len(tok) == len(b) && tok == string(b) {
			return r, true
		}
	}
}

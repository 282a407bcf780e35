package history

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"github.com/dreamgate/dreamgate/audience"
)

// The index's table lists the unread entries from its Offset to its End
// (cursor, place in the file, session key) and the sources noted. It is
// kept grouped by session and decoded lazily: a new process that renders
// one session's Recent history decodes that session's entries only, so its
// start costs what that session holds, not what the whole backlog holds.
// Anything that needs the entries in file order (Since, a new index)
// decodes it all once (materialize).
//
// Layout, all numbers unsigned varints: the session keys (count, then
// length and bytes of each); the sources (count, then per source its key,
// cursor, from and to); the memory scopes (count, then length and bytes of
// each name, "" for the default scope); the scope runs (the run section's
// length, then per run of consecutive entries of one scope, in file order,
// its scope's number and its length: a history of one scope is one run);
// the entries' count; the order section's length and the order section,
// each entry's key number in file order; then per key, its entries' count,
// its group's length and the group: per entry its cursor (as a step from
// the group's previous one, absolute for the first), its gap from the
// group's previous line end (from Offset for the first), and its line's
// length.

// errTable: a table that passed its checksum does not decode; only a bug
// of the writer can cause it, and the file is then read whole.
var errTable = errors.New("history index table does not decode")

// lazyTable is a table not decoded yet.
type lazyTable struct {
	runs   []byte   // the scope runs
	scopes int      // the scope names' count
	order  []byte   // the order section
	groups [][]byte // each key's group, by key number
	counts []int    // each key's entry count
	n      int      // entries
	offset int64    // the index's Offset: the first entry's line start
	end    int64    // the index's End: no line reaches past it
	last   meta     // the last entry, from the header
}

// encodeTable writes the table of metas (in file order, all after offset,
// cursors rising) whose key numbers index keys and scope numbers scopes.
func encodeTable(keys, scopes []string, metas []meta, ranges map[string]rangeMark, offset int64) []byte {
	type groupState struct {
		b      []byte
		cursor int
		end    int64
		n      int
	}
	groups := make([]groupState, len(keys))
	order := make([]byte, 0, len(metas))
	var runs []byte
	run, runLen := int32(-1), 0
	for _, m := range metas {
		if m.scope != run {
			if runLen > 0 {
				runs = binary.AppendUvarint(runs, uint64(run))
				runs = binary.AppendUvarint(runs, uint64(runLen))
			}
			run, runLen = m.scope, 0
		}
		runLen++
		order = binary.AppendUvarint(order, uint64(m.key))
		g := &groups[m.key]
		step, gap := m.cursor-g.cursor, m.off-g.end
		if g.n == 0 {
			step, gap = m.cursor, m.off-offset
		}
		g.b = binary.AppendUvarint(g.b, uint64(step))
		g.b = binary.AppendUvarint(g.b, uint64(gap))
		g.b = binary.AppendUvarint(g.b, uint64(m.n))
		g.cursor, g.end, g.n = m.cursor, m.off+m.n, g.n+1
	}
	if runLen > 0 {
		runs = binary.AppendUvarint(runs, uint64(run))
		runs = binary.AppendUvarint(runs, uint64(runLen))
	}
	b := make([]byte, 0, 64+len(runs)+len(order)*8)
	str := func(v string) {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		str(k)
	}
	b = binary.AppendUvarint(b, uint64(len(ranges)))
	for k, r := range ranges {
		str(k)
		b = binary.AppendUvarint(b, uint64(r.cursor))
		b = binary.AppendUvarint(b, uint64(r.from))
		b = binary.AppendUvarint(b, uint64(r.to))
	}
	b = binary.AppendUvarint(b, uint64(len(scopes)))
	for _, sc := range scopes {
		str(sc)
	}
	b = binary.AppendUvarint(b, uint64(len(runs)))
	b = append(b, runs...)
	b = binary.AppendUvarint(b, uint64(len(metas)))
	b = binary.AppendUvarint(b, uint64(len(order)))
	b = append(b, order...)
	for _, g := range groups {
		b = binary.AppendUvarint(b, uint64(g.n))
		b = binary.AppendUvarint(b, uint64(len(g.b)))
		b = append(b, g.b...)
	}
	return b
}

// reader consumes a table's varints; any misfit sets bad.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) num() int {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > math.MaxInt32 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *reader) bytes(n int) []byte {
	if r.bad || n > len(r.b) {
		r.bad = true
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) str() string { return string(r.bytes(r.num())) }

// parsedTable is what parseTable reads at once: the key and scope tables,
// the sources, and the rest left lazy.
type parsedTable struct {
	keys, scopes *keyTable
	ranges       map[string]rangeMark
	lazy         *lazyTable
}

// parseTable reads a table's keys, sources and scope names, and finds its
// scope runs and groups without decoding them. A scope name
// audience.ParseScope refuses makes the whole table unusable.
func parseTable(b []byte, offset, end int64, last meta) (parsedTable, bool) {
	r := &reader{b: b}
	nkeys := r.num()
	if r.bad || nkeys > len(r.b) {
		return parsedTable{}, false
	}
	keys := newKeyTable()
	for i := range nkeys {
		if keys.id(r.str()); r.bad || len(keys.names) != i+1 {
			return parsedTable{}, false // a key twice
		}
	}
	nranges := r.num()
	if r.bad || nranges > len(r.b) {
		return parsedTable{}, false
	}
	ranges := make(map[string]rangeMark, nranges)
	for range nranges {
		k := r.str()
		ranges[k] = rangeMark{cursor: r.num(), from: r.num(), to: r.num()}
	}
	nscopes := r.num()
	if r.bad || nscopes > len(r.b) {
		return parsedTable{}, false
	}
	// The default scope alone needs no table (cache.scopeID).
	var scopes *keyTable
	if nscopes > 1 {
		scopes = newKeyTable()
	}
	for i := range nscopes {
		name := r.str()
		if _, err := audience.ParseScope(name); err != nil || (i == 0) != (name == "") {
			return parsedTable{}, false // the default scope is number 0
		}
		if scopes != nil {
			if scopes.id(name); r.bad || len(scopes.names) != i+1 {
				return parsedTable{}, false // a name twice
			}
		}
	}
	runs := r.bytes(r.num())
	t := &lazyTable{runs: runs, scopes: nscopes, n: r.num(), offset: offset, end: end, last: last}
	t.order = r.bytes(r.num())
	t.groups, t.counts = make([][]byte, nkeys), make([]int, nkeys)
	total := 0
	for k := range nkeys {
		t.counts[k] = r.num()
		t.groups[k] = r.bytes(r.num())
		total += t.counts[k]
	}
	if r.bad || len(r.b) != 0 || t.n == 0 || total != t.n {
		return parsedTable{}, false
	}
	return parsedTable{keys: keys, scopes: scopes, ranges: ranges, lazy: t}, true
}

// group decodes the entries of the session numbered key, in file order.
func (t *lazyTable) group(key int32) ([]meta, error) {
	if int(key) >= len(t.groups) {
		return nil, nil
	}
	r := &reader{b: t.groups[key]}
	out := make([]meta, 0, t.counts[key])
	cursor, end := 0, t.offset
	for i := range t.counts[key] {
		step, gap, n := r.num(), int64(r.num()), int64(r.num())
		if r.bad || n <= 0 || (i > 0 && step == 0) {
			return nil, errTable
		}
		cursor += step
		m := meta{cursor: cursor, off: end + gap, n: n, key: key, scope: -1}
		if end = m.off + m.n; end > t.end {
			return nil, errTable
		}
		out = append(out, m)
	}
	if len(r.b) != 0 {
		return nil, errTable
	}
	return out, nil
}

// all decodes every entry, in file order, and checks that they are what
// the index said: the first at offset, lines apart, cursors rising, the
// last the header's.
func (t *lazyTable) all() ([]meta, error) {
	groups := make([][]meta, len(t.groups))
	for k := range t.groups {
		g, err := t.group(int32(k))
		if err != nil {
			return nil, err
		}
		groups[k] = g
	}
	out := make([]meta, 0, t.n)
	r := &reader{b: t.order}
	next := make([]int, len(groups))
	end := t.offset
	for range t.n {
		k := r.num()
		if r.bad || k >= len(groups) || next[k] >= len(groups[k]) {
			return nil, errTable
		}
		m := groups[k][next[k]]
		next[k]++
		if m.off < end || (len(out) == 0 && m.off != t.offset) || (len(out) > 0 && m.cursor <= out[len(out)-1].cursor) {
			return nil, errTable
		}
		end = m.off + m.n
		out = append(out, m)
	}
	if l := out[len(out)-1]; len(r.b) != 0 || l.cursor != t.last.cursor || l.off != t.last.off || l.n != t.last.n {
		return nil, errTable
	}
	if err := t.setScopes(out); err != nil {
		return nil, err
	}
	return out, nil
}

// setScopes numbers the scope of every entry of out (the whole table, in
// file order) from the scope runs.
func (t *lazyTable) setScopes(out []meta) error {
	r := &reader{b: t.runs}
	i := 0
	for len(r.b) > 0 {
		scope, n := r.num(), r.num()
		if r.bad || scope >= t.scopes || n <= 0 || n > len(out)-i {
			return errTable
		}
		for j := i; j < i+n; j++ {
			out[j].scope = int32(scope)
		}
		i += n
	}
	if i != len(out) {
		return errTable
	}
	return nil
}

// materialize decodes a lazy table into the cache's metas, ahead of the
// entries read since, dropping those Dream has read meanwhile. On error
// the cache is left as it was.
func (c *cache) materialize() error {
	t := c.lazy
	if t == nil {
		return nil
	}
	head, err := t.all()
	if err != nil {
		return err
	}
	c.lazy = nil
	kept := head[:0]
	for _, m := range head {
		if m.cursor <= c.floor {
			c.belowMax = max(c.belowMax, m.cursor)
			continue
		}
		kept = append(kept, m)
	}
	tail := c.metas
	c.metas = slices.Grow(kept, len(tail))
	c.metas = append(c.metas, tail...)
	counts := make([]int, len(c.keys.names))
	for _, m := range c.metas {
		counts[m.key]++
	}
	all := make([]int, 0, len(c.metas))
	c.sessions = make([][]int, len(counts))
	for k, n := range counts {
		c.sessions[k] = all[len(all) : len(all) : len(all)+n]
		all = all[:len(all)+n]
	}
	for i, m := range c.metas {
		c.sessions[m.key] = append(c.sessions[m.key], i)
	}
	return nil
}

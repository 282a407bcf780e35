package gitstore

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// memVersions are later versions held in memory, counting those read.
type memVersions struct {
	vs    []fileLines
	reads int
}

func (m *memVersions) Len() int { return len(m.vs) }

func (m *memVersions) At(i int) (FileText, bool, error) {
	m.reads++
	return FileText{Data: m.vs[i].bytes(), Exists: m.vs[i].exists}, true, nil
}

// small is one change of a few lines: a line appended, inserted, removed
// or rewritten (new lines are fresh: no line ever comes back).
func (g *history) small(ls []string) []string {
	out := slices.Clone(ls)
	for range 1 + g.rng.IntN(2) {
		i := g.rng.IntN(len(out) + 1)
		switch k := g.rng.IntN(4); {
		case k == 0 || len(out) == 0 || i == len(out):
			out = slices.Insert(out, i, g.fresh())
		case k == 1:
			out = slices.Delete(out, i, i+1)
		default:
			out[i] = g.fresh()
		}
	}
	return out
}

// Reading only the versions it must, the undo comes to what following
// every later version one by one comes to — the same file either way,
// the same conflicts, the same lines shown — while reading fewer of them:
// in small files changed all over (where most changes come near the
// commit's lines), and in memory files as they grow (a commit of a few
// lines, then mostly lines appended, a few rewritten), where it reads a
// small part of the versions.
func TestRevertThroughIsRevertLines(t *testing.T) {
	g := &history{rng: rand.New(rand.NewPCG(28, 4))}
	f := func(ls []string) fileLines { return fileLines{lines: ls, eol: true, exists: true} }
	for _, kind := range []string{"small files changed all over", "memory files growing"} {
		read, versions := 0, 0
		for i := range 1500 {
			grow := kind == "memory files growing"
			var base []string
			for range 3 + g.rng.IntN(40) + g.rng.IntN(200)*b2i(grow) {
				base = append(base, g.fresh())
			}
			target, _ := g.edit(base, nil)
			if grow {
				target = g.small(base)
			}
			var later []fileLines
			cur := target
			for range g.rng.IntN(60) {
				if grow && g.rng.IntN(4) > 0 {
					cur = append(slices.Clone(cur), g.fresh())
				} else {
					cur = g.small(cur)
				}
				later = append(later, f(cur))
			}
			current := f(g.small(cur))
			want := revertLines(f(base), f(target), append(slices.Clone(later), current)...)
			m := &memVersions{vs: later}
			got, err := revertThrough(f(base), f(target), m, current)
			if err != nil {
				t.Fatal(err)
			}
			for _, res := range []Resolution{KeepLater, UndoAll} {
				if w, g := want.result(res), got.result(res); !reflect.DeepEqual(w, g) {
					t.Fatalf("%s, case %d, resolution %d: read lazily %q, one by one %q", kind, i, res, g.lines, w.lines)
				}
			}
			if !reflect.DeepEqual(want.parts, got.parts) || !reflect.DeepEqual(want.touched, got.touched) {
				t.Fatalf("%s, case %d: read lazily %+v, one by one %+v", kind, i, got.parts, want.parts)
			}
			if m.reads > len(later) {
				t.Fatalf("%s, case %d: read %d of %d versions", kind, i, m.reads, len(later))
			}
			read, versions = read+m.reads, versions+len(later)
		}
		t.Logf("%s: read %d of %d later versions", kind, read, versions)
		if kind == "memory files growing" && read*4 > versions {
			t.Errorf("%s: read %d of %d later versions: the stretches untouched were not seen at once", kind, read, versions)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A stretch seen at once that a line of the commit's left and came back
// to counts it as standing, as the first look at once does: undone, no
// conflict; followed one by one, it is one.
func TestRevertThroughSeesALineThatCameBackAsStanding(t *testing.T) {
	f := func(s string) fileLines { return splitLines([]byte(s), true) }
	base, target := f("a\nb\n"), f("a\nB\n")
	later := &memVersions{vs: []fileLines{f("a\nx\n"), f("a\nB\n"), f("a\nB\nc\n")}}
	r, err := revertThrough(base, target, later, f("a\nB\nc\nd\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.result(KeepLater).bytes()); got != "a\nb\nc\nd\n" || r.conflicts() != 0 {
		t.Errorf("lazily: %q, %d conflicts", got, r.conflicts())
	}
	if later.reads != 1 {
		t.Errorf("read %d versions, want the last alone", later.reads)
	}
	one := revertLines(base, target, append(later.vs, f("a\nB\nc\nd\n"))...)
	if one.conflicts() != 1 || !strings.Contains(string(one.result(KeepLater).bytes()), "B") {
		t.Errorf("one by one: %q, %d conflicts", one.result(KeepLater).bytes(), one.conflicts())
	}
}

// BenchmarkRevertThrough is BenchmarkRevertLines read as a restore reads
// the versions: only those it must (here the last alone: no later change
// comes near the commit's lines).
func BenchmarkRevertThrough(b *testing.B) {
	base, target, later := revertBenchFiles()
	current := later[len(later)-1]
	for b.Loop() {
		m := &memVersions{vs: later[:len(later)-1]}
		r, err := revertThrough(base, target, m, current)
		if err != nil || r.conflicts() != 0 || m.reads != 1 {
			b.Fatal(err, r.conflicts(), m.reads)
		}
	}
}

package gitstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// undo runs the line-level revert on three file contents ("" with absent
// set for no file) and returns both resolutions and the conflicts.
func undo(base, target, current string) (keepLater, undoAll string, conflicts int) {
	r := revertLines(splitLines([]byte(base), true), splitLines([]byte(target), true), splitLines([]byte(current), true))
	return string(r.result(KeepLater).bytes()), string(r.result(UndoAll).bytes()), r.conflicts()
}

func TestRevertLines(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		base, target, current string
		keepLater, undoAll    string // undoAll "" means the same as keepLater
		conflicts             int
	}{
		{name: "nothing changed since",
			base: "a\nb\n", target: "a\nb\nc\n", current: "a\nb\nc\n", keepLater: "a\nb\n"},
		{name: "a later append after the commit's append",
			base: "a\n", target: "a\nb\n", current: "a\nb\nc\n", keepLater: "a\nc\n"},
		{name: "undo the later of two appends",
			base: "a\nb\n", target: "a\nb\nc\n", current: "a\nb\nc\n", keepLater: "a\nb\n"},
		{name: "a hand edit before the commit's lines",
			base: "a\nb\n", target: "a\nb\nc\n", current: "x\na\nb\nc\n", keepLater: "x\na\nb\n"},
		{name: "a line the commit removed comes back where it stood",
			base: "a\nb\nc\n", target: "a\nc\n", current: "a\nc\nd\n", keepLater: "a\nb\nc\nd\n"},
		{name: "a changed line comes back",
			base: "- office Harbour\n- tea\n", target: "- office Canal Road\n- tea\n", current: "- office Canal Road\n- tea\n- coffee\n",
			keepLater: "- office Harbour\n- tea\n- coffee\n"},
		{name: "a later change to the commit's line conflicts",
			base: "- office Harbour\n- tea\n", target: "- office Canal Road\n- tea\n", current: "- office Dock\n- tea\n",
			keepLater: "- office Dock\n- tea\n", undoAll: "- office Harbour\n- tea\n", conflicts: 1},
		{name: "a later removal of the commit's line conflicts",
			base: "a\nb\n", target: "a\nB\n", current: "a\n",
			keepLater: "a\n", undoAll: "a\nb\n", conflicts: 1},
		{name: "a removed line and a later insertion at its place: both stay",
			base: "a\nz\nb\n", target: "a\nb\n", current: "a\nw\nb\n", keepLater: "a\nz\nw\nb\n"},
		{name: "a removed line whose neighbours were both rewritten comes back between them",
			base: "a\nz\nb\nc\n", target: "a\nb\nc\n", current: "A\nB\nc\n", keepLater: "A\nz\nB\nc\n"},
		{name: "a line the commit added, removed since: nothing to choose",
			base: "a\n", target: "a\nx\ny\n", current: "a\ny\n", keepLater: "a\n"},
		{name: "a line the commit added, rewritten since, conflicts",
			base: "a\n", target: "a\nx\n", current: "a\nx2\n", keepLater: "a\nx2\n", undoAll: "a\n", conflicts: 1},
		{name: "a line inserted among the commit's lines stays",
			base: "a\n", target: "a\nx\ny\n", current: "a\nx\nw\ny\n", keepLater: "a\nw\n"},
		{name: "a later change beside the commit's lines does not conflict",
			base: "a\nb\nc\n", target: "a\nB\nc\n", current: "A\nB\nC\n", keepLater: "A\nb\nC\n"},
		{name: "two changes, one conflicting",
			base: "a\nb\nc\nd\ne\n", target: "a\nB\nc\nD\ne\n", current: "a\nB2\nc\nD\ne\n",
			keepLater: "a\nB2\nc\nd\ne\n", undoAll: "a\nb\nc\nd\ne\n", conflicts: 1},
		{name: "a file the commit created goes",
			base: "", target: "a\n", current: "a\n", keepLater: ""},
		{name: "a file the commit created keeps later lines",
			base: "", target: "a\n", current: "a\nb\n", keepLater: "b\n"},
		{name: "no final newline before the commit",
			base: "a\nb", target: "a\nb\nc\n", current: "a\nb\nc\n", keepLater: "a\nb"},
		{name: "no final newline before the commit, a line appended since",
			base: "a\nb", target: "a\nb\nc\n", current: "a\nb\nc\nd\n", keepLater: "a\nb\nd\n"},
		{name: "line endings are part of a line",
			base: "a\r\nb\r\n", target: "a\r\nb\r\nc\r\n", current: "a\r\nb\r\nc\r\nd\r\n", keepLater: "a\r\nb\r\nd\r\n"},
		{name: "duplicate lines",
			base: "x\nx\n", target: "x\nx\nx\n", current: "x\nx\nx\nx\n", keepLater: "x\nx\nx\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kl, ua, n := undo(tc.base, tc.target, tc.current)
			if tc.undoAll == "" {
				tc.undoAll = tc.keepLater
			}
			if kl != tc.keepLater || ua != tc.undoAll || n != tc.conflicts {
				t.Errorf("undo(%q, %q, %q):\nkeep later %q, want %q\nundo all   %q, want %q\nconflicts %d, want %d",
					tc.base, tc.target, tc.current, kl, tc.keepLater, ua, tc.undoAll, n, tc.conflicts)
			}
		})
	}
}

func TestRevertLinesFileExistence(t *testing.T) {
	none := fileLines{eol: true}
	file := func(s string) fileLines { return splitLines([]byte(s), true) }
	for _, tc := range []struct {
		name                  string
		base, target, current fileLines
		exists                bool
		want                  string
	}{
		{"created, undone", none, file("a\n"), file("a\n"), false, ""},
		{"created, grown since", none, file("a\n"), file("a\nb\n"), true, "b\n"},
		{"deleted, undone", file("a\n"), none, none, true, "a\n"},
		{"an empty file made a file", file(""), file("a\n"), file("a\n"), true, ""},
		{"created, deleted since", none, file("a\n"), none, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := revertLines(tc.base, tc.target, tc.current).result(KeepLater)
			if got.exists != tc.exists || string(got.bytes()) != tc.want {
				t.Errorf("exists %v %q, want %v %q", got.exists, got.bytes(), tc.exists, tc.want)
			}
		})
	}
}

// What the person is shown: the commit's lines that go, what comes back,
// and each conflict with the lines now, as the commit left them and as
// before it.
func TestRevertLinesParts(t *testing.T) {
	r := revertLines(splitLines([]byte("a\nb\nc\nd\n"), true), splitLines([]byte("a\nB\nc\nD\ne\n"), true),
		splitLines([]byte("a\nB\nc\nD2\ne\nf\n"), true))
	var got []string
	for _, p := range r.parts {
		switch p.kind {
		case partConflict:
			got = append(got, fmt.Sprintf("conflict now=%q left=%q before=%q", p.now, p.left, p.before))
		case partKept:
			got = append(got, fmt.Sprintf("kept %q", p.kept))
		default:
			got = append(got, fmt.Sprintf("undo -%q +%q", p.removed, p.restored))
		}
	}
	want := []string{
		`kept ["a"]`,
		`undo -["B"] +["b"]`,
		`kept ["c"]`,
		`conflict now=["D2" "e"] left=["D" "e"] before=["d"]`,
		`kept ["f"]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("parts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A file of distinct lines changed by a commit, then by later changes
// (one to three) that add, remove and rewrite lines: with distinct lines
// the edit scripts are exact, so what the undo must give is known line by
// line, followed change by change or at once.
func TestRevertLinesProperties(t *testing.T) {
	g := &history{rng: rand.New(rand.NewPCG(7, 28))}
	edit := g.edit
	fresh := g.fresh
	for i := range 3000 {
		var base []string
		for range g.rng.IntN(12) {
			base = append(base, fresh())
		}
		target, byCommit := edit(base, nil)
		f := func(ls []string) fileLines { return fileLines{lines: ls, eol: true, exists: true} }
		// One to three later changes, none touching the commit's lines.
		var versions []fileLines
		current := target
		for range 1 + g.rng.IntN(3) {
			current, _ = edit(current, byCommit)
			versions = append(versions, f(current))
		}
		r := revertLines(f(base), f(target), versions...)
		if one := revertLines(f(base), f(target), f(current)).result(KeepLater).lines; !slices.Equal(slices.Sorted(slices.Values(one)), slices.Sorted(slices.Values(r.result(KeepLater).lines))) {
			t.Fatalf("case %d: followed change by change %q, at once %q", i, r.result(KeepLater).lines, one)
		}
		got := r.result(KeepLater).lines
		// Undoing a commit with nothing after it gives back what was
		// before it, and undoing that undo gives back the commit.
		if back := revertLines(f(base), f(target), f(target)).result(KeepLater).lines; !slices.Equal(back, base) {
			t.Fatalf("case %d: undo with nothing since = %q, want %q", i, back, base)
		}
		if again := revertLines(f(target), f(base), f(base)).result(KeepLater).lines; !slices.Equal(again, target) {
			t.Fatalf("case %d: undo of the undo = %q, want %q", i, again, target)
		}
		// The later changes never touched the commit's lines: no conflict.
		if r.conflicts() > 0 {
			t.Fatalf("case %d: %d conflicts\nbase %q\ntarget %q\ncurrent %q", i, r.conflicts(), base, target, current)
		}
		// Then: every line standing now that the commit did not add stays,
		// in its order; the commit's lines go; the lines it removed come
		// back, in base's order.
		inTarget := set(target)
		var want []string
		for _, l := range current {
			if !byCommit[l] {
				want = append(want, l)
			}
		}
		for _, l := range base {
			if !inTarget[l] {
				want = append(want, l)
			}
		}
		slices.Sort(want)
		sorted := slices.Sorted(slices.Values(got))
		if !slices.Equal(sorted, want) {
			t.Fatalf("case %d: undo = %q\nwant the lines %q\nbase %q\ntarget %q\ncurrent %q", i, got, want, base, target, current)
		}
		if !inOrder(got, current) || !inOrder(got, base) {
			t.Fatalf("case %d: undo = %q breaks the order of\nbase %q\ncurrent %q", i, got, base, current)
		}
	}
}

// history makes random files of distinct lines and changes of them.
type history struct {
	rng  *rand.Rand
	next int
}

func (g *history) fresh() string { g.next++; return fmt.Sprintf("line %d", g.next) }

// edit removes, rewrites and inserts lines of ls (never one of frozen),
// returning the new lines and the ones it added.
func (g *history) edit(ls []string, frozen map[string]bool) (out []string, added map[string]bool) {
	added = map[string]bool{}
	for _, l := range ls {
		if g.rng.IntN(6) == 0 {
			n := g.fresh()
			out, added[n] = append(out, n), true
		}
		switch k := g.rng.IntN(8); {
		case frozen[l] || k > 1:
			out = append(out, l)
		case k == 0: // removed
		default: // rewritten
			n := g.fresh()
			out, added[n] = append(out, n), true
		}
	}
	if g.rng.IntN(2) == 0 {
		n := g.fresh()
		out, added[n] = append(out, n), true
	}
	return out, added
}

func set(ls []string) map[string]bool {
	m := map[string]bool{}
	for _, l := range ls {
		m[l] = true
	}
	return m
}

// inOrder says the lines of got that are in ref come in ref's order.
func inOrder(got, ref []string) bool {
	pos := map[string]int{}
	for i, l := range ref {
		pos[l] = i
	}
	last := -1
	for _, l := range got {
		if p, ok := pos[l]; ok {
			if p < last {
				return false
			}
			last = p
		}
	}
	return true
}

// Any three texts: no panic, and undoing a commit with nothing since gives
// back what was before it; neighbouring appends never conflict.
func FuzzRevertLines(f *testing.F) {
	f.Add("a\nb\n", "a\nb\nc\n", "a\nb\nc\nd\n")
	f.Add("a\nz\nb", "a\nb", "A\nB\r\n")
	f.Add("", "x\n", "x\n\n")
	f.Fuzz(func(t *testing.T, base, target, current string) {
		b, tg := splitLines([]byte(base), true), splitLines([]byte(target), true)
		r := revertLines(b, tg, splitLines([]byte(current), true))
		_ = r.result(KeepLater)
		_ = r.result(UndoAll)
		if got := revertLines(b, tg, tg).result(KeepLater); string(got.bytes()) != base {
			t.Fatalf("undo with nothing since = %q, want %q", got.bytes(), base)
		}
		// The commit appended target to base; a later change appended
		// current.
		if base != "" && !strings.HasSuffix(base, "\n") {
			base += "\n"
		}
		if target != "" && !strings.HasSuffix(target, "\n") {
			target += "\n"
		}
		a := splitLines([]byte(base), true)
		at := splitLines([]byte(base+target), true)
		ac := splitLines([]byte(base+target+current), true)
		r = revertLines(a, at, ac)
		if n := r.conflicts(); n > 0 {
			t.Fatalf("neighbouring appends conflict: %d", n)
		}
		if got := string(r.result(KeepLater).bytes()); got != base+current {
			t.Fatalf("undo of an append = %q, want %q", got, base+current)
		}
	})
}

// What a later change already undid is not undone twice.
func TestRevertLinesAlreadyBack(t *testing.T) {
	for _, tc := range []struct{ name, base, target, current, want string }{
		{"a removed line put back by hand", "a\nz\nb\n", "a\nb\n", "a\nz\nb\n", "a\nz\nb\n"},
		{"a changed line changed back", "a\nx\nb\n", "a\ny\nb\n", "a\nx\nb\n", "a\nx\nb\n"},
		{"a removed line put back elsewhere is not found", "a\nz\nb\n", "a\nb\n", "a\nb\nz\n", "a\nz\nb\nz\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kl, ua, n := undo(tc.base, tc.target, tc.current)
			if kl != tc.want || ua != tc.want || n != 0 {
				t.Errorf("undo = %q / %q, %d conflicts; want %q", kl, ua, n, tc.want)
			}
		})
	}
}

// Followed change by change, a line of the commit's that a later change
// removed, and a line another one appended beside it, are no conflict (at
// once they read as one line rewritten).
func TestRevertLinesFollowsEachChange(t *testing.T) {
	f := func(s string) fileLines { return splitLines([]byte(s), true) }
	base, target := f("# Memory\n"), f("# Memory\n\n- ships on Fridays\n")
	appended := f("# Memory\n\n- ships on Fridays\n- standup at 10\n")
	undone := f("# Memory\n- standup at 10\n")
	r := revertLines(base, target, appended, undone)
	if n := r.conflicts(); n != 0 || string(r.result(UndoAll).bytes()) != "# Memory\n- standup at 10\n" {
		t.Errorf("followed: %d conflicts, undo all %q", n, r.result(UndoAll).bytes())
	}
	// At once, the same two versions are a line rewritten.
	if r := revertLines(base, target, undone); r.conflicts() != 1 {
		t.Errorf("at once: %d conflicts, want the one the composite diff sees", r.conflicts())
	}
	// A line the commit changed, changed again and then back: nothing to
	// choose, nothing to do.
	r = revertLines(f("a\nx\n"), f("a\ny\n"), f("a\nz\n"), f("a\nx\n"))
	if r.conflicts() != 0 || string(r.result(KeepLater).bytes()) != "a\nx\n" {
		t.Errorf("changed back: %d conflicts, %q", r.conflicts(), r.result(KeepLater).bytes())
	}
}

// BenchmarkRevertLines undoes a change of 50 lines in a file of 10,000
// (cold memory after months), followed through 20 later versions that
// each append 10 lines and rewrite one.
func BenchmarkRevertLines(b *testing.B) {
	base, target, later := revertBenchFiles()
	for b.Loop() {
		if r := revertLines(base, target, later...); r.conflicts() != 0 {
			b.Fatal("conflicts")
		}
	}
}

// revertBenchFiles are BenchmarkRevertLines' versions: before the
// commit, as it left the file, and the 20 later ones.
func revertBenchFiles() (base, target fileLines, later []fileLines) {
	var lines []string
	for i := range 10_000 {
		lines = append(lines, fmt.Sprintf("- fact %d: something said once <!-- durable 2026-01-01 src:%d -->", i, i))
	}
	changed := slices.Clone(lines)
	for i := 0; i < 50; i++ {
		changed[i*200] = fmt.Sprintf("- fact %d, corrected <!-- durable 2026-06-01 src:%d -->", i*200, 20000+i)
	}
	f := func(ls []string) fileLines { return fileLines{lines: ls, eol: true, exists: true} }
	cur := slices.Clone(changed)
	for v := range 20 {
		cur = slices.Clone(cur)
		cur[v*400+7] += " (confirmed)"
		for j := range 10 {
			cur = append(cur, fmt.Sprintf("- later fact %d.%d", v, j))
		}
		later = append(later, f(cur))
	}
	return f(lines), f(changed), later
}

// A later change that rewrites many lines around one of the commit's
// stands in place of that one line alone: undoing the whole change puts
// back that line, not the many.
func TestRevertLinesRewriteAroundTheCommitsLine(t *testing.T) {
	f := func(s string) fileLines { return splitLines([]byte(s), true) }
	r := revertLines(f("a\nb\nc\nd\ne\n"), f("a\nb\nC\nd\ne\n"), f("a\nb2\nC2\nd2\ne\n"))
	if n := r.conflicts(); n != 1 {
		t.Fatalf("conflicts = %d, want 1", n)
	}
	if got := string(r.result(UndoAll).bytes()); got != "a\nb2\nc\nd2\ne\n" {
		t.Errorf("undo all = %q, want the commit's line alone put back", got)
	}
	if got := string(r.result(KeepLater).bytes()); got != "a\nb2\nC2\nd2\ne\n" {
		t.Errorf("keep later = %q", got)
	}
	// Many changes seen at once (past the versions followed one by one)
	// are one such rewrite.
	base, target := f("1\n2\n3\n4\n5\n6\n"), f("1\n2\nX\n4\n5\n6\n")
	r = revertLines(base, target, f("1'\n2'\nX'\n4'\n5'\n6'\n"))
	if got := string(r.result(UndoAll).bytes()); got != "1'\n2'\n3\n4'\n5'\n6'\n" {
		t.Errorf("undo all across a rewrite of every line = %q", got)
	}
}

package gitstore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

func subjects(cs []gitstore.Commit) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Subject
	}
	return out
}

// history makes: init, dream 1, manual, dream 2, revert, dream 3.
func history(t *testing.T) (*gitstore.Store, string, map[string]gitstore.Commit) {
	t.Helper()
	s, dir := openStore(t)
	cs := map[string]gitstore.Commit{}
	log, err := s.Log(1, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	cs["init"] = log[0]
	steps := []struct{ key, file, content, subject string }{
		{"dream1", "memory/MEMORY.md", "- one\n", "dream: 1 change(s) from history 1-2"},
		{"manual", "USER.md", "- Ana, Berlin\n", gitstore.ManualSubject},
		{"dream2", "memory/MEMORY.md", "- one\n- two\n", "dream: 1 change(s) from history 3-4"},
		{"revert", "memory/MEMORY.md", "- one\n", "revert: undo 00000000"},
		{"dream3", "SOUL.md", "Be brief.\n", "dream: 1 change(s) from history 5-9"},
	}
	for _, st := range steps {
		testkit.WriteFile(t, dir, st.file, st.content)
		cs[st.key] = mustCommit(t, s, st.subject)
	}
	return s, dir, cs
}

func TestLog(t *testing.T) {
	s, dir, _ := history(t)
	all := []string{
		"dream: 1 change(s) from history 5-9",
		"revert: undo 00000000",
		"dream: 1 change(s) from history 3-4",
		gitstore.ManualSubject,
		"dream: 1 change(s) from history 1-2",
		gitstore.InitSubject,
	}
	tests := []struct {
		n      int
		prefix string
		want   []string
	}{
		{0, "", all},
		{-1, "", all},
		{2, "", all[:2]},
		{100, "", all},
		{2, "dream:", []string{all[0], all[2]}}, // unrelated commits are skipped, not counted
		{0, "dream:", []string{all[0], all[2], all[4]}},
		{1, "manual:", []string{gitstore.ManualSubject}},
		{5, "nothing:", nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d %q", tt.n, tt.prefix), func(t *testing.T) {
			got, err := s.Log(tt.n, tt.prefix, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(subjects(got), tt.want) {
				t.Errorf("Log = %q, want %q", subjects(got), tt.want)
			}
		})
	}
	checkGit(t, s, dir)

	t.Run("first parent only", func(t *testing.T) {
		gitBin(t)
		// A merge made with the git command line: the merged side branch is
		// not on the first-parent history.
		runGit(t, dir, "checkout", "-q", "-b", "side")
		testkit.WriteFile(t, dir, "USER.md", "side\n")
		runGit(t, dir, "commit", "-q", "-am", "side: work")
		runGit(t, dir, "checkout", "-q", "main")
		runGit(t, dir, "merge", "-q", "--no-ff", "-m", "merge side", "side")
		got, err := s.Log(3, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"merge side", all[0], all[1]}; !slices.Equal(subjects(got), want) {
			t.Errorf("Log = %q, want %q", subjects(got), want)
		}
		checkGit(t, s, dir)
	})
}

func TestLatest(t *testing.T) {
	s, _, cs := history(t)
	c, d, err := s.Latest("dream:", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sameCommit(c, cs["dream3"]) {
		t.Errorf("Latest = %+v, want %+v", c, cs["dream3"])
	}
	if len(d.Files) != 1 || d.Files[0] != (gitstore.FileChange{Path: "SOUL.md", Added: 1}) {
		t.Errorf("Latest diff = %+v", d.Files)
	}
	if c, _, err := s.Latest("manual:", nil); err != nil || !sameCommit(c, cs["manual"]) {
		t.Errorf("Latest(manual:) = %+v, %v", c, err)
	}
	if _, _, err := s.Latest("nothing:", nil); !errors.Is(err, gitstore.ErrNoMatchingCommit) {
		t.Errorf("Latest(nothing:) = %v, want ErrNoMatchingCommit", err)
	}
}

func TestShow(t *testing.T) {
	s, dir, cs := history(t)
	dream2 := cs["dream2"]
	tests := []struct {
		name    string
		rev     string
		want    gitstore.Commit
		wantErr error
	}{
		{"full id", dream2.SHA, dream2, nil},
		{"short id", dream2.Short, dream2, nil},
		{"4-digit prefix", dream2.SHA[:4], dream2, nil},
		{"upper case and spaces", " " + strings.ToUpper(dream2.SHA[:6]) + "\n", dream2, nil},
		{"root commit", cs["init"].Short, cs["init"], nil},
		{"unknown", unknownPrefix(t, s), gitstore.Commit{}, gitstore.ErrUnknownRevision},
		{"unknown full id", strings.Repeat("0", 40), gitstore.Commit{}, gitstore.ErrUnknownRevision},
		{"too short", dream2.SHA[:3], gitstore.Commit{}, gitstore.ErrInvalidRevision},
		{"not hex", "dream", gitstore.Commit{}, gitstore.ErrInvalidRevision},
		{"too long", dream2.SHA + "0", gitstore.Commit{}, gitstore.ErrInvalidRevision},
		{"empty", "", gitstore.Commit{}, gitstore.ErrInvalidRevision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := s.Show(tt.rev, nil)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Show(%q) = %+v, %v; want %v", tt.rev, c, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sameCommit(c, tt.want) {
				t.Errorf("Show(%q) = %+v, want %+v", tt.rev, c, tt.want)
			}
		})
	}

	t.Run("diffs agree with git show", func(t *testing.T) {
		all, err := s.Log(0, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range all {
			_, d, err := s.Show(c.Short, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !hasGit() {
				continue
			}
			var numstat []string
			for _, f := range d.Files {
				numstat = append(numstat, fmt.Sprintf("%d\t%d\t%s", f.Added, f.Deleted, f.Path))
			}
			if got := lines(runGit(t, dir, "show", "--numstat", "--format=", c.SHA)); !slices.Equal(got, numstat) {
				t.Errorf("%s numstat: git %q, ours %q", c.Subject, got, numstat)
			}
			gitDiff := runGit(t, dir, "show", "--no-color", "--format=", c.SHA)
			if stripHunkContext(d.Unified) != stripHunkContext(gitDiff) {
				t.Errorf("%s diff:\n--- ours\n%s--- git\n%s", c.Subject, d.Unified, gitDiff)
			}
		}
	})
}

// unknownPrefix returns a 6-digit prefix no object of the store has.
func unknownPrefix(t *testing.T, s *gitstore.Store) string {
	t.Helper()
	repo, err := git.PlainOpen(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		p := fmt.Sprintf("%06x", 0xabcdef-i)
		iter, err := repo.Storer.IterEncodedObjects(plumbing.AnyObject)
		if err != nil {
			t.Fatal(err)
		}
		taken := false
		_ = iter.ForEach(func(o plumbing.EncodedObject) error {
			taken = taken || strings.HasPrefix(o.Hash().String(), p)
			return nil
		})
		if !taken {
			return p
		}
	}
}

// craftAmbiguity stores two commits (not on any branch) whose ids share
// their first 4 hex digits, and a blob sharing its first 4 digits with HEAD,
// by trying messages until the hashes collide (about 300 tries on average,
// computed in memory; only the winners are written).
func craftAmbiguity(t *testing.T, dir string) (a, b plumbing.Hash, blob plumbing.Hash) {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	hc, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	encode := func(c *object.Commit) plumbing.EncodedObject {
		o := repo.Storer.NewEncodedObject()
		if err := c.Encode(o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	seen := map[string]plumbing.EncodedObject{}
	for i := 0; ; i++ {
		c := &object.Commit{
			Author: hc.Author, Committer: hc.Committer, TreeHash: hc.TreeHash,
			ParentHashes: []plumbing.Hash{hc.Hash},
			Message:      fmt.Sprintf("dream: crafted %d\n", i),
		}
		o := encode(c)
		p := o.Hash().String()[:4]
		if other, ok := seen[p]; ok {
			for _, x := range []plumbing.EncodedObject{other, o} {
				if _, err := repo.Storer.SetEncodedObject(x); err != nil {
					t.Fatal(err)
				}
			}
			a, b = other.Hash(), o.Hash()
			break
		}
		seen[p] = o
	}
	for i := 0; ; i++ {
		content := fmt.Sprintf("blob %d\n", i)
		h := plumbing.ComputeHash(plumbing.BlobObject, []byte(content))
		if h.String()[:4] != head.Hash().String()[:4] {
			continue
		}
		o := repo.Storer.NewEncodedObject()
		o.SetType(plumbing.BlobObject)
		w, _ := o.Writer()
		_, _ = w.Write([]byte(content))
		_ = w.Close()
		if _, err := repo.Storer.SetEncodedObject(o); err != nil {
			t.Fatal(err)
		}
		return a, b, h
	}
}

func TestShowAmbiguousPrefix(t *testing.T) {
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "SOUL.md", "soul\n")
	head := mustCommit(t, s, "dream: soul")
	a, b, _ := craftAmbiguity(t, dir)

	check := func(t *testing.T) {
		t.Helper()
		prefix := a.String()[:4]
		_, _, err := s.Show(prefix, nil)
		var amb *gitstore.AmbiguousRevisionError
		if !errors.Is(err, gitstore.ErrAmbiguousRevision) || !errors.As(err, &amb) {
			t.Fatalf("Show(%q) = %v, want an *AmbiguousRevisionError", prefix, err)
		}
		want := []string{a.String(), b.String()}
		slices.Sort(want)
		if !slices.Equal(amb.Candidates, want) {
			t.Errorf("candidates %q, want %q", amb.Candidates, want)
		}
		// One more digit than they share tells them apart.
		n := 4
		for a.String()[n] == b.String()[n] {
			n++
		}
		for _, h := range []plumbing.Hash{a, b} {
			c, _, err := s.Show(h.String()[:n+1], nil)
			if err != nil || c.SHA != h.String() {
				t.Errorf("Show(%q) = %s, %v; want %s", h.String()[:n+1], c.SHA, err, h)
			}
		}
		// A blob sharing the prefix of a commit does not make it ambiguous.
		c, _, err := s.Show(head.SHA[:4], nil)
		if err != nil || c.SHA != head.SHA {
			t.Errorf("Show(%q) next to a blob with that prefix = %s, %v", head.SHA[:4], c.SHA, err)
		}
	}
	t.Run("loose objects", check)

	t.Run("packed by git gc while the store is open", func(t *testing.T) {
		gitBin(t)
		// Refs make the crafted commits reachable, so gc packs them too.
		runGit(t, dir, "update-ref", "refs/tags/a", a.String())
		runGit(t, dir, "update-ref", "refs/tags/b", b.String())
		runGit(t, dir, "gc", "-q", "--prune=now")
		loose := runGit(t, dir, "count-objects")
		if !strings.HasPrefix(loose, "0 objects") {
			t.Fatalf("after gc: %s", loose)
		}
		check(t)
		// And the store keeps working on packed history.
		testkit.WriteFile(t, dir, "USER.md", "user\n")
		mustCommit(t, s, "dream: user")
		if _, _, err := s.Latest("dream:", nil); err != nil {
			t.Fatal(err)
		}
		checkGit(t, s, dir)
	})
}

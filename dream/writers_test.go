package dream

import (
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/workspace"
)

// recordedFiles is the memory repository's Files over the workspace root,
// as cmd passes it, noting every path it writes or removes: what a step's
// checkout wrote.
type recordedFiles struct {
	*workspace.Root
	mu    sync.Mutex
	wrote map[string]bool
}

func (r *recordedFiles) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	r.note(rel)
	return r.Root.WriteFile(rel, data, perm)
}

func (r *recordedFiles) Remove(rel string) error {
	r.note(rel)
	return r.Root.Remove(rel)
}

func (r *recordedFiles) note(rel string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wrote[rel] = true
}

// take returns the paths written since the last take.
func (r *recordedFiles) take() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.wrote
	r.wrote = map[string]bool{}
	return out
}

// memFileState is a memory file as it stands: the file (nil: none) and
// its content.
type memFileState struct {
	fi   fs.FileInfo
	data string
}

// liveMemory is the memory files of every scope of the workspace ws
// (the root's and each scopes/<name>/'s), by workspace-relative path.
func liveMemory(t *testing.T, ws string) map[string]memFileState {
	t.Helper()
	dirs := []string{""}
	entries, err := os.ReadDir(filepath.Join(ws, audience.ScopesDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		dirs = append(dirs, path.Join(audience.ScopesDir, e.Name()))
	}
	out := map[string]memFileState{}
	for _, dir := range dirs {
		for _, rel := range memory.TierFiles() {
			p := path.Join(dir, rel)
			fi, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(p)))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			out[p] = memFileState{fi: fi, data: testkit.ReadFile(t, ws, p)}
		}
	}
	return out
}

// changedFiles are the paths whose file was created, removed, replaced (a
// new file in its place, as an atomic write makes) or rewritten between
// two looks.
func changedFiles(before, after map[string]memFileState) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(after)) {
		b, ok := before[p]
		if a := after[p]; !ok || !os.SameFile(a.fi, b.fi) || a.data != b.data {
			out = append(out, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// A scope's memory files are written by a step's checkout alone (and by
// the chat tools, which this test does not run): a Dream batch, a new
// scope's first files, a deep Dream and a restore each change the live
// files only through the memory repository's Files, from the step's
// commit. A stage that wrote a live file itself, as Dream's phase 2 and
// the deep Dream did before steps were whole, fails here.
func TestOnlyAStepsCheckoutWritesTheMemoryFiles(t *testing.T) {
	e := newEnv(t)
	root, err := workspace.Open(e.ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	files := &recordedFiles{Root: root, wrote: map[string]bool{}}
	if e.repo, err = gitstore.Open(e.ws, gitstore.Options{Tracked: workspace.MemoryFiles(), Patterns: workspace.TrackedPatterns(), Lines: audience.ScopesDir, Files: files}); err != nil {
		t.Fatal(err)
	}
	e.srv.SetResponder(llmtest.MemoryModel)
	e.now = func() time.Time { return day("2026-11-27") }
	d, err := New(Config{Workspace: e.ws, HotTokens: 1000}, Deps{Model: e.llm, History: e.hist, Repo: e.repo, Files: root, Logger: slog.New(e.logs), Now: e.now})
	if err != nil {
		t.Fatal(err)
	}
	// step runs what and checks that the memory files it changed are
	// those the checkout wrote, and that it changed some.
	step := func(what string, run func() error) {
		t.Helper()
		before := liveMemory(t, e.ws)
		files.take()
		if err := run(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		wrote, changed := files.take(), changedFiles(before, liveMemory(t, e.ws))
		if len(changed) == 0 {
			t.Fatalf("%s changed no memory file: the test did not aim", what)
		}
		for _, p := range changed {
			if !wrote[p] {
				t.Errorf("%s changed %s, which no checkout wrote (it wrote %v)", what, p, slices.Sorted(maps.Keys(wrote)))
			}
		}
	}
	run := func() error {
		_, err := d.Run(t.Context(), TriggerManual, AllScopes(), nil)
		return err
	}

	// A batch of the root's scope, and a new scope's first files and
	// batch.
	if _, err := e.hist.AppendIn(DefaultScope, "- I keep bees in the garden", "cli:direct"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hist.AppendIn(team, "- The team meets on Mondays", "slack:C1"); err != nil {
		t.Fatal(err)
	}
	step("a Dream of two scopes, one new", run)
	if _, err := os.Stat(filepath.Join(e.ws, filepath.FromSlash(path.Join(team.Dir(), workspace.User)))); err != nil {
		t.Fatalf("the new scope has no files: %v", err)
	}

	// A deep Dream of memory a person filled by hand (saved as a hand
	// edit first), and its restore.
	testkit.WriteFile(t, e.ws, "USER.md", monthsOfUser())
	if err := d.Ledger().RequestDeep(DefaultScope); err != nil {
		t.Fatal(err)
	}
	step("a deep Dream", run)
	deep := e.log(1)[0]
	if !strings.HasPrefix(deep.Subject, DeepSubject) {
		t.Fatalf("the last commit is %q, not a deep Dream", deep.Subject)
	}
	step("a restore of the deep Dream", func() error {
		_, err := d.Restore(deep.Short, AllScopes(), RestoreOptions{})
		return err
	})
}

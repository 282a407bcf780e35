package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/tokens"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/workspace"
)

// The pages' server time at the size the memory page must stay fast at:
// 10,000 commits in the memory repository and 100,000 history entries.
const (
	benchCommits = 10_000
	benchEntries = 100_000
	// benchLines is each scope's MEMORY.md and USER.md, in fact lines;
	// benchCold the team's cold memory.
	benchLines = 150
	benchCold  = 5_000
)

// Each Dream commit goes to one scope: the team's most, Ana's rarely, so
// her timeline is the sparse one (the index is read far down for a page).
var benchScopes = []struct {
	scope audience.Scope
	share int // of 100 commits and entries
}{
	{audience.Default, 30}, {teamScope, 50}, {bobScope, 18}, {anaScope, 2},
}

func benchScopeOf(i int) audience.Scope {
	n := i % 100
	for _, s := range benchScopes {
		if n < s.share {
			return s.scope
		}
		n -= s.share
	}
	return audience.Default
}

type benchSite struct {
	once    sync.Once
	err     error
	dir     string
	srv     *Server
	handler http.Handler
	// cookies signs in the operator and Ana.
	operator, ana *http.Cookie
	// commits by kind, from the repository's own log: the newest Dream
	// of the team, one 5,000 commits down, one of Ana's.
	newest, deep, anas gitstore.Commit
	// srcs are the cursors of a memory line of the team's, far down the
	// archive.
	srcs string
}

var site benchSite

// BenchmarkPages is each page's server time (the handler, no network) at
// 10,000 commits and 100,000 history entries, for the operator and for a
// person whose scope has few commits: ns/op, and cpu-ms/op, the process's
// CPU time per page, which other processes' load does not inflate. The repository is made with git
// fast-import, so it needs the git command line (skipped, saying so,
// without it).
//
//	go test -run '^$' -bench BenchmarkPages -benchtime 20x ./web/
func BenchmarkPages(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed: the 10,000-commit repository is made with git fast-import")
	}
	site.once.Do(func() { site.err = site.build(b) })
	if site.err != nil {
		b.Fatal(site.err)
	}
	teamName := string(teamScope)
	pages := []struct {
		name, path string
		who        *http.Cookie
	}{
		{"Overview", "/", site.operator},
		{"OverviewPerson", "/", site.ana},
		{"MemoryDefault", "/memory/default", site.operator},
		{"MemoryTeam", "/memory/" + teamName, site.operator},
		{"MemoryTeamColdLastPage", "/memory/" + teamName + "?cold=" + strconv.Itoa(benchCold/200), site.operator},
		{"MemoryPerson", "/memory/" + string(anaScope), site.ana},
		{"Provenance", "/entries/" + teamName + "?c=" + site.srcs, site.operator},
		// The worst case: a source Dream has just read, below the
		// history's cache of unread entries and at the far end of the
		// file, which is read from its start up to it.
		{"ProvenanceNewestRead", "/entries/" + teamName + "?c=" + strconv.Itoa((benchEntries-1100)/100*100+scopeOffset(teamScope)), site.operator},
		{"Timeline", "/timeline", site.operator},
		{"TimelineDeepPage", "/timeline?before=" + site.deep.SHA, site.operator},
		{"TimelineDreamsOfTeam", "/timeline?kind=dream&scope=" + teamName, site.operator},
		{"TimelinePerson", "/timeline", site.ana},
		{"TimelinePersonOlder", "/timeline?before=" + site.anas.SHA, site.ana},
		{"Commit", "/commit/" + site.newest.SHA, site.operator},
		{"CommitDeep", "/commit/" + site.deep.SHA, site.operator},
		{"RestoreConfirm", "/restore/" + site.newest.SHA, site.operator},
		{"RestoreConfirmDeep", "/restore/" + site.deep.SHA, site.operator},
		{"Search", "/search?q=fridays+release", site.operator},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+p.path, nil)
			req.AddCookie(p.who)
			cpu := processCPU()
			for b.Loop() {
				rec := httptest.NewRecorder()
				site.handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d\n%s", p.path, rec.Code, rec.Body.String())
				}
			}
			// The process's CPU time per page (the garbage collector's
			// included): on a shared machine, ns/op also counts the
			// time others' work kept this one waiting.
			if used := processCPU() - cpu; used > 0 {
				b.ReportMetric(float64(used.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			}
		})
	}
}

// build makes the workspace: every scope's memory files, the team's cold
// memory, 100,000 history entries and 10,000 commits, each changing one
// line of one scope's MEMORY.md (a deep Dream every 50th of them, a hand
// edit every 10th).
func (s *benchSite) build(b *testing.B) error {
	start := time.Now()
	dir, err := os.MkdirTemp("", "web-bench-")
	if err != nil {
		return err
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	s.dir = dir
	root, err := workspace.Open(dir)
	if err != nil {
		return err
	}
	b.Cleanup(func() { _ = root.Close() })
	opts := gitstore.Options{Tracked: workspace.TrackedFiles(), Patterns: workspace.TrackedPatterns(), Files: root}
	if _, err := gitstore.Open(dir, opts); err != nil {
		return err
	}
	memDir := filepath.Join(dir, "memory")
	if err := writeBenchHistory(memDir); err != nil {
		return err
	}
	if err := importBenchCommits(dir, benchFiles()); err != nil {
		return err
	}
	repo, err := gitstore.Open(dir, opts)
	if err != nil {
		return err
	}
	if err := s.serve(dir, memDir, root, repo); err != nil {
		return err
	}
	if err := s.findPages(repo); err != nil {
		return err
	}
	b.Logf("built %d commits and %d history entries in %v", benchCommits, benchEntries, time.Since(start).Round(time.Millisecond))
	return nil
}

// writeBenchHistory writes the archive as a file, as years of archiving
// leave it (an Append per entry would sync 100,000 times).
func writeBenchHistory(memDir string) error {
	var hist bytes.Buffer
	enc := json.NewEncoder(&hist)
	day := time.Date(2024, 1, 1, 9, 0, 0, 0, time.UTC)
	for c := 1; c <= benchEntries; c++ {
		sc := benchScopeOf(c)
		if err := enc.Encode(history.Entry{
			Cursor: c, Timestamp: day.Add(time.Duration(c) * 10 * time.Minute).Format(history.TimestampLayout),
			Content:    fmt.Sprintf("- Entry %d: the team talked about the release on Fridays and who reviews it.\n- A second fact of entry %d.", c, c),
			SessionKey: "slack:C" + strconv.Itoa(c%7), Scope: sc,
		}); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(memDir, "history.jsonl"), hist.Bytes(), 0o600); err != nil {
		return err
	}
	// Dream has read all but the last thousand.
	return os.WriteFile(filepath.Join(memDir, ".dream_cursor"), []byte(strconv.Itoa(benchEntries-1000)), 0o600)
}

// benchLine is line i of scope sc's memory files as of Dream's run run;
// its sources are entries of sc (scopeOffset).
func benchLine(sc audience.Scope, i, run int) string {
	src := max(1, (i*benchEntries/benchLines)/100*100+scopeOffset(sc))
	return fmt.Sprintf("- Fact %d of %s, as of run %d: the release ships on Fridays. <!-- durable 2026-%02d-%02d src:%d,%d -->\n",
		i, scopeName(sc), run, 1+i%12, 1+i%28, src, src+100)
}

func benchMemoryOf(sc audience.Scope) string {
	return filepath.ToSlash(filepath.Join(sc.Dir(), workspace.Memory))
}

// benchFiles is the memory files by path, in lines, each line from an
// entry of its scope; the first Dream of a scope commits them all.
func benchFiles() map[string][]string {
	files := map[string][]string{}
	for _, bs := range benchScopes {
		var mem, user []string
		for i := range benchLines {
			mem = append(mem, benchLine(bs.scope, i, 0))
			user = append(user, strings.Replace(benchLine(bs.scope, i, 0), "Fact", "Person fact", 1))
		}
		files[benchMemoryOf(bs.scope)] = append([]string{"# Long-term memory\n", "\n", "## Notes\n", "\n"}, mem...)
		files[filepath.ToSlash(filepath.Join(bs.scope.Dir(), workspace.User))] = append([]string{"# Users\n", "\n"}, user...)
		files[filepath.ToSlash(filepath.Join(bs.scope.Dir(), workspace.Soul))] = []string{"# Soul\n", "\n", "Be brief.\n"}
	}
	var cold []string
	for i := range benchCold {
		cold = append(cold, fmt.Sprintf("- Old fact %d of the team. <!-- ephemeral 2025-03-01 src:%d -->\n", i, 1+i*10))
	}
	files[filepath.ToSlash(filepath.Join(teamScope.Dir(), workspace.Cold))] = cold
	return files
}

// importBenchCommits makes the 10,000 commits with git fast-import, one
// commit per change, on the branch gitstore made; files is changed as the
// commits change it.
func importBenchCommits(dir string, files map[string][]string) error {
	branch, err := exec.Command("git", "-C", dir, "symbolic-ref", "HEAD").Output()
	if err != nil {
		return fmt.Errorf("git symbolic-ref: %w", err)
	}
	imp := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	imp.Stdin = benchCommitStream(strings.TrimSpace(string(branch)), files)
	if out, err := imp.CombinedOutput(); err != nil {
		return fmt.Errorf("git fast-import: %v\n%s", err, out)
	}
	// The files on disk as the last commit left them.
	if out, err := exec.Command("git", "-C", dir, "reset", "--hard", "-q").CombinedOutput(); err != nil {
		return fmt.Errorf("git reset: %v\n%s", err, out)
	}
	return nil
}

// benchCommitStream is the fast-import stream of the commits: first one
// per scope with its files, then one line of one MEMORY.md per commit.
func benchCommitStream(branch string, files map[string][]string) *bytes.Buffer {
	var stream bytes.Buffer
	data := func(text string) { fmt.Fprintf(&stream, "data %d\n%s\n", len(text), text) }
	when := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	commit := func(n int, subject, body string, paths ...string) {
		fmt.Fprintf(&stream, "commit %s\ncommitter dreamgate <dreamgate@localhost> %d +0000\n", branch, when.Add(time.Duration(n)*time.Hour).Unix())
		data(subject + "\n\n" + body)
		if n == 1 {
			fmt.Fprintf(&stream, "from %s^0\n", branch)
		}
		for _, p := range paths {
			fmt.Fprintf(&stream, "M 100644 inline %s\n", p)
			data(strings.Join(files[p], ""))
		}
		stream.WriteString("\n")
	}
	n := 0
	for _, bs := range benchScopes {
		var paths []string
		for p := range files {
			if sc, ok := audience.ScopeOfPath(p); ok && sc == bs.scope {
				paths = append(paths, p)
			}
		}
		n++
		commit(n, "dream: memory files of "+scopeName(bs.scope), "Scope: "+string(bs.scope), paths...)
	}
	for n < benchCommits {
		n++
		sc := benchScopeOf(n)
		p := benchMemoryOf(sc)
		i := 4 + n%benchLines
		files[p][i] = benchLine(sc, i-4, n)
		subject := fmt.Sprintf("dream: 1 change from history %d-%d", n*10, n*10+9)
		switch {
		case n%50 == 0:
			subject = "dream: deep — 3 lines merged, 2 moved to cold memory"
		case n%10 == 0:
			subject = gitstore.ManualSubject
		}
		body := "memory/MEMORY.md: +1 -1"
		if sc != audience.Default {
			body += "\nScope: " + string(sc)
		}
		commit(n, subject, body, p)
	}
	return &stream
}

// serve makes the server over the built workspace and signs in the
// operator and Ana.
func (s *benchSite) serve(dir, memDir string, root *workspace.Root, repo *gitstore.Store) error {
	hs, err := history.Open(memDir, history.Options{})
	if err != nil {
		return err
	}
	d, err := dream.New(dream.Config{Workspace: dir}, dream.Deps{Model: noModel{}, History: hs, Repo: repo, Files: root})
	if err != nil {
		return err
	}
	var counter tokens.Counter
	mem := memory.New(memory.NewDisk(dir), false)
	budget := gateway.NewPromptBuilder(dir, mem, slog.New(slog.DiscardHandler)).WithHotMemory(gateway.HotMemory{Tokens: 4000, Counter: &counter})
	key := make([]byte, 32)
	copy(key, "a bench key that is 32 bytes lon")
	s.srv, err = New(Config{Key: key, Token: opToken, DreamCron: "0 */2 * * *", DreamTimezone: "UTC", Location: time.UTC}, Deps{
		Memory: mem,
		Repo:   repo, Dream: d, History: hs, Budget: budget, Health: testHealth,
		Search: &fakeSearch{docs: []SearchMatch{{Scope: teamScope, Kind: "history", Cursor: 5, Text: "the release on fridays"}}},
	})
	if err != nil {
		return err
	}
	s.handler = s.srv.Handler()
	s.operator = benchSession(s.srv, claim{Kind: claimOperator, Token: tokenID(opToken)})
	s.ana = benchSession(s.srv, claim{Kind: claimPerson, Audience: ana.String()})
	return nil
}

// findPages finds the commits the pages open as the timeline finds them
// (this also brings the commit index up to date, as the first request
// after a start would), and the sources of a line far down the archive.
func (s *benchSite) findPages(repo *gitstore.Store) error {
	log, err := repo.LogBefore("", benchCommits/2, "", nil)
	if err != nil || len(log) < benchCommits/2 {
		return fmt.Errorf("log: %d commits, %v", len(log), err)
	}
	s.deep = log[len(log)-1]
	for _, c := range log {
		if strings.HasPrefix(c.Subject, "dream: 1 change") && s.newest.SHA == "" {
			s.newest = c
		}
	}
	anas, err := repo.LogBefore("", 2, "", func(p string) bool {
		sc, ok := audience.ScopeOfPath(p)
		return ok && sc == anaScope
	})
	if err != nil || len(anas) < 2 {
		return fmt.Errorf("Ana's commits: %d, %v", len(anas), err)
	}
	s.anas = anas[1]
	src := (benchLines/2*benchEntries/benchLines)/100*100 + scopeOffset(teamScope)
	s.srcs = fmt.Sprintf("%d,%d", src, src+100)
	return nil
}

// scopeOffset is the position within a hundred entries where scope sc's
// share starts (benchScopeOf), so a line's sources are of its scope.
func scopeOffset(sc audience.Scope) int {
	n := 0
	for _, s := range benchScopes {
		if s.scope == sc {
			return n
		}
		n += s.share
	}
	return 0
}

// benchSession is a session cookie for c, as a sign-in sets it.
func benchSession(s *Server, c claim) *http.Cookie {
	rec := httptest.NewRecorder()
	s.startSession(rec, httptest.NewRequest(http.MethodPost, "http://127.0.0.1/signin", nil), c)
	return rec.Result().Cookies()[0]
}

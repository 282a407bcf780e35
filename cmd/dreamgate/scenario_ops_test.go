package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// metric NAME FAMILY OP VALUE
//
// Reads gateway NAME's /metrics and compares the sum of FAMILY's series
// with VALUE (OP: ==, >=, <=).
func cmdScenarioMetric(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: metric NAME FAMILY ==|>=|<= VALUE")
	}
	g := scenarioOf(ts).gateway(ts, args[0])
	want, err := strconv.ParseFloat(args[3], 64)
	ts.Check(err)
	resp, err := http.Get(g.health + "/metrics")
	ts.Check(err)
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		name, rest, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name, rest = line[:i], line[strings.LastIndexByte(line, ' ')+1:]
		}
		if name != args[1] {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		ts.Check(err)
		sum, found = sum+v, true
	}
	ts.Check(sc.Err())
	if !found {
		ts.Fatalf("%s serves no %s", args[0], args[1])
	}
	ok := map[string]bool{"==": sum == want, ">=": sum >= want, "<=": sum <= want}[args[2]]
	if !ok {
		ts.Fatalf("%s's %s is %g, want %s %g", args[0], args[1], sum, args[2], want)
	}
	ts.Logf("%s's %s is %g", args[0], args[1], sum)
}

// healthz NAME
//
// Writes gateway NAME's /healthz to stdout.
func cmdScenarioHealthz(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: healthz NAME")
	}
	g := scenarioOf(ts).gateway(ts, args[0])
	resp, err := http.Get(g.health + "/healthz")
	ts.Check(err)
	defer resp.Body.Close()
	_, err = io.Copy(ts.Stdout(), resp.Body)
	ts.Check(err)
}

// archive wait N | archive check
//
// wait waits until the database's archive holds N entries; check checks
// that it holds at least as many as at the last wait or check (history
// never shrinks) and that no part of a conversation was archived twice.
func cmdScenarioArchive(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: archive wait N | archive check")
	}
	s := scenarioOf(ts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dsn)
	ts.Check(err)
	defer conn.Close(ctx)
	count := func() (entries, distinct int) {
		ts.Check(conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT (session_key, session_id, range_from, range_to, content))
			FROM archive_entries`).Scan(&entries, &distinct))
		return entries, distinct
	}
	switch args[0] {
	case "wait":
		n := argInt(ts, args, 1)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if got, _ := count(); got >= n {
				s.archived = got
				return
			}
			select {
			case <-ctx.Done():
				got, _ := count()
				ts.Fatalf("the archive holds %d entries, want %d", got, n)
			case <-tick.C:
			}
		}
	case "check":
		entries, distinct := count()
		if entries < s.archived {
			ts.Fatalf("the archive shrank from %d entries to %d", s.archived, entries)
		}
		if distinct != entries {
			ts.Fatalf("%d of the archive's %d entries are another's double", entries-distinct, entries)
		}
		s.archived = entries
		ts.Logf("the archive holds %d entries, none twice", entries)
	default:
		ts.Fatalf("archive: unknown action %q", args[0])
	}
}

// memory count TEXT N
//
// Checks that the memory files (every *.md of the database's memory
// repository, every scope's newest) hold exactly N lines containing TEXT:
// a fact Dream wrote is there once.
func cmdScenarioMemory(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 || args[0] != "count" {
		ts.Fatalf("usage: memory count TEXT N")
	}
	want := argInt(ts, args, 2)
	root := scenarioOf(ts).exportMemory(ts)
	got := 0
	var where []string
	ts.Check(filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for line := range strings.Lines(string(data)) {
			if strings.Contains(line, args[1]) {
				got++
				rel, _ := filepath.Rel(root, path)
				where = append(where, rel+": "+strings.TrimSpace(line))
			}
		}
		return nil
	}))
	if got != want {
		ts.Fatalf("%d memory lines hold %q, want %d: %q", got, args[1], want, where)
	}
	ts.Logf("memory: %q", where)
}

// exportMemory writes the memory repository, which is the database's,
// into a folder of its own, the newest memory files with it, and returns
// the folder.
func (s *scenario) exportMemory(ts *testscript.TestScript) string {
	db, err := postgres.Open(context.Background(), s.dsn, postgres.Options{})
	ts.Check(err)
	defer db.Close()
	repo, err := gitstore.OpenDB(db.Repository(), dbRepoOptions())
	ts.Check(err)
	dir, err := os.MkdirTemp(s.work, "memory-")
	ts.Check(err)
	_, err = repo.Export(dir, dbRepoOptions())
	ts.Check(err)
	return dir
}

// log NAME REGEXP
//
// Waits until gateway NAME's log has a line matching REGEXP (with !,
// checks that none does now).
func cmdScenarioLog(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: log NAME REGEXP")
	}
	g := scenarioOf(ts).gateway(ts, args[0])
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	found := re.MatchString(g.log.String())
	if !neg && !found {
		deadline := time.After(time.Minute)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for !found {
			select {
			case <-deadline:
			case <-tick.C:
				found = re.MatchString(g.log.String())
				continue
			}
			break
		}
	}
	switch {
	case found && neg:
		ts.Fatalf("%s's log matches %q", args[0], args[1])
	case !found && !neg:
		ts.Fatalf("%s's log has no line matching %q:\n%s", args[0], args[1], logTail(g.log.String(), 30))
	}
}

// dream NAME
//
// Runs `dreamgate dream run` with gateway NAME's config (through its
// admin socket, as an operator would) and writes what it printed to
// stdout. A refusal because a Dream is already running is tried again
// once the workspace's Dream lock is free, for up to a minute, as an
// operator would: the server lets go of a killed process's Dream lock
// once it has noticed the death, which a loaded machine can put after
// the kill's own wait (seen once in a full run under load: "Already
// dreaming (started 0s ago)").
func cmdScenarioDream(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: dream NAME")
	}
	s := scenarioOf(ts)
	g := s.gateway(ts, args[0])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		cmd := exec.Command(binPath, "--config", g.cfgPath, "dream", "run")
		cmd.Env = g.env()
		out, err := cmd.CombinedOutput()
		busy := strings.Contains(string(out), "Already dreaming")
		if err == nil || !busy || ctx.Err() != nil {
			if err != nil {
				ts.Fatalf("dream run on %s: %v\n%s\n--- %s's log:\n%s", args[0], err, out, args[0], logTail(g.log.String(), 40))
			}
			_, _ = ts.Stdout().Write(out)
			return
		}
		ts.Logf("dream run on %s refused, tried again once the Dream lock is free: %s", args[0], strings.TrimSpace(string(out)))
		ts.Check(s.waitDreamLockFree(ctx))
	}
}

// waitDreamLockFree waits until the scenario's Dream lock (the advisory
// lock a Dream holds, store/postgres's dreamLockKey) can be taken: no
// process, live or dying, holds it.
func (s *scenario) waitDreamLockFree(ctx context.Context) error {
	pool, err := s.inboxPool(ctx)
	if err != nil {
		return err
	}
	t := time.NewTicker(recordedPoll)
	defer t.Stop()
	for {
		var free bool
		err := pool.QueryRow(ctx, `WITH k AS (SELECT hashtext('dreamgate dream ' || current_schema())::bigint AS key),
			l AS (SELECT pg_try_advisory_lock(key) AS got, key FROM k)
			SELECT got AND pg_advisory_unlock(key) FROM l`).Scan(&free)
		if err != nil {
			return fmt.Errorf("look at the Dream lock: %w", err)
		}
		if free {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Dream lock is still held: %w", ctx.Err())
		case <-t.C:
		}
	}
}

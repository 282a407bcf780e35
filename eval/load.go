package eval

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Reading scenario files: the built-in ones, embedded, and a user's file or
// directory, bounded in size and interruptible.

//go:embed scenarios/*.json
var builtin embed.FS

// Builtin returns the scenarios shipped with dreamgate (eval/scenarios).
func Builtin() ([]Scenario, error) {
	return loadFS(builtin, "scenarios", "eval/scenarios/")
}

// Load reads the scenarios of a file, or of every *.json file of a
// directory (in name order). A bad file is a *ScenarioError; so is one over
// MaxScenarioBytes (read no further: --scenario /dev/zero fails at once).
// It returns ctx's error when ctx ends first, also while waiting on a FIFO
// nobody writes.
func Load(ctx context.Context, p string) ([]Scenario, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, &ScenarioError{File: p, Msg: "cannot be read: " + pathlessError(err)}
	}
	if !fi.IsDir() {
		data, err := readScenario(ctx, p, p)
		if err != nil {
			return nil, err
		}
		scs, err := Parse(p, data)
		if err != nil {
			return nil, err
		}
		return scs, checkUnique(scs)
	}
	entries, err := os.ReadDir(p) // in name order
	if err != nil {
		return nil, &ScenarioError{File: p, Msg: "cannot be read: " + pathlessError(err)}
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, &ScenarioError{File: p, Msg: "holds no *.json scenario file"}
	}
	var all []Scenario
	for _, name := range names {
		file := filepath.ToSlash(p) + "/" + name
		data, err := readScenario(ctx, filepath.Join(p, name), file)
		if err != nil {
			return nil, err
		}
		scs, err := Parse(file, data)
		if err != nil {
			return nil, err
		}
		all = append(all, scs...)
	}
	return all, checkUnique(all)
}

// readScenario reads the file at name (shown as file in errors), at most
// MaxScenarioBytes of it. The open and the reads happen on a goroutine, so
// that ctx's end is answered at once: a read is cut short by closing the
// file, and an open blocked on a FIFO without a writer (which nothing can
// interrupt) is left to end with the process, which is about to exit.
func readScenario(ctx context.Context, name, file string) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	var (
		mu     sync.Mutex
		f      *os.File
		gaveUp bool
	)
	go func() {
		file, err := os.Open(name)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer file.Close()
		mu.Lock()
		f = file
		stop := gaveUp
		mu.Unlock()
		if stop {
			return
		}
		data, err := io.ReadAll(io.LimitReader(file, MaxScenarioBytes+1))
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		switch {
		case r.err != nil:
			return nil, &ScenarioError{File: file, Msg: "cannot be read: " + pathlessError(r.err)}
		case len(r.data) > MaxScenarioBytes:
			return nil, &ScenarioError{File: file, Msg: fmt.Sprintf("is larger than %d MiB; a scenario file is a few KB of JSON", MaxScenarioBytes>>20)}
		}
		return r.data, nil
	case <-ctx.Done():
		mu.Lock()
		gaveUp = true
		if f != nil {
			f.Close() // the read returns
		}
		mu.Unlock()
		return nil, fmt.Errorf("read %s: %w", file, ctx.Err())
	}
}

func loadFS(fsys fs.FS, dir, display string) ([]Scenario, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list scenarios: %w", err)
	}
	sort.Strings(names)
	var all []Scenario
	for _, name := range names {
		file := display + path.Base(name)
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, &ScenarioError{File: file, Msg: "cannot be read: " + pathlessError(err)}
		}
		scs, err := Parse(file, data)
		if err != nil {
			return nil, err
		}
		all = append(all, scs...)
	}
	return all, checkUnique(all)
}

func pathlessError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// checkUnique refuses two scenarios of the same name: reports and --json
// consumers key on it.
func checkUnique(scs []Scenario) error {
	seen := map[string]string{}
	for _, s := range scs {
		if prev, ok := seen[s.Name]; ok {
			return &ScenarioError{File: s.Source, Scenario: s.Name, Field: "name",
				Msg: "is also the name of a scenario in " + prev}
		}
		seen[s.Name] = s.Source
	}
	return nil
}

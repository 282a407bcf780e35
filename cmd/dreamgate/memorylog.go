package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dreamgate/dreamgate/gitstore"
)

// memoryLog is the memory repository's log as the gateway's Dream commands
// read it: cut to the files the asker may see (keep; nil is every file). A
// commit is found or listed only when it changed one of those files, and
// its diff holds only them. Until the repository filters by path itself,
// it walks the newest memoryLogScan matching commits and reads each one's
// diff.
type memoryLog struct{ repo *gitstore.Store }

// memoryLogScan bounds the commits a filtered lookup reads.
const memoryLogScan = 200

func (m memoryLog) Latest(prefix string, keep func(string) bool) (gitstore.Commit, gitstore.Diff, error) {
	if keep == nil {
		return m.repo.Latest(prefix)
	}
	cs, err := m.visible(1, prefix, keep)
	if err != nil {
		return gitstore.Commit{}, gitstore.Diff{}, err
	}
	if len(cs) == 0 {
		return gitstore.Commit{}, gitstore.Diff{}, fmt.Errorf("latest %q: %w", prefix, gitstore.ErrNoMatchingCommit)
	}
	return cs[0].c, cs[0].d, nil
}

func (m memoryLog) Show(rev string, keep func(string) bool) (gitstore.Commit, gitstore.Diff, error) {
	c, d, err := m.repo.Show(rev)
	if err != nil || keep == nil {
		return c, d, err
	}
	return c, cutDiff(d, keep), nil
}

func (m memoryLog) Log(n int, prefix string, keep func(string) bool) ([]gitstore.Commit, error) {
	if keep == nil {
		return m.repo.Log(n, prefix)
	}
	found, err := m.visible(n, prefix, keep)
	out := make([]gitstore.Commit, len(found))
	for i, f := range found {
		out[i] = f.c
	}
	return out, err
}

func (m memoryLog) LatestAfter(sha, prefix string, keep func(string) bool) (gitstore.Commit, bool, error) {
	c, ok, err := m.repo.LatestAfter(sha, prefix)
	if err != nil || !ok || keep == nil {
		return c, ok, err
	}
	_, d, err := m.repo.Show(c.SHA)
	if err != nil {
		return gitstore.Commit{}, false, err
	}
	return c, !cutDiff(d, keep).Empty(), nil
}

type shownCommit struct {
	c gitstore.Commit
	d gitstore.Diff
}

// visible returns the newest n commits matching prefix that changed a file
// keep accepts, with their diffs cut to those files.
func (m memoryLog) visible(n int, prefix string, keep func(string) bool) ([]shownCommit, error) {
	cs, err := m.repo.Log(memoryLogScan, prefix)
	if errors.Is(err, gitstore.ErrNoMatchingCommit) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []shownCommit
	for _, c := range cs {
		_, d, err := m.repo.Show(c.SHA)
		if err != nil {
			return out, err
		}
		if d = cutDiff(d, keep); !d.Empty() {
			out = append(out, shownCommit{c, d})
			if len(out) == n {
				break
			}
		}
	}
	return out, nil
}

// cutDiff keeps the files of d that keep accepts, and their part of the
// unified diff (each file's starts at its "diff --git a/<path> b/<path>"
// header).
func cutDiff(d gitstore.Diff, keep func(path string) bool) gitstore.Diff {
	var out gitstore.Diff
	for _, f := range d.Files {
		if keep(f.Path) {
			out.Files = append(out.Files, f)
		}
	}
	if len(out.Files) == len(d.Files) {
		out.Unified = d.Unified
		return out
	}
	var b strings.Builder
	kept := false
	for line := range strings.Lines(d.Unified) {
		if rest, ok := strings.CutPrefix(line, "diff --git a/"); ok {
			p, _, _ := strings.Cut(rest, " b/")
			kept = keep(p)
		}
		if kept {
			b.WriteString(line)
		}
	}
	out.Unified = b.String()
	return out
}

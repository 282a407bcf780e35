package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// locateGitDir follows a .git file ("gitdir: ...", as in linked worktrees
// and submodules) and a commondir link, to find where the index and the
// objects live.
func locateGitDir(workspace, dotGit string) (gitDir, commonDir string, err error) {
	fi, err := os.Stat(dotGit)
	if err != nil {
		return "", "", err
	}
	gitDir = dotGit
	if !fi.IsDir() {
		b, err := os.ReadFile(dotGit)
		if err != nil {
			return "", "", err
		}
		line, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
		if !ok {
			return "", "", errors.New(".git file has no gitdir line")
		}
		gitDir = strings.TrimSpace(line)
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(workspace, gitDir)
		}
	}
	commonDir = gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		commonDir = strings.TrimSpace(string(b))
		if !filepath.IsAbs(commonDir) {
			commonDir = filepath.Join(gitDir, commonDir)
		}
	}
	if _, err := os.Stat(filepath.Join(commonDir, "objects")); err != nil {
		return "", "", err
	}
	return gitDir, commonDir, nil
}

// ignoreLines are the .gitignore lines that make git see only the tracked
// files: ignore everything at the top, then for each directory on the way to
// a tracked file re-include the directory and ignore its contents, then
// re-include each tracked file. Git cannot re-include a file whose parent
// directory is excluded, hence the directory pairs, parents first. A
// pattern's lines are the pattern itself ("!/scopes/*/SOUL.md" after
// "!/scopes/*/" and "/scopes/*/*"): git's '*' does not match '/' either.
func ignoreLines(tracked []string) []string {
	dirs := map[string]bool{}
	for _, p := range tracked {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	slices.Sort(sorted) // a parent sorts before its children
	lines := []string{"/*"}
	for _, d := range sorted {
		lines = append(lines, "!/"+d+"/", "/"+d+"/*")
	}
	for _, p := range tracked {
		lines = append(lines, "!/"+p)
	}
	return append(lines, "!/"+ignoreFile)
}

// ignoreWanted are the .gitignore lines the store needs: every tracked
// file's; with lines, the branch's files' and the lines folder ignored
// (its files are on lines of their own, never in HEAD), after any line of
// an earlier version that showed it.
func (s *Store) ignoreWanted() []string {
	if !s.linesOn() {
		return ignoreLines(append(slices.Clone(s.tracked), s.patterns...))
	}
	var branch []string
	for _, p := range s.patterns {
		if s.lineOf(strings.ReplaceAll(p, "*", "x")) == "" {
			branch = append(branch, p)
		}
	}
	return append(ignoreLines(append(slices.Clone(s.tracked), branch...)), "/"+s.linesDir+"/")
}

// mergeIgnore writes .gitignore, or appends the lines it lacks, and
// returns those. Lines already there, in any order, are kept; ours come
// after them so they take precedence.
func (s *Store) mergeIgnore() (added []string, err error) {
	p := filepath.Join(s.dir, ignoreFile)
	old, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read .gitignore: %w", err)
	}
	buf, add := s.mergedIgnore(old)
	if len(add) == 0 {
		return nil, nil
	}
	if err := s.files.WriteFile(ignoreFile, buf, 0o600); err != nil {
		return nil, fmt.Errorf("write .gitignore: %w", err)
	}
	return add, nil
}

// mergedIgnore is the .gitignore old (nil: none) with the lines the store
// needs and it lacks appended, and those lines.
func (s *Store) mergedIgnore(old []byte) ([]byte, []string) {
	have := map[string]bool{}
	for line := range strings.SplitSeq(string(old), "\n") {
		have[strings.TrimRight(line, " \t\r")] = true
	}
	var add []string
	for _, l := range s.ignoreWanted() {
		if !have[l] {
			add = append(add, l)
		}
	}
	if len(add) == 0 {
		return old, nil
	}
	buf := bytes.Clone(old)
	if len(buf) > 0 && buf[len(buf)-1] != '\n' {
		buf = append(buf, '\n')
	}
	return append(buf, strings.Join(add, "\n")+"\n"...), add
}

// initialCommit touches the missing tracked files and commits them with the
// .gitignore.
func (s *Store) initialCommit() error {
	for _, p := range s.tracked {
		full := filepath.Join(s.dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			return fmt.Errorf("create directory for %s: %w", p, err)
		}
		f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	found, err := s.workingFiles(nil)
	if err != nil {
		return fmt.Errorf("initial commit: %w", err)
	}
	paths := append(append([]string{ignoreFile}, s.tracked...), found...)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	if _, err := s.lockedCommit(paths, InitSubject, ""); err != nil {
		return fmt.Errorf("initial commit: %w", err)
	}
	return nil
}

package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

func (s *Store) indexPath() string { return filepath.Join(s.gitDir, indexFile) }

// indexHeaderLine names the tracking rules and the lines folder: which
// paths the lines record depends on them, so other rules make the stored
// index out of date.
func (s *Store) indexHeaderLine() string {
	return indexHeader + "tracked=" + strings.Join(s.tracked, ",") + " patterns=" + strings.Join(s.patterns, ",") +
		" lines=" + s.linesDir + "\n"
}

func parseIndex(data []byte, header string) (*commitIndex, error) {
	rest, ok := bytes.CutPrefix(data, []byte(header))
	if !ok {
		return nil, errors.New("header does not match")
	}
	x := newCommitIndex()
	x.size = int64(len(data))
	for n := 2; len(rest) > 0; n++ {
		line, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok {
			return nil, fmt.Errorf("line %d: unterminated", n)
		}
		rest = after
		if p, ok := bytes.CutPrefix(line, []byte(pathLine)); ok {
			path, err := parseChecked(string(p))
			if err == nil {
				path, err = strconv.Unquote(path)
			}
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			if _, dup := x.num[path]; dup {
				return nil, fmt.Errorf("line %d: path listed twice", n)
			}
			x.num[path] = int32(len(x.paths))
			x.paths = append(x.paths, path)
			continue
		}
		e, err := parseEntry(string(line), len(x.paths))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if !x.parentOK(e) {
			return nil, fmt.Errorf("line %d: parent is not the previous commit of its line", n)
		}
		if _, dup := x.pos[e.id]; dup {
			return nil, fmt.Errorf("line %d: commit listed twice", n)
		}
		x.push(e)
	}
	x.defined = len(x.paths)
	return x, nil
}

// formatPath writes "path <quoted path> <crc32 of the quoted path>".
func formatPath(p string) string {
	q := strconv.Quote(p)
	return fmt.Sprintf("%s%s %08x\n", pathLine, q, crc32.ChecksumIEEE([]byte(q)))
}

// formatEntry writes "<id> <parent|-> <unix> <offset> <line|-> <h|->
// <changed|-> <quoted subject> <crc32 of all before it>", line being the
// scope's line ("-": the branch), h marking a branch commit that holds the
// lines folder, changed the numbers of the changed paths, comma-separated.
func formatEntry(e indexEntry) string {
	parent := "-"
	if !e.parent.IsZero() {
		parent = e.parent.String()
	}
	changed := "-"
	if len(e.changed) > 0 {
		b := make([]byte, 0, 4*len(e.changed))
		for i, n := range e.changed {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(n), 10)
		}
		changed = string(b)
	}
	ln, holds := "-", "-"
	if e.line != "" {
		ln = string(e.line)
	}
	if e.holds {
		holds = "h"
	}
	line := fmt.Sprintf("%s %s %d %d %s %s %s %s", e.id, parent, e.when, e.offset, ln, holds, changed, strconv.Quote(e.subject))
	return fmt.Sprintf("%s %08x\n", line, crc32.ChecksumIEEE([]byte(line)))
}

// parseChecked returns a line's body when its last field is the body's
// checksum.
func parseChecked(line string) (string, error) {
	body, sum, ok := cutLast(line, " ")
	if !ok || sum != fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(body))) {
		return "", errors.New("checksum mismatch")
	}
	return body, nil
}

// parseEntry reads a commit line whose path numbers are below paths.
func parseEntry(text string, paths int) (indexEntry, error) {
	body, err := parseChecked(text)
	if err != nil {
		return indexEntry{}, err
	}
	var e indexEntry
	f := strings.SplitN(body, " ", 8)
	if len(f) != 8 {
		return indexEntry{}, errors.New("too few fields")
	}
	if f[4] != "-" {
		if !validName(f[4]) {
			return indexEntry{}, errors.New("malformed line name")
		}
		e.line = line(f[4])
	}
	switch f[5] {
	case "h":
		e.holds = true
	case "-":
	default:
		return indexEntry{}, errors.New("malformed mark")
	}
	f = append(f[:4], f[6:]...)
	var ok1, ok2 bool
	e.id, ok1 = parseHash(f[0])
	if e.parent, ok2 = parseHash(f[1]); f[1] == "-" {
		e.parent, ok2 = plumbing.ZeroHash, true
	}
	var errs [4]error
	e.when, errs[0] = strconv.ParseInt(f[2], 10, 64)
	e.offset, errs[1] = strconv.Atoi(f[3])
	if f[4] != "-" {
		for n := range strings.SplitSeq(f[4], ",") {
			v, err := strconv.ParseInt(n, 10, 32)
			if err == nil && (v < 0 || v >= int64(paths)) {
				err = errors.New("names a path not listed before")
			}
			if err != nil {
				errs[2] = err
				break
			}
			e.changed = append(e.changed, int32(v))
		}
	}
	e.subject, errs[3] = strconv.Unquote(f[5])
	if !ok1 || !ok2 || errors.Join(errs[:]...) != nil {
		return indexEntry{}, errors.New("malformed fields")
	}
	return e, nil
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// replaceFile writes p through a temporary file and a rename, so a reader
// sees the old or the new file. No fsync: a torn or lost index after a
// crash is rebuilt from the history.
func replaceFile(p string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

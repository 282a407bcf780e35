package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/workspace"
)

// Shapes of lines in nanobot's legacy HISTORY.md, compiled on first use:
// migration runs once per workspace, start-up on every run.
var legacy = sync.OnceValue(func() *legacyPatterns {
	return &legacyPatterns{
		entryStart: regexp.MustCompile(`^\[(\d{4}-\d{2}-\d{2}[^\]]*)\]\s*`),
		timestamp:  regexp.MustCompile(`^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\]\s*`),
		rawMessage: regexp.MustCompile(`^\[\d{4}-\d{2}-\d{2}[^\]]*\]\s+[A-Z][A-Z0-9_]*(?:\s+\[tools:\s*[^\]]+\])?:`),
	}
})

type legacyPatterns struct {
	// An entry starts with a bracketed date: "[2026-03-01 10:00] …".
	entryStart *regexp.Regexp
	// A usable timestamp is exactly "[YYYY-MM-DD HH:MM]".
	timestamp *regexp.Regexp
	// Inside a [RAW] dump, each message line looks like "[date] ROLE[ [tools: …]]:".
	rawMessage *regexp.Regexp
}

// migrateLegacy turns memory/HISTORY.md into history.jsonl, once: only when
// HISTORY.md exists and history.jsonl is missing or empty. It runs under the
// history lock, so two processes starting together migrate once.
func (s *Store) migrateLegacy() error {
	legacy := filepath.Join(s.dir, legacyFile)
	if _, err := os.Stat(legacy); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	fi, err := os.Stat(legacy)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // another process migrated it meanwhile
	}
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if hfi, err := os.Stat(s.path); err == nil && hfi.Size() > 0 {
		return nil
	}
	data, err := os.ReadFile(legacy)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	entries := parseLegacyHistory(text, fi.ModTime().Format(TimestampLayout))
	if len(entries) > 0 {
		var buf []byte
		for _, e := range entries {
			buf = append(appendEntryJSON(buf, e), '\n')
		}
		if err := workspace.WriteFile(s.path, buf, fileMode); err != nil {
			return err
		}
		last := []byte(strconv.Itoa(entries[len(entries)-1].Cursor))
		// Dream starts after the migrated entries: an upgrade must not replay
		// the whole old archive into memory (nor into every prompt).
		if err := workspace.WriteFile(s.cursorPath, last, fileMode); err != nil {
			return err
		}
		if err := workspace.WriteFile(s.dreamPath, last, fileMode); err != nil {
			return err
		}
	}
	backup := legacyBackupPath(s.dir)
	if err := os.Rename(legacy, backup); err != nil {
		return fmt.Errorf("keep %s as %s: %w", legacyFile, filepath.Base(backup), err)
	}
	if err := workspace.SyncDir(s.dir); err != nil {
		return err
	}
	s.cache = cache{}
	s.logger.Info("migrated legacy HISTORY.md to history.jsonl", "entries", len(entries), "backup", filepath.Base(backup))
	return nil
}

// legacyBackupPath is HISTORY.md.bak, or .bak.2, .bak.3, … if taken.
func legacyBackupPath(dir string) string {
	p := filepath.Join(dir, legacyFile+".bak")
	for i := 2; ; i++ {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p
		}
		p = filepath.Join(dir, legacyFile+".bak."+strconv.Itoa(i))
	}
}

// parseLegacyHistory splits HISTORY.md into entries numbered from 1. An entry
// ends at a blank line or where a line starts with "[date…]"; a [RAW] dump
// stays one entry although its message lines carry dates. A leading
// "[YYYY-MM-DD HH:MM]" becomes the timestamp; otherwise fallbackTS is used.
func parseLegacyHistory(text, fallbackTS string) []Entry {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	var chunks []string
	var cur []string
	flush := func() {
		if c := strings.TrimSpace(strings.Join(cur, "\n")); c != "" {
			chunks = append(chunks, c)
		}
	}
	sawBlank := false
	for line := range strings.SplitSeq(text, "\n") {
		blank := strings.TrimSpace(line) == ""
		if (sawBlank && !blank && len(cur) > 0) || startsLegacyEntry(line, cur) {
			flush()
			cur, sawBlank = []string{line}, false
			continue
		}
		cur = append(cur, line)
		sawBlank = blank
	}
	flush()

	entries := make([]Entry, 0, len(chunks))
	for i, chunk := range chunks {
		e := Entry{Cursor: i + 1, Timestamp: fallbackTS, Content: chunk}
		if m := legacy().timestamp.FindStringSubmatchIndex(chunk); m != nil {
			e.Timestamp = chunk[m[2]:m[3]]
			if rest := strings.TrimLeft(chunk[m[1]:], " \t\n"); rest != "" {
				e.Content = rest
			}
		}
		e.Content, _ = store.EntryContent(e.Content)
		entries = append(entries, e)
	}
	return entries
}

func startsLegacyEntry(line string, cur []string) bool {
	if len(cur) == 0 || !legacy().entryStart.MatchString(line) {
		return false
	}
	return !(isLegacyRaw(cur) && legacy().rawMessage.MatchString(line))
}

// isLegacyRaw reports whether the chunk being built is a "[date] [RAW] …" dump.
func isLegacyRaw(cur []string) bool {
	for _, l := range cur {
		if strings.TrimSpace(l) == "" {
			continue
		}
		m := legacy().timestamp.FindStringIndex(l)
		return m != nil && strings.HasPrefix(strings.TrimLeft(l[m[1]:], " \t"), "[RAW]")
	}
	return false
}

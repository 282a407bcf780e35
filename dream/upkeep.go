package dream

import (
	"fmt"
	"io/fs"
	"time"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// Memory-line upkeep. Every fact of a memory file carries its priority,
// the date it was last confirmed and the history entries it came from
// (memline). Dream keeps them up to date itself, after phase 2, by
// comparing each file before and after the edits — the model is not
// trusted with bookkeeping:
//
//   - a line the edits left as it was keeps its metadata, and is confirmed
//     (dated today, the finding's entries added to its sources) when a
//     finding restates it; a line without metadata (written by hand, or
//     before Dream kept any) is never given invented provenance;
//   - a new line gets today's date, the entries it came from (those that
//     hold its words; else the finding's; else the whole batch), and the
//     priority the model wrote in its comment, else the priority phase 1
//     gave its finding, else durable;
//   - a changed line (it replaces an old line it shares most words with: a
//     correction) is dated today, keeps the old line's sources and adds
//     the new, and keeps the old line's priority unless the model or the
//     finding gives one;
//   - a line only rewritten (the same fact, say without its comment) keeps
//     the old line's metadata;
//   - ephemeral lines older than Config.EphemeralDays retire to cold
//     memory (coldFile).

// upkeepFiles are the files a batch's upkeep may write, relative to the
// scope's folder: the memory files and cold memory.
var upkeepFiles = append(workspace.MemoryFiles(), workspace.Cold)

// fileTag maps a finding's tag to the file its fact belongs in.
var fileTag = map[string]string{tagUser: fileUser, tagSoul: fileSoul, tagMemory: fileMemory}

// provenance is what a batch's edits came from.
type provenance struct {
	day      time.Time
	entries  []history.Entry
	findings []finding

	entryWords   []wordSet
	findingWords []wordSet
	// used marks the findings a new or changed line was written for.
	used []bool
}

func newProvenance(day time.Time, entries []history.Entry, findings []finding) *provenance {
	pv := &provenance{day: day, entries: entries, findings: findings, used: make([]bool, len(findings))}
	for _, e := range entries {
		pv.entryWords = append(pv.entryWords, words(e.Content))
	}
	for _, f := range findings {
		pv.findingWords = append(pv.findingWords, words(f.Text))
	}
	return pv
}

// sources are the cursors of the entries that hold w's words (the best
// match and those close to it), nil when none does.
func (pv *provenance) sources(w wordSet) []int {
	best := 0.0
	scores := make([]float64, len(pv.entries))
	for i, ew := range pv.entryWords {
		scores[i] = w.coveredBy(ew)
		best = max(best, scores[i])
	}
	if best < sourceCover {
		return nil
	}
	var out []int
	for i, s := range scores {
		if s >= sourceCover && s >= best*0.8 {
			out = append(out, pv.entries[i].Cursor)
		}
	}
	return out
}

// batch is every cursor of the batch: a line's sources when it cannot be
// narrowed to its own entries.
func (pv *provenance) batch() []int {
	out := make([]int, len(pv.entries))
	for i, e := range pv.entries {
		out[i] = e.Cursor
	}
	return out
}

// finding returns the index of the finding a line of words w was written
// for, -1 when none is close enough.
func (pv *provenance) finding(w wordSet) int {
	best, at := 0.0, -1
	for i, f := range pv.findings {
		if f.Tag == tagFileRemove {
			continue
		}
		if s := w.similar(pv.findingWords[i]); s >= sameFact && s > best {
			best, at = s, i
		}
	}
	return at
}

// sourcesOf is a line's sources: its own entries, else its finding's, else
// the batch.
func (pv *provenance) sourcesOf(w wordSet, finding int) []int {
	if s := pv.sources(w); s != nil {
		return s
	}
	if finding >= 0 {
		if s := pv.sources(pv.findingWords[finding]); s != nil {
			return s
		}
	}
	return pv.batch()
}

// editedFile is one memory file before and after phase 2.
type editedFile struct {
	rel           string
	before, after *memline.File
	// unchanged lists the after file's facts that the edits did not touch.
	unchanged []int
	changed   bool
}

// stamp updates the metadata of the files' facts (see above).
func (pv *provenance) stamp(files []*editedFile) {
	for _, f := range files {
		pv.stampEdits(f)
	}
	for i, fd := range pv.findings {
		if pv.used[i] || fd.Tag == tagFileRemove {
			continue
		}
		for _, f := range files {
			if f.rel == fileTag[fd.Tag] {
				pv.confirm(f, i)
			}
		}
	}
}

// stampEdits stamps the new and changed facts of one file.
func (pv *provenance) stampEdits(f *editedFile) {
	left := map[string]int{} // facts of before not found unchanged, by text
	for _, i := range f.before.Facts() {
		left[f.before.Items[i].Raw]++
	}
	var fresh []int
	for _, i := range f.after.Facts() {
		raw := f.after.Items[i].Raw
		if left[raw] > 0 {
			left[raw]--
			f.unchanged = append(f.unchanged, i)
			continue
		}
		fresh = append(fresh, i)
	}
	var removed []memline.Line
	for _, i := range f.before.Facts() {
		it := f.before.Items[i]
		if left[it.Raw] > 0 {
			left[it.Raw]--
			removed = append(removed, it.Line)
		}
	}
	taken := make([]bool, len(removed))
	removedWords := make([]wordSet, len(removed))
	for j, l := range removed {
		removedWords[j] = words(l.Text)
	}
	for _, i := range fresh {
		it := &f.after.Items[i]
		l := it.Line
		w := words(l.Text)
		fd := pv.finding(w)
		if fd >= 0 {
			pv.used[fd] = true
		}
		// The same fact rewritten: its metadata stays (a model that copies
		// a line without its comment must not reset its age).
		old := -1
		for j, r := range removed {
			if !taken[j] && memline.Key(r.Text) == memline.Key(l.Text) {
				old = j
				break
			}
		}
		if old >= 0 {
			taken[old] = true
			r := removed[old]
			if !r.HasMeta() && !l.HasMeta() {
				continue // a hand-written line moved: left as it is
			}
			if l.Priority == "" {
				l.Priority = r.Priority
			}
			l.Date, l.Sources = r.Date, r.Sources
			if fd >= 0 {
				l.Confirm(pv.day, pv.sourcesOf(w, fd)...)
			}
			pv.set(f, it, l)
			continue
		}
		// A changed line replaces the old line it shares the most with.
		best, bestAt := 0.0, -1
		for j := range removed {
			if s := w.similar(removedWords[j]); !taken[j] && s >= sameFact && s > best {
				best, bestAt = s, j
			}
		}
		prio := l.Priority // the model's own, when it wrote one
		if prio == "" && fd >= 0 {
			prio = pv.findings[fd].Priority
		}
		l.Date, l.Sources = "", nil
		if bestAt >= 0 {
			taken[bestAt] = true
			r := removed[bestAt]
			if prio == "" {
				prio = r.Priority
			}
			l.Sources = append([]int(nil), r.Sources...)
		}
		if prio == "" {
			prio = memline.Durable
		}
		l.Priority = prio
		l.Confirm(pv.day, pv.sourcesOf(w, fd)...)
		pv.set(f, it, l)
	}
}

// confirm dates the line finding i restates, if the file holds one with
// metadata, and adds the finding's entries to its sources.
func (pv *provenance) confirm(f *editedFile, i int) {
	fw := pv.findingWords[i]
	key := memline.Key(pv.findings[i].Text)
	best, at := 0.0, -1
	for _, j := range f.unchanged {
		l := f.after.Items[j].Line
		if !l.HasMeta() {
			continue
		}
		s := fw.similar(words(l.Text))
		if memline.Key(l.Text) == key {
			s = 1
		}
		if s >= confirmShare && s > best {
			best, at = s, j
		}
	}
	if at < 0 {
		return
	}
	it := &f.after.Items[at]
	l := it.Line
	l.Confirm(pv.day, pv.sourcesOf(fw, i)...)
	pv.set(f, it, l)
}

func (pv *provenance) set(f *editedFile, it *memline.Item, l memline.Line) {
	before := it.Raw
	it.SetLine(l)
	if it.Raw != before {
		f.changed = true
	}
}

// expired reports an ephemeral line whose date is more than days before
// day. An undated line has no age.
func expired(l memline.Line, day time.Time, days int) bool {
	if l.Effective() != memline.Ephemeral {
		return false
	}
	t, ok := l.Time()
	if !ok {
		return false
	}
	return dateOf(day).After(t.AddDate(0, 0, days))
}

// dateOf is the calendar day of t (its own zone) at midnight UTC, as a
// memline date reads.
func dateOf(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// retire takes the expired ephemeral facts out of f and returns them.
func retire(f *memline.File, day time.Time, days int) []memline.Line {
	var out []memline.Line
	kept := f.Items[:0:0]
	for _, it := range f.Items {
		if it.Fact && expired(it.Line, day, days) {
			out = append(out, it.Line)
			continue
		}
		kept = append(kept, it)
	}
	if out != nil {
		f.Items = kept
	}
	return out
}

// upkeep keeps the metadata of the scope's memory lines up to date after
// phase 2 (applied: the findings it applied), comparing the batch's copy
// of the files with the commit it was made from, and retires expired
// ephemeral lines to cold memory, in the copy: the step commits both.
func (b *batch) upkeep(applied []finding) error {
	d, st := b.d, b.stage
	day := d.now()
	pv := newProvenance(day, b.entries, applied)
	var files []*editedFile
	for _, rel := range workspace.MemoryFiles() {
		cur, err := st.read(rel)
		if err != nil {
			return fmt.Errorf("read %s: %w", rel, err)
		}
		if cur == nil {
			continue
		}
		files = append(files, &editedFile{rel: rel, before: memline.ParseFile(st.orig[rel]), after: memline.ParseFile(cur)})
	}
	pv.stamp(files)
	var moved []coldSection
	// A restored deep Dream holds: what it brought back is not retired
	// again until the memory grows past the hold.
	held := b.h != nil && b.h.scope(b.scope).DeepHeld > 0
	for _, f := range files {
		if held {
			break
		}
		if out := retire(f.after, day, d.cfg.EphemeralDays); out != nil {
			f.changed = true
			moved = append(moved, coldSection{from: f.rel, reason: reasonExpired(d.cfg.EphemeralDays), lines: out})
		}
	}
	if err := appendCold(st.root, day, moved); err != nil {
		return err
	}
	for _, f := range files {
		if !f.changed {
			continue
		}
		if err := writeKeepingMode(st.root, f.rel, f.after.Bytes()); err != nil {
			return err
		}
	}
	b.rep.ColdLines += coldCount(moved)
	return nil
}

// writeKeepingMode replaces rel with data, keeping its permission bits (a
// new file is private).
func writeKeepingMode(ws *workspace.Root, rel string, data []byte) error {
	perm := fs.FileMode(0o600)
	if fi, err := ws.Lstat(rel); err == nil {
		perm = fi.Mode().Perm()
	}
	if err := ws.WriteFile(rel, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

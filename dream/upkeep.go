package dream

import (
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/memory"
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
//   - a correction is a new line that names the ids of the lines it
//     replaces (replaces:, written by phase 2, or its finding's
//     [replaces:…]; a line corrected in place with its comment kept, when
//     a finding named its id): it keeps the priority of the line it
//     replaces unless the model or the finding gives one, and the replaced
//     line is superseded (supersede.go) — by id, never because two lines
//     share words;
//   - a line only rewritten (the same line by its id, or the same fact,
//     say without its comment) keeps the old line's metadata and id;
//   - every fact gets an id (supersede.go);
//   - ephemeral lines older than Config.EphemeralDays retire to cold
//     memory (cold.go).

// upkeepFiles are the files a batch's upkeep may write, relative to the
// scope's folder: the memory files and cold memory.
var upkeepFiles = memory.TierFiles()

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
	rm := &removedLines{}
	for _, i := range f.before.Facts() {
		it := f.before.Items[i]
		if left[it.Raw] > 0 {
			left[it.Raw]--
			rm.lines = append(rm.lines, it.Line)
		}
	}
	rm.taken = make([]bool, len(rm.lines))
	for _, i := range fresh {
		pv.stampFresh(f, &f.after.Items[i], rm)
	}
}

// removedLines are the facts of a file's before that its after does not
// hold as they were; taken marks those a fresh line was found to be.
type removedLines struct {
	lines []memline.Line
	taken []bool
}

// byID is the removed line with id, -1 when none.
func (rm *removedLines) byID(id string) int {
	for j, r := range rm.lines {
		if id != "" && !rm.taken[j] && r.ID == id {
			return j
		}
	}
	return -1
}

// byKey is the removed line stating the same fact as text, -1 when none.
func (rm *removedLines) byKey(text string) int {
	for j, r := range rm.lines {
		if !rm.taken[j] && memline.Key(r.Text) == memline.Key(text) {
			return j
		}
	}
	return -1
}

// stampFresh stamps one new or changed fact of f: a line the edits left
// with its id is that line, edited (unless a finding named the id as
// replaced: then it is a new line that replaces it); a line stating the
// same fact as a removed one keeps its metadata; any other line is new,
// and replaces the lines it names (replaces:, written by the model — or,
// when it named none, those its finding named).
func (pv *provenance) stampFresh(f *editedFile, it *memline.Item, rm *removedLines) {
	l := it.Line
	// The program keeps these words; a model that copies them is not the
	// judge of them.
	l.Out, l.Why, l.SupersededBy = "", "", ""
	w := words(l.Text)
	fd := pv.finding(w)
	if fd >= 0 {
		pv.used[fd] = true
	}
	old := rm.byID(l.ID)
	if old >= 0 && pv.named(l.ID) && memline.Key(rm.lines[old].Text) != memline.Key(l.Text) {
		// Corrected in place, its comment kept: a new line replaces it.
		rm.taken[old] = true
		l.Replaces = appendNew(l.Replaces, l.ID)
		l.ID = ""
		pv.stampNew(f, it, l, w, fd, rm)
		return
	}
	if old < 0 {
		old = rm.byKey(l.Text)
	}
	if old < 0 {
		l.ID = "" // an id copied from another line is not this one's
		pv.stampNew(f, it, l, w, fd, rm)
		return
	}
	// The same line rewritten, or the same fact: its metadata stays (a
	// model that copies a line without its comment must not reset its
	// age, nor its id).
	rm.taken[old] = true
	r := rm.lines[old]
	hadMeta := r.HasMeta() || l.HasMeta()
	if !hadMeta && r.ID == "" {
		return // a hand-written line moved: left as it is
	}
	if l.Priority == "" {
		l.Priority = r.Priority
	}
	l.Date, l.Sources = r.Date, r.Sources
	if r.ID != "" {
		l.ID = r.ID
	}
	if len(l.Replaces) == 0 {
		l.Replaces = r.Replaces
	}
	if fd >= 0 && hadMeta {
		l.Confirm(pv.day, pv.sourcesOf(w, fd)...)
	}
	pv.set(f, it, l)
}

// stampNew stamps a new line: today's date, the entries it came from, the
// priority the model wrote, else its finding's, else that of a line it
// replaces, else durable.
func (pv *provenance) stampNew(f *editedFile, it *memline.Item, l memline.Line, w wordSet, fd int, rm *removedLines) {
	if len(l.Replaces) == 0 && fd >= 0 {
		// The model wrote no replaces:; the finding the line was written
		// for names what it replaces (the finding decides, by id).
		l.Replaces = slices.Clone(pv.findings[fd].Replaces)
	}
	prio := l.Priority
	if prio == "" && fd >= 0 {
		prio = pv.findings[fd].Priority
	}
	for _, id := range l.Replaces {
		if j := rm.byIDAny(id); prio == "" && j >= 0 {
			prio = rm.lines[j].Priority
		}
	}
	if prio == "" {
		prio = memline.Durable
	}
	l.Priority = prio
	l.Date, l.Sources = "", nil
	l.Confirm(pv.day, pv.sourcesOf(w, fd)...)
	pv.set(f, it, l)
}

// byIDAny is the removed line with id, taken or not; -1 when none.
func (rm *removedLines) byIDAny(id string) int {
	for j, r := range rm.lines {
		if r.ID == id {
			return j
		}
	}
	return -1
}

// named reports whether a finding of the batch named id as replaced.
func (pv *provenance) named(id string) bool {
	for _, f := range pv.findings {
		if slices.Contains(f.Replaces, id) {
			return true
		}
	}
	return false
}

func appendNew(list []string, id string) []string {
	if slices.Contains(list, id) {
		return list
	}
	return append(slices.Clone(list), id)
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
// of the files with the commit it was made from: stamping, ids, what
// corrections superseded, and the retirement of expired ephemeral lines to
// cold memory, in the copy: the step commits it all.
func (b *batch) upkeep(applied []finding) error {
	d, st := b.d, b.stage
	day := d.now()
	pv := newProvenance(day, b.entries, applied)
	var files []*editedFile
	for _, rel := range memory.HotFiles() {
		cur, err := st.read(rel)
		if err != nil {
			return fmt.Errorf("read %s: %w", rel, err)
		}
		if cur == nil {
			continue
		}
		files = append(files, &editedFile{rel: rel, before: memline.ParseFile(st.orig[rel]), after: memline.ParseFile(cur)})
	}
	cold, err := readCold(st.root)
	if err != nil {
		return err
	}
	pv.stamp(files)
	// A restored deep Dream holds: what it brought back is not retired
	// again until the memory grows past the hold.
	held := b.h != nil && b.h.scope(b.scope).DeepHeld > 0
	moved := keepLines(day, d.cfg.EphemeralDays, files, cold.f, b.named, held)
	if err := cold.write(st.root, day, d.cfg.EphemeralDays, moved); err != nil {
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

// keepLines is the bookkeeping after the stamping of a change to a
// scope's hot files (files, with cold its cold memory): the lines Dream
// stamped get an id, what the change's corrections replaced is superseded
// (supersede), and expired ephemeral lines retire (unless held: a restored
// deep Dream holds). It returns what leaves the hot
// files for cold memory, and marks the files it changed.
func keepLines(day time.Time, days int, files []*editedFile, cold *memline.File, named map[string]namedLine, held bool) []coldSection {
	taken := idSet{}
	for _, f := range files {
		taken.addFiles(f.before, f.after)
	}
	taken.addFiles(cold)
	for id := range named {
		taken[id] = true
	}
	g := newIDGiver(taken)
	for _, f := range files {
		// The lines Dream wrote or stamped this time (not as before)
		// get an id; the others keep none until then (or the next deep
		// Dream), so a Dream's commit shows its own changes.
		was := map[string]int{}
		for _, it := range f.before.Items {
			was[it.Raw]++
		}
		stamped := func(it memline.Item) bool {
			if was[it.Raw] > 0 {
				was[it.Raw]--
				return it.Line.ID != ""
			}
			return true
		}
		if g.file(f.after, true, stamped) {
			f.changed = true
		}
	}
	moved, hotChanged, _ := supersede(files, cold, goneLines(files), named)
	for i, ch := range hotChanged {
		files[i].changed = files[i].changed || ch
	}
	for _, f := range files {
		if held {
			break // a restored deep Dream's lines are not retired again yet
		}
		if out := retire(f.after, day, days); out != nil {
			f.changed = true
			g.lines(out)
			moved = append(moved, coldSection{from: f.rel, why: memline.Aged, lines: out})
		}
	}
	return moved
}

// goneLines are the facts the change removed from the hot files, by id:
// those of before whose id no file holds after it.
func goneLines(files []*editedFile) map[string]goneLine {
	after := idSet{}
	for _, f := range files {
		after.addFiles(f.after)
	}
	out := map[string]goneLine{}
	for _, f := range files {
		for _, i := range f.before.Facts() {
			if l := f.before.Items[i].Line; l.ID != "" && !after[l.ID] {
				out[l.ID] = goneLine{rel: f.rel, line: l}
			}
		}
	}
	return out
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

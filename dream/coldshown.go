package dream

import (
	"slices"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// Phase 1 sees the scope's files whole, and of cold memory the few lines
// that may concern the batch: the current ones (none another replaced)
// that share a word with its entries, the most words first. A correction
// found there is named by id, as one of the files would be: an office
// moved to cold memory for the budget months ago is still the value a new
// one replaces. The words only choose what the model is shown; what a
// correction replaces is the id the model names.

// coldShownMax bounds the cold lines phase 1 is shown.
const coldShownMax = 30

// coldShownHeading opens them in phase 1's prompt.
const coldShownHeading = "## Cold memory that may concern these entries (lines that left the files; not shown to chat turns)"

// coldLine is a line of cold memory as its file holds it.
type coldLine struct {
	raw  string
	line memline.Line
}

// coldShown picks the lines of cold (the scope's cold memory) phase 1 is
// shown for entries.
func coldShown(cold []byte, entries []history.Entry) []coldLine {
	if len(cold) == 0 {
		return nil
	}
	batch := wordSet{}
	for _, e := range entries {
		for w := range words(e.Content) {
			batch[w] = true
		}
	}
	type cand struct {
		line  coldLine
		score int
		at    int
	}
	var cands []cand
	f := memline.ParseFile(cold)
	for n, i := range f.Facts() {
		l := f.Items[i].Line
		if l.Superseded() {
			continue
		}
		if score := words(l.Text).common(batch); score > 0 {
			cands = append(cands, cand{coldLine{f.Items[i].Raw, l}, score, n})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if a.score != b.score {
			return b.score - a.score
		}
		return b.at - a.at // the later in the file (the newer) first
	})
	var out []coldLine
	for _, c := range cands[:min(len(cands), coldShownMax)] {
		out = append(out, c.line)
	}
	return out
}

// coldShownFor is the cold lines phase 1 is shown (forAnalysis chose them).
func (b *batch) coldShownFor() []memline.Line { return b.coldLines }

// namedLine is a hot fact that has no id in its file, which phase 1 was
// shown with one all the same (showIDs), so that a correction may name it
// like any other line.
type namedLine struct {
	rel  string
	raw  string       // the line as the file holds it
	line memline.Line // with the id it was shown with
}

// showIDs returns the files as phase 1 is shown them: every fact with an
// id — those that have none in their file given one for this Dream only
// (taken: the scope's ids, cold memory's too) — and the facts it named
// so. A line keeps no id it was only shown with until Dream stamps it, so
// a Dream's commit shows its own changes alone.
func showIDs(files []memFile, taken idSet) ([]memFile, map[string]namedLine) {
	named := map[string]namedLine{}
	out := make([]memFile, len(files))
	for i, mf := range files {
		out[i] = mf
		f := memline.ParseFile([]byte(mf.text))
		changed := false
		for _, j := range f.Facts() {
			it := &f.Items[j]
			if it.Line.ID != "" {
				continue
			}
			l := it.Line
			l.ID = memline.NewID(l.Seed(), taken.has)
			taken[l.ID] = true
			named[l.ID] = namedLine{rel: mf.rel, raw: it.Raw, line: l}
			it.SetLine(l)
			changed = true
		}
		if changed {
			out[i].text = string(f.Bytes())
		}
	}
	return out, named
}

// forAnalysis is the files as phase 1 is shown them (showIDs), and the
// lines of cold memory it is shown with them (coldShown; those without an
// id given one the same way), recording the lines it named for phase 2
// and the upkeep.
func (b *batch) forAnalysis(files []memFile) []memFile {
	taken := idSet{}
	for _, mf := range files {
		taken.addFiles(memline.ParseFile([]byte(mf.text)))
	}
	cold, err := b.stage.read(memory.Cold)
	if err != nil {
		b.d.log.Warn("cold memory could not be read for the analysis; it is shown none", "scope", string(b.scope), "err", err)
	}
	taken.addFiles(memline.ParseFile(cold))
	shown, named := showIDs(files, taken)
	b.coldLines = nil
	for _, cl := range coldShown(cold, b.entries) {
		l := cl.line
		if l.ID == "" {
			l.ID = memline.NewID(l.Seed(), taken.has)
			taken[l.ID] = true
			named[l.ID] = namedLine{rel: memory.Cold, raw: cl.raw, line: l}
		}
		b.coldLines = append(b.coldLines, l)
	}
	b.named = named
	return shown
}

// namedIn lists the lines without an id in their file that findings name
// as replaced (for phase 2, which sees the files as they are).
func (b *batch) namedIn(findings []finding) []namedLine {
	var out []namedLine
	seen := map[string]bool{}
	for _, f := range findings {
		for _, id := range f.Replaces {
			if nl, ok := b.named[id]; ok && !seen[id] {
				seen[id] = true
				out = append(out, nl)
			}
		}
	}
	return out
}

package dream

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// A scope's memory as the deep Dream measures and trims it: each file
// parsed into lines, what the lines cost in a prompt, and the mechanical
// step that moves the least important, oldest lines out until the files
// are within their target.

// deepFile is one memory file of the scope as the deep Dream works on it.
type deepFile struct {
	rel  string
	data []byte // as read
	f    *memline.File
}

// deepFileIDs prefixes the numbered lines of each file in the prompt.
var deepFileIDs = map[string]string{fileSoul: "S", fileUser: "U", fileMemory: "M"}

// readDeepFiles reads scope s's hot files as they stand, through the
// memory (never through a link), to measure them.
func (d *Dreamer) readDeepFiles(s audience.Scope) ([]*deepFile, error) {
	var out []*deepFile
	for _, rel := range []string{fileSoul, fileUser, fileMemory} {
		b, err := d.mem.Read(s, rel)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
		out = append(out, &deepFile{rel: rel, data: b, f: memline.ParseFile(b)})
	}
	return out, nil
}

// readDeepFiles reads the hot files of the Dream's working copy ws.
func readDeepFiles(ws *workspace.Root) ([]*deepFile, error) {
	var out []*deepFile
	for _, rel := range []string{fileSoul, fileUser, fileMemory} {
		b, err := ws.ReadFile(rel)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
		out = append(out, &deepFile{rel: rel, data: b, f: memline.ParseFile(b)})
	}
	return out, nil
}

// hotTokens is what scope s's files cost in a prompt, counted as the
// prompt counts them (memory.Cost).
func (d *Dreamer) hotTokens(s audience.Scope, files []*deepFile) int {
	texts := make([]string, len(files))
	for i, f := range files {
		texts[i] = memory.ShownText(s, f.rel, f.f.Bytes())
	}
	return memory.Cost(d.count, texts...)
}

// lineTokens is what one line costs in a prompt (memory.LineCost).
func (d *Dreamer) lineTokens(it memline.Item) int {
	text, _ := memory.ShownLine(it)
	return memory.LineCost(d.count, text)
}

// moveToBudget moves the lowest-priority, oldest facts of USER.md and
// memory/MEMORY.md (an undated line counts as the oldest; permanent ones
// never) to cold memory until the files hold at most target tokens.
func (d *Dreamer) moveToBudget(s audience.Scope, files []*deepFile, target int) []coldSection {
	type cand struct {
		f    *deepFile
		item int
		line memline.Line
	}
	var cands []cand
	for _, f := range files {
		if f.rel == fileSoul {
			continue
		}
		for _, i := range f.f.Facts() {
			l := f.f.Items[i].Line
			if l.Effective() != memline.Permanent {
				cands = append(cands, cand{f, i, l})
			}
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if ra, rb := a.line.Effective().Rank(), b.line.Effective().Rank(); ra != rb {
			return rb - ra // ephemeral first
		}
		return strings.Compare(a.line.Date, b.line.Date) // "" (undated) first
	})
	size := d.hotTokens(s, files)
	gone := map[*deepFile]map[int]bool{}
	for _, c := range cands {
		if size <= target {
			break
		}
		size -= d.lineTokens(c.f.f.Items[c.item])
		if gone[c.f] == nil {
			gone[c.f] = map[int]bool{}
		}
		gone[c.f][c.item] = true
	}
	var out []coldSection
	for _, f := range files {
		if len(gone[f]) == 0 {
			continue
		}
		sec := coldSection{from: f.rel, why: memline.Budget}
		kept := f.f.Items[:0:0]
		for i, it := range f.f.Items {
			if gone[f][i] {
				sec.lines = append(sec.lines, it.Line)
				continue
			}
			kept = append(kept, it)
		}
		f.f.Items = kept
		out = append(out, sec)
	}
	return out
}

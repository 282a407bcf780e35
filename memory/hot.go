package memory

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/memory/memline"
	workspacetemplate "github.com/dreamgate/dreamgate/workspace-template"
)

// Hot memory is what a prompt shows of a scope: its hot files, each line
// as ShownLine writes it, within a budget of tokens per scope. What a
// scope costs there is counted one way, by Cost, for the prompt that fits
// memory into its budget, the memory page's gauge and the deep Dream that
// keeps a scope within it: if the two counted differently, a deep Dream
// would stop short of what the prompt needs, or run again at once.

// Counter counts the tokens of a text (the project's one tokenizer,
// internal/tokens through the consolidator's Counter).
type Counter interface {
	Count(s string) int
}

// ShownLine is one line of a memory file as a prompt shows it: a fact
// with a comment of ours without it and followed by its date
// (memline.Line.Shown); anything else as written. dated says whether a
// date was added. A superseded fact is not shown at all (Superseded).
func ShownLine(it memline.Item) (text string, dated bool) {
	if !it.Fact || !it.Line.HasComment() {
		return it.Raw, false
	}
	return it.Line.Shown()
}

// Superseded reports a fact another line replaced: it is no longer
// current, so no prompt shows it (a hand edit or a restore may leave one
// in a hot file) and it costs nothing there.
func Superseded(it memline.Item) bool { return it.Fact && it.Line.Superseded() }

// LineCost is what a line shown as text costs in a prompt: its tokens and
// one for its line break, which bounds the tokens of the lines joined.
func LineCost(c Counter, text string) int { return c.Count(text) + 1 }

// Cost is what the texts (files as ShownText gives them) cost in a prompt
// when every line is shown.
func Cost(c Counter, texts ...string) int {
	n := 0
	for _, text := range texts {
		if text == "" {
			continue
		}
		for _, it := range memline.ParseFile([]byte(text)).Items {
			if Superseded(it) {
				continue
			}
			line, _ := ShownLine(it)
			n += LineCost(c, line)
		}
	}
	return n
}

// ShownText is scope s's hot file rel, whose content is data, as a prompt
// shows it: without the white space around it, and "" when it is still as
// the template made it — an empty skeleton costs tokens and says nothing —
// but for the default scope's SOUL.md, the operator's voice.
func ShownText(s audience.Scope, rel string, data []byte) string {
	if (s != audience.Default || rel != Soul) && SameAsTemplate(rel, data) {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// SameAsTemplate reports whether data is the template's file rel, white
// space around it aside.
func SameAsTemplate(rel string, data []byte) bool {
	tpl, err := workspacetemplate.Read(rel)
	return err == nil && bytes.Equal(bytes.TrimSpace(tpl), bytes.TrimSpace(data))
}

// TemplateText is the template's file rel as a prompt shows it, "" when
// the template has none.
func TemplateText(rel string) string {
	tpl, err := workspacetemplate.Read(rel)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(tpl))
}

// ShownFile is one hot file of a scope as a prompt shows it.
type ShownFile struct {
	Rel string
	// Text is ShownText's: "" when the file is missing, unreadable or
	// still the template's.
	Text string
	// Stamp is the version of the file it was read from
	// (Files.Version), "" when missing.
	Stamp string
}

type fileKey struct {
	scope audience.Scope
	rel   string
}

type shownFile struct {
	stamp, text string
}

// maxHotFiles bounds the files Hot keeps: a gateway may hear thousands of
// DMs, each with a scope of its own.
const maxHotFiles = 1024

// Hot returns scope s's hot files, in HotFiles order, as a prompt shows
// them. A file is read again only when its stamp changed, so a turn costs
// a few stat calls, not reads. A file that cannot be read shows as empty:
// one LeftOut (a link) is told of in the log, once; for any other the
// error says why.
func (m *Memory) Hot(s audience.Scope) ([]ShownFile, error) {
	var errs []error
	out := make([]ShownFile, 0, 3)
	for _, rel := range HotFiles() {
		f, err := m.hotFile(s, rel)
		m.noteLeftOut(s, rel, err)
		if err != nil && !LeftOut(err) {
			errs = append(errs, fmt.Errorf("%s: %w", rel, err))
		}
		out = append(out, f)
	}
	return out, errors.Join(errs...)
}

func (m *Memory) hotFile(s audience.Scope, rel string) (ShownFile, error) {
	f := ShownFile{Rel: rel}
	v, err := m.files.Version(s, rel)
	if err != nil || v.Missing() {
		return f, err
	}
	stamp := v.String()
	key := fileKey{s, rel}
	m.mu.Lock()
	c, ok := m.hot[key]
	m.mu.Unlock()
	if ok && c.stamp == stamp {
		f.Text, f.Stamp = c.text, stamp
		return f, nil
	}
	data, err := m.files.ReadFile(s, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	f.Text, f.Stamp = ShownText(s, rel, data), stamp
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.hot) >= maxHotFiles {
		clear(m.hot) // read again as turns come
	}
	m.hot[key] = shownFile{stamp: stamp, text: f.Text}
	return f, nil
}

// HotCost is what scope s's hot memory costs in a prompt when every line
// is shown.
func (m *Memory) HotCost(s audience.Scope, c Counter) (int, error) {
	files, err := m.Hot(s)
	texts := make([]string, len(files))
	for i, f := range files {
		texts[i] = f.Text
	}
	return Cost(c, texts...), err
}

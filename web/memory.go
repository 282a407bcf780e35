package web

import (
	"errors"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// The memory of a scope as it is now: its memory files line by line (each
// fact with its priority, the date it was last confirmed and a link to the
// history entries it came from), its cold memory a page at a time, and what
// its hot memory costs in a prompt against its budget. A scope the viewer
// may not read is answered as one that does not exist.

// coldPageLines bounds the cold-memory lines one page shows: cold memory
// only grows.
const coldPageLines = 200

// scopesPageSize bounds the scopes the operator's index lists at once (a
// large team has a scope per person).
const scopesPageSize = 200

type scopeLink struct {
	Name, Label, URL string
}

type memoryIndexData struct {
	Scopes     []scopeLink
	Page, More int
}

type memoryData struct {
	Name, Label string
	Files       []fileView
	Cold        fileView
	// ColdPage is the page of cold memory shown (from 1) of ColdPages.
	ColdPage, ColdPages int
	Usage               *usageView
}

// usageView is the budget gauge: what the scope's memory costs in a
// prompt against its budget, the meter's warning marks at 80% (where a
// deep Dream starts) and 100%.
type usageView struct {
	gateway.HotUsage
	Low, High int
}

// fileView is one memory file, line by line.
type fileView struct {
	Rel, Title string
	Exists     bool
	// LeftOut: the file is there but memory never reads it (a symbolic
	// link: memory.LeftOut); the page shows the scope's other files.
	LeftOut bool
	Lines   []lineView
}

// lineView is one line of a memory file as the page shows it.
type lineView struct {
	// N is its line number in the file, from 1 (the anchor #<file>-L<n>).
	N int
	// Kind is "heading", "fact", "text", "code" or "blank".
	Kind  string
	Level int // a heading's
	Text  string
	// A fact's metadata: Priority (effective), Date ("" undated), and
	// Sources, the URL of its history entries ("" when none recorded).
	Priority, Date, Sources string
	NSources                int
	Indent                  bool
	// Superseded, for a line a later one replaced, says so and what
	// stands for it now (NowURL links it when it is a hot file's line);
	// Why, for a cold line, when and why it left hot memory.
	Superseded, NowURL, Why string
}

// viewerScopes are the scopes the viewer reads, widest first: for the
// operator every scope there is (memory.Scopes).
func (s *Server) viewerScopes(v *Viewer) ([]audience.Scope, error) {
	scopes, all := v.readable(s.deps.Memory)
	if !all {
		return scopes, nil
	}
	return s.deps.Memory.Scopes()
}

func (s *Server) memoryIndex(w http.ResponseWriter, r *http.Request, v *Viewer) {
	scopes, err := s.viewerScopes(v)
	if err != nil {
		s.failed(w, r, v, "list of memory scopes", err)
		return
	}
	if len(scopes) == 1 {
		http.Redirect(w, r, scopeURL(scopes[0]), http.StatusSeeOther)
		return
	}
	page := max(1, atoi(r.URL.Query().Get("page")))
	from := min((page-1)*scopesPageSize, len(scopes))
	to := min(from+scopesPageSize, len(scopes))
	d := memoryIndexData{Page: page}
	nm := s.namer(r)
	defer nm.done()
	for _, sc := range scopes[from:to] {
		d.Scopes = append(d.Scopes, scopeLink{Name: scopeName(sc), Label: s.scopeLabel(nm, sc), URL: scopeURL(sc)})
	}
	if to < len(scopes) {
		d.More = page + 1
	}
	s.render(w, r, v, http.StatusOK, "Memory", "memory", memoryIndexPage(d))
}

func (s *Server) memoryScope(w http.ResponseWriter, r *http.Request, v *Viewer) {
	sc, ok := parseScopeName(r.PathValue("scope"))
	if !ok || !v.mayRead(sc, s.deps.Memory) {
		s.notFound(w, r, v, "There is no such memory scope.")
		return
	}
	nm := s.namer(r)
	defer nm.done()
	d := memoryData{Name: scopeName(sc), Label: s.scopeLabel(nm, sc)}
	facts, err := s.deps.Memory.Facts(sc)
	if err != nil {
		s.failed(w, r, v, "memory file", err)
		return
	}
	for _, rel := range memory.HotFiles() {
		f, err := s.readMemoryFile(sc, rel, facts)
		if err != nil {
			s.failed(w, r, v, "memory file", err)
			return
		}
		d.Files = append(d.Files, f)
	}
	d.ColdPage = max(1, atoi(r.URL.Query().Get("cold")))
	cold, pages, err := s.readCold(sc, d.ColdPage, facts)
	if err != nil {
		s.failed(w, r, v, "cold memory", err)
		return
	}
	d.Cold, d.ColdPages = cold, pages
	d.ColdPage = min(d.ColdPage, pages) // past the last, the last is shown
	if s.deps.Budget != nil {
		u := s.deps.Budget.HotUsage(sc)
		d.Usage = &usageView{HotUsage: u, Low: u.Budget * 8 / 10, High: u.Budget}
	}
	s.render(w, r, v, http.StatusOK, "Memory: "+d.Label, "memory", memoryPage(d))
}

// readMemoryFile reads one of scope sc's files (rel within its folder) as
// lines; a missing file is one that does not exist yet.
func (s *Server) readMemoryFile(sc audience.Scope, rel string, facts *memory.Facts) (fileView, error) {
	f := fileView{Rel: rel, Title: fileTitle(rel)}
	data, err := s.read(sc, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if memory.LeftOut(err) {
		f.LeftOut = true
		return f, nil
	}
	if err != nil {
		return f, err
	}
	f.Exists = true
	f.Lines = lineViews(sc, rel, memline.ParseFile(data).Items, 0, facts)
	return f, nil
}

// readCold reads page (from 1) of scope sc's cold memory, and how many
// pages it has.
func (s *Server) readCold(sc audience.Scope, page int, facts *memory.Facts) (fileView, int, error) {
	f := fileView{Rel: memory.Cold, Title: "Cold memory"}
	data, err := s.read(sc, memory.Cold)
	if errors.Is(err, fs.ErrNotExist) {
		return f, 1, nil
	}
	if memory.LeftOut(err) {
		f.LeftOut = true
		return f, 1, nil
	}
	if err != nil {
		return f, 1, err
	}
	f.Exists = true
	// Only the page's lines are parsed: cold memory grows with every deep
	// Dream, and a page shows coldPageLines of it. Lines are split as
	// memline.ParseFile splits them, one item each.
	text := strings.TrimSuffix(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	lines := strings.Split(text, "\n")
	pages := max(1, (len(lines)+coldPageLines-1)/coldPageLines)
	page = min(page, pages)
	from := (page - 1) * coldPageLines
	to := min(from+coldPageLines, len(lines))
	items := memline.ParseFile([]byte(strings.Join(lines[from:to], "\n"))).Items
	f.Lines = lineViews(sc, memory.Cold, items, from, facts)
	return f, pages, nil
}

// read reads scope sc's file rel as memory shows it: a file it leaves out
// (memory.LeftOut) is told of in the log, once.
func (s *Server) read(sc audience.Scope, rel string) ([]byte, error) {
	return s.deps.Memory.Shown(sc, rel)
}

// lineViews turns items (starting at line offset+1 of their file) into
// lines for the page; a fact a later one replaced says so and what stands
// for it now (facts: the scope's), a cold one when and why it left. Code
// fences are kept as written, facts inside them included: they are not
// facts.
func lineViews(sc audience.Scope, rel string, items []memline.Item, offset int, facts *memory.Facts) []lineView {
	out := make([]lineView, 0, len(items))
	fence := false
	for i, it := range items {
		lv := lineView{N: offset + i + 1, Text: it.Raw}
		trimmed := strings.TrimSpace(it.Raw)
		switch {
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = !fence
			lv.Kind = "code"
		case fence:
			lv.Kind = "code"
		case trimmed == "":
			lv.Kind = "blank"
		case strings.HasPrefix(trimmed, "#"):
			lv.Kind = "heading"
			lv.Level = min(len(trimmed)-len(strings.TrimLeft(trimmed, "#")), 6)
			lv.Text = strings.TrimSpace(strings.TrimLeft(trimmed, "#"))
		case it.Fact:
			l := it.Line
			lv.Kind, lv.Text = "fact", l.Text
			lv.Priority, lv.Date = string(l.Effective()), l.Date
			lv.Indent = l.Indent != ""
			if len(l.Sources) > 0 {
				lv.NSources = len(l.Sources)
				lv.Sources = entriesURL(sc, l.Sources)
			}
			lv.Superseded = memory.SupersededNote(l, facts)
			if now, ok := facts.Now(l); ok && now.File != memory.Cold {
				lv.NowURL = "#" + anchor(now.File, now.N)
			}
			if rel == memory.Cold {
				lv.Why = memory.Why(l)
			}
		default:
			lv.Kind = "text"
		}
		out = append(out, lv)
	}
	return out
}

// entriesURL links the history entries a line came from.
func entriesURL(sc audience.Scope, cursors []int) string {
	parts := make([]string, len(cursors))
	for i, c := range cursors {
		parts[i] = strconv.Itoa(c)
	}
	return "/entries/" + scopeName(sc) + "?c=" + strings.Join(parts, ",")
}

func fileTitle(rel string) string {
	switch rel {
	case memory.Soul:
		return "SOUL.md — voice and character"
	case memory.User:
		return "USER.md — the people"
	case memory.Long:
		return "MEMORY.md — facts and context"
	}
	return rel
}

// scopeLabel says whose a scope is, in words (memory.Label, as the
// operator is told: the page names the scope in its URL), opening a page's
// title.
// With nm, the person's or channel's name the platform gives follows.
func (s *Server) scopeLabel(nm *namer, sc audience.Scope) string {
	l := s.deps.Memory.Label(sc, audience.Audience{})
	l = strings.ToUpper(l[:1]) + l[1:]
	if name := nm.scope(sc); name != "" {
		l += " — " + name
	}
	return l
}

// maxEntries bounds the cursors one provenance page looks up: a line keeps
// at most memline.MaxSources.
const maxEntries = 50

type entriesData struct {
	Name, Label, Back string
	Entries           []entryView
	// Missing counts the cursors asked for that are not shown: no longer
	// in the archive (compacted), or not of this scope.
	Missing int
}

type entryView struct {
	Cursor       int
	Timestamp    string
	Conversation string
	// ConversationName is its channel's name on the platform ("" none).
	ConversationName string
	// Messages names the archived messages it was made from ("" unknown).
	Messages string
	Content  string
}

// entries shows the history entries a memory line came from: when they
// were archived, from which conversation, and what they say. Only entries
// of the scope the line is in are shown (Dream writes a scope's lines from
// its own entries alone); any other cursor, like one compacted away,
// counts as not shown.
func (s *Server) entries(w http.ResponseWriter, r *http.Request, v *Viewer) {
	sc, ok := parseScopeName(r.PathValue("scope"))
	if !ok || !v.mayRead(sc, s.deps.Memory) {
		s.notFound(w, r, v, "There is no such memory scope.")
		return
	}
	var cursors []int
	for p := range strings.SplitSeq(r.URL.Query().Get("c"), ",") {
		c, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || c <= 0 || slices.Contains(cursors, c) {
			continue
		}
		cursors = append(cursors, c)
		if len(cursors) == maxEntries {
			break
		}
	}
	if len(cursors) == 0 {
		s.notFound(w, r, v, "No history entry was asked for.")
		return
	}
	nm := s.namer(r)
	defer nm.done()
	d := entriesData{Name: scopeName(sc), Label: s.scopeLabel(nm, sc), Back: scopeURL(sc)}
	var found []history.Entry
	if s.deps.History != nil {
		var err error
		if found, err = s.deps.History.Entries(cursors...); err != nil {
			s.failed(w, r, v, "history archive", err)
			return
		}
	}
	for _, e := range found {
		if e.Scope != sc {
			continue
		}
		ev := entryView{Cursor: e.Cursor, Timestamp: e.Timestamp, Conversation: e.SessionKey, Content: e.Content,
			ConversationName: nm.conversation(e.SessionKey, e.Scope)}
		if src, ok := e.Source(); ok {
			ev.Messages = "messages " + strconv.Itoa(src.From+1) + "–" + strconv.Itoa(src.To) + " of the conversation"
		}
		d.Entries = append(d.Entries, ev)
	}
	d.Missing = len(cursors) - len(d.Entries)
	s.render(w, r, v, http.StatusOK, "Where this came from", "memory", entriesPage(d))
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 1_000_000 {
		return 0
	}
	return n
}

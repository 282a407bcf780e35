package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/memory"
)

// Search is the recall search, over what the viewer's scopes hold: the
// archive's entries, the conversations' archived messages and cold
// memory. The scopes searched are the viewer's, never the query's: a word
// planted in another scope is not found here.

// searchLimit is how many matches a search shows.
const searchLimit = 30

// searchTimeout bounds a search: the index may be catching up.
const searchTimeout = 5 * time.Second

type searchData struct {
	Query      string
	Scope      string
	Scopes     []scopeLink
	Matches    []matchView
	Searched   bool
	Incomplete bool
	Off        string
}

type matchView struct {
	Kind, Scope, Label, Conversation, ConversationName, Who, Text, Link string
	Time                                                                time.Time
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, v *Viewer) {
	q := r.URL.Query()
	d := searchData{Query: strings.TrimSpace(q.Get("q")), Scope: q.Get("scope")}
	if len(d.Query) > 500 {
		d.Query = d.Query[:500]
	}
	scopes, err := s.viewerScopes(v)
	if err != nil {
		s.failed(w, r, v, "list of memory scopes", err)
		return
	}
	if len(scopes) > 1 && len(scopes) <= scopesPageSize {
		for _, sc := range scopes {
			d.Scopes = append(d.Scopes, scopeLink{Name: scopeName(sc), Label: s.scopeLabel(nil, sc)})
		}
	}
	if d.Scope != "" {
		sc, ok := parseScopeName(d.Scope)
		if !ok || !v.mayRead(sc, s.deps.Memory) {
			s.notFound(w, r, v, "There is no such memory scope.")
			return
		}
		scopes = []audience.Scope{sc}
	}
	if s.deps.Search == nil {
		d.Off = "Search is not available: this gateway has no recall index."
		s.render(w, r, v, http.StatusOK, "Search", "search", searchPage(s.clock(), d))
		return
	}
	if d.Query != "" {
		ctx, cancel := context.WithTimeout(r.Context(), searchTimeout)
		defer cancel()
		res, err := s.deps.Search.Search(ctx, d.Query, scopes, searchLimit)
		if err != nil {
			s.failed(w, r, v, "recall index", err)
			return
		}
		nm := s.namer(r)
		defer nm.done()
		d.Searched, d.Incomplete = true, res.Incomplete
		for _, m := range res.Matches {
			if !v.mayRead(m.Scope, s.deps.Memory) {
				// The index answers for the scopes it was given alone;
				// this is the page's own guarantee, not a second guess.
				continue
			}
			mv := matchView{Kind: m.Kind, Scope: scopeName(m.Scope), Label: s.scopeLabel(nm, m.Scope),
				Conversation: m.Conversation, ConversationName: nm.conversation(m.Conversation, m.Scope),
				Who: m.Who, Text: m.Text, Time: m.Time}
			switch m.Kind {
			case "history":
				mv.Link = entriesURL(m.Scope, []int{m.Cursor})
			case "cold":
				mv.Link = scopeURL(m.Scope) + "?cold=" + strconv.Itoa((m.Line-1)/coldPageLines+1) + "#" + anchor(memory.Cold, m.Line)
			}
			d.Matches = append(d.Matches, mv)
		}
	}
	s.render(w, r, v, http.StatusOK, "Search", "search", searchPage(s.clock(), d))
}

// anchor is a line's id on the memory page.
func anchor(rel string, n int) string {
	return strings.NewReplacer("/", "-", ".", "-").Replace(rel) + "-L" + strconv.Itoa(n)
}

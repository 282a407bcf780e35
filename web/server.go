package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/store"
)

//go:embed static/*
var assets embed.FS

// Config is the page's settings; cmd fills it from config web.* and the
// rest of the config.
type Config struct {
	// Key signs sessions, sign-in links and form tokens: at least 32
	// random bytes, kept by cmd in the state directory. A new key ends
	// every session and link.
	Key []byte
	// Token is the operator's access token, typed on the sign-in page or
	// sent as a bearer token. "" means none: the operator then signs in
	// with a one-time link (Link, made with Key by `dreamgate web-link`
	// or /web-link in the terminal chat). Either way a secret.
	Token string
	// BaseURL is where browsers reach the page, for the links /web-link
	// sends (behind a proxy, the proxy's address).
	BaseURL string
	// Admins are config admins ("slack:U012AB3CD"): people who may
	// restore. The operator always may.
	Admins []string
	// DreamCron and DreamTimezone are Dream's schedule, for the overview
	// ("" when Dream is off).
	DreamCron, DreamTimezone string
	// SessionTTL is how long a sign-in lasts (12 hours); LinkTTL how long
	// a link from /web-link may be used to sign in (15 minutes).
	SessionTTL, LinkTTL time.Duration
	// UsedLinks records the sign-in links used (each signs in once) where
	// every process and a restart see them: the PostgreSQL engine's. Nil
	// keeps them in this process's memory, and a link made before the
	// page's start is then refused.
	UsedLinks store.Nonces
	// Location is the time zone times are shown in (time.Local).
	Location *time.Location
	Now      func() time.Time
	Logger   *slog.Logger
}

// Deps are what the pages read, each through the narrow interface it
// needs; cmd passes the real ones. A nil one leaves its part out, saying
// so.
type Deps struct {
	// Memory is the workspace's memory: its scopes (the operator's page
	// lists them all), who reads which (with memory shared, everyone the
	// default scope, as in chat), their labels and files. nil shows no
	// memory.
	Memory *memory.Memory
	// Repo is the memory repository (*gitstore.Store); nil when it cannot
	// be opened.
	Repo Repo
	// Dream is the Dreamer (nil when Dream is off; DreamOff then says
	// why, "" meaning off in the config).
	Dream    Dream
	DreamOff string
	// History reads the archive entries memory lines came from
	// (*history.Store).
	History Entries
	// Budget is the prompt's hot-memory budget per scope
	// (*gateway.PromptBuilder); nil shows no gauge.
	Budget Budget
	// Names names the people and channels of the ids shown (the running
	// Slack and Discord adapters); nil: ids alone.
	Names Names
	// Search is the recall index; nil: the search page says it is off.
	Search Searcher
	// Health is what /healthz reports; Usage the tokens used by purpose.
	Health func() Health
	Usage  func() map[string]llm.Usage
}

// Repo is what the timeline reads of the memory repository. Errors wrap
// gitstore's sentinels.
type Repo interface {
	// LogBefore lists the newest n commits older than before ("" HEAD)
	// that match prefix and keep, newest first.
	LogBefore(before string, n int, prefix string, keep func(path string) bool) ([]gitstore.Commit, error)
	// Show is a commit and its diff cut to keep.
	Show(rev string, keep func(path string) bool) (gitstore.Commit, gitstore.Diff, error)
}

// Dream is what the pages need of the Dreamer.
type Dream interface {
	Status(scopes dream.Scopes) dream.Status
	PlanRestore(rev string, scopes dream.Scopes) (dream.RestorePlan, error)
	Restore(rev string, scopes dream.Scopes, opts dream.RestoreOptions) (dream.RestoreResult, error)
}

// Entries reads archive entries by cursor; a cursor no longer in the
// archive (compacted) is left out.
type Entries interface {
	Entries(cursors ...int) ([]history.Entry, error)
}

// Budget says what a scope's memory costs in a prompt.
type Budget interface {
	HotUsage(s audience.Scope) gateway.HotUsage
}

// Searcher searches what was said, within the readable scopes only.
type Searcher interface {
	Search(ctx context.Context, query string, readable []audience.Scope, limit int) (SearchResults, error)
}

// SearchResults are a search's matches, best first.
type SearchResults struct {
	Matches []SearchMatch
	// Incomplete: the index is still being built for the first time.
	Incomplete bool
}

// SearchMatch is one thing the search found.
type SearchMatch struct {
	Scope audience.Scope
	// Kind is "history" (an archive entry), "message" (an archived
	// message of a conversation) or "cold" (a cold-memory line).
	Kind         string
	Time         time.Time
	Conversation string
	// Cursor is an archive entry's, Line a cold-memory line's number.
	Cursor, Line int
	Who          string
	Text         string
}

// Server serves the pages.
type Server struct {
	signer
	cfg  Config
	deps Deps
	log  *slog.Logger
	mux  *http.ServeMux
	// pages is mux behind the cross-origin protection (crossOrigin).
	pages http.Handler
	// attempts counts failed sign-ins.
	attempts attempts
	// started is when this server was made (Unix seconds): unless the
	// used links are kept beyond this process (linksKept: Config.UsedLinks
	// was given), a link made before it, by an earlier process that may
	// have seen it used, signs nobody in.
	started   int64
	links     store.Nonces
	linksKept bool
}

// Defaults of Config.
const (
	DefaultSessionTTL = 12 * time.Hour
	DefaultLinkTTL    = 15 * time.Minute
)

// New builds the server. It refuses a Key shorter than 32 bytes.
func New(cfg Config, deps Deps) (*Server, error) {
	if len(cfg.Key) < 32 {
		return nil, errors.New("web: the signing key must be at least 32 bytes")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.LinkTTL <= 0 {
		cfg.LinkTTL = DefaultLinkTTL
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if deps.Memory == nil {
		deps.Memory = memory.New(nil, false)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, deps: deps, log: cfg.Logger, started: cfg.Now().Unix(), links: cfg.UsedLinks, linksKept: cfg.UsedLinks != nil}
	if s.links == nil {
		s.links = &store.MemoryNonces{}
	}
	s.signer = signer{key: cfg.Key, clock: s.now}
	cop, err := crossOrigin(cfg.BaseURL, cfg.Logger)
	if err != nil {
		return nil, err
	}
	s.routes()
	s.pages = cop.Handler(s.mux)
	return s, nil
}

func (s *Server) now() time.Time { return s.cfg.Now() }

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /signin", s.signInPage)
	m.HandleFunc("POST /signin", s.signIn)
	m.HandleFunc("POST /signout", s.signed(s.signOut))
	m.HandleFunc("GET /{$}", s.signed(s.overview))
	m.HandleFunc("GET /memory", s.signed(s.memoryIndex))
	m.HandleFunc("GET /memory/{scope}", s.signed(s.memoryScope))
	m.HandleFunc("GET /entries/{scope}", s.signed(s.entries))
	m.HandleFunc("GET /timeline", s.signed(s.timeline))
	m.HandleFunc("GET /commit", s.signed(s.openCommit))
	m.HandleFunc("GET /commit/{sha}", s.signed(s.commit))
	m.HandleFunc("GET /restore/{sha}", s.signed(s.restoreConfirm))
	m.HandleFunc("POST /restore/{sha}", s.signed(s.restore))
	m.HandleFunc("GET /search", s.signed(s.search))
	s.mux = m
}

// Handler serves the pages, with the security headers on every answer.
// Who may read what is the session's alone (viewer): no address, host
// name or missing header signs anyone in.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// No script anywhere: nothing but our own stylesheet and images
		// may load, no page may frame this one, forms post here alone.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// A sign-in link's query must never leave in a Referer.
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		s.pages.ServeHTTP(w, r)
	})
}

// signed serves h to a signed-in viewer; anyone else goes to the sign-in
// page (a form post is refused).
func (s *Server) signed(h func(http.ResponseWriter, *http.Request, *Viewer)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := s.viewer(r)
		if v == nil {
			if r.Method != http.MethodGet {
				http.Error(w, "Sign in first.", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/signin", http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost {
			if err := s.checkPost(r, v); err != nil {
				s.log.Warn("web: form refused", "path", r.URL.Path, "why", err.Error())
				http.Error(w, "This form was not sent from this page (or its sign-in ended). Open the page again and retry.", http.StatusForbidden)
				return
			}
		}
		h(w, r, v)
	}
}

// view is what the layout around every page gets.
type view struct {
	Title  string
	Nav    string // the navigation entry this page is under
	Viewer *Viewer
	// Who names the viewer in the header; SignOut offers to sign out
	// (there is a session to end).
	Who     string
	SignOut bool
	CSRF    string
}

// whoLine is the header's account of the viewer.
func (vw view) whoLine() string {
	if vw.Viewer != nil && vw.Viewer.Admin {
		return vw.Who + " · admin"
	}
	return vw.Who
}

// render writes page inside the layout. Pages are generated typed
// templates (templ, from the *.templ files beside this one): no
// reflection, so the linker keeps only the methods the program calls.
func (s *Server) render(w http.ResponseWriter, r *http.Request, v *Viewer, status int, title, nav string, page templ.Component) {
	vw := view{Title: title, Nav: nav, Viewer: v}
	if v != nil {
		vw.CSRF = s.csrfToken(v)
		vw.SignOut = !strings.HasPrefix(v.session, "bearer ")
		vw.Who = "operator"
		if !v.Operator {
			nm := s.namer(r)
			vw.Who = nm.viewer(v.Audience)
			nm.done()
		}
	}
	var buf bytes.Buffer
	if err := layout(vw, page).Render(r.Context(), &buf); err != nil {
		s.log.Error("web: render", "path", r.URL.Path, "err", err)
		http.Error(w, "The page could not be shown; the reason is in the gateway log.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// notFound is the answer to whatever does not exist for the viewer: a
// scope, commit or entry of someone else's reads exactly like one that
// does not exist at all.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request, v *Viewer, what string) {
	s.render(w, r, v, http.StatusNotFound, "Not found", "", messagePage(message{Title: "Not found", Text: what}))
}

// failed says a page could not be built, without the error's text (it may
// name paths); the log has it.
func (s *Server) failed(w http.ResponseWriter, r *http.Request, v *Viewer, what string, err error) {
	s.log.Error("web: "+what, "path", r.URL.Path, "err", err)
	s.render(w, r, v, http.StatusInternalServerError, "Unavailable", "",
		messagePage(message{Title: "Unavailable", Text: "The " + what + " could not be read; the reason is in the gateway log."}))
}

type message struct {
	Title, Text string
	// Link, when set, is where to go next.
	Link, LinkText string
}

// scopeName is a scope as URLs and pages name it (memory.Name).
func scopeName(sc audience.Scope) string { return memory.Name(sc) }

func scopeURL(sc audience.Scope) string { return "/memory/" + scopeName(sc) }

// parseScopeName reads a scope from a URL; ok is false for a name no
// scope can have.
func parseScopeName(name string) (audience.Scope, bool) {
	if name == "default" {
		return audience.Default, true
	}
	sc, err := audience.ParseScope(name)
	if err != nil || sc == audience.Default {
		return "", false
	}
	return sc, true
}

// randomID is 16 random bytes, base64url.
func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand's contract since Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

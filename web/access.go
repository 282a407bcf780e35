package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/memory"
)

// Who may read what. The rules are chat's: a person signed in with a link
// from their DM reads what that DM reads (audience.Readable: their team's
// scope and their own), the operator reads every scope. Nothing else is
// consulted: no scope name, commit or cursor in a URL widens what a viewer
// reads, and what a viewer may not read answers as what does not exist.

// Viewer is who reads a page.
type Viewer struct {
	// Operator reads every scope and may restore.
	Operator bool
	// Audience is a person's, from the link they signed in with: the
	// audience of their DM with the bot. Zero for the operator.
	Audience audience.Audience
	// Admin may restore Dream commits of the scopes they read: the
	// operator, and the people config admins lists.
	Admin bool
	// session identifies the sign-in (its cookie's value); the CSRF token
	// is bound to it. "" for the operator on loopback without a token.
	session string
}

// readable lists the scopes the viewer reads: a person's as their DM's
// prompts read (memory.Readable: the default scope alone when memory is
// shared); the operator reads all (nil with all true).
func (v Viewer) readable(mem *memory.Memory) (scopes []audience.Scope, all bool) {
	if v.Operator {
		return nil, true
	}
	return mem.Readable(v.Audience), false
}

// mayRead reports whether the viewer reads scope s.
func (v Viewer) mayRead(s audience.Scope, mem *memory.Memory) bool {
	scopes, all := v.readable(mem)
	return all || slices.Contains(scopes, s)
}

// keep is the path filter of the memory repository for the viewer: nil
// (every file) for the operator, else the files of their scopes.
func (v Viewer) keep(mem *memory.Memory) func(string) bool {
	scopes, all := v.readable(mem)
	if all {
		return nil
	}
	return func(p string) bool {
		s, ok := audience.ScopeOfPath(p)
		return ok && slices.Contains(scopes, s)
	}
}

// dreamScopes are the viewer's scopes as Dream takes them.
func (v Viewer) dreamScopes(mem *memory.Memory) dream.Scopes {
	scopes, all := v.readable(mem)
	if all {
		return dream.AllScopes()
	}
	return dream.OnlyScopes(scopes...)
}

// who names the viewer for a commit message and the log: the operator, or
// the person's platform and user id (never a name or a token).
func (v Viewer) who() string {
	if v.Operator {
		return "the operator"
	}
	return v.Audience.Platform + " user " + v.Audience.Person
}

// claim is what a signed value says: a session (its kind and, for a
// person, the audience) or a sign-in link, and until when.
type claim struct {
	Kind     string `json:"k"` // claimOperator, claimPerson or claimLink
	Audience string `json:"a,omitempty"`
	Expires  int64  `json:"e"`
	// Token ties an operator session to the token it was made with: a
	// new token ends the sessions of the old one.
	Token string `json:"t,omitempty"`
	// Nonce makes each session's value (and so its CSRF token) its own.
	Nonce string `json:"n,omitempty"`
}

const (
	claimOperator = "op"
	claimPerson   = "person"
	claimLink     = "link"
	// claimOperatorLink is a one-time link that signs the operator in:
	// `dreamgate web-link` on the gateway's machine, or /web-link in the
	// terminal chat, make it with the page's key.
	claimOperatorLink = "oplink"
)

// signer signs and reads the page's values (sessions, links, form
// tokens) with its key.
type signer struct {
	key   []byte
	clock func() time.Time
}

// sign writes c as base64url(json) "." base64url(mac), the mac taken over
// purpose and the payload, so a link is never taken for a session.
func (s signer) sign(purpose string, c claim) string {
	payload, _ := json.Marshal(c)
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac(purpose, p))
}

// verify reads a value sign wrote for purpose, unexpired.
func (s signer) verify(purpose, value string) (claim, error) {
	p, sig, ok := strings.Cut(value, ".")
	if !ok || len(value) > 2048 {
		return claim{}, errors.New("not a signed value")
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(purpose, p)) {
		return claim{}, errors.New("bad signature")
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return claim{}, errors.New("bad payload")
	}
	var c claim
	if err := json.Unmarshal(payload, &c); err != nil {
		return claim{}, errors.New("bad payload")
	}
	if s.clock().Unix() >= c.Expires {
		return claim{}, errors.New("expired")
	}
	return c, nil
}

func (s signer) mac(purpose, payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(purpose + "\n" + payload))
	return m.Sum(nil)
}

// tokenID is a short digest of the operator's token, which operator
// sessions carry: never the token itself.
func tokenID(token string) string {
	sum := sha256.Sum256([]byte("dreamgate web token\n" + token))
	return base64.RawURLEncoding.EncodeToString(sum[:9])
}

// SignInLink returns a link that signs a in for LinkTTL: for the audience
// of a DM with the bot (Person, or Guest, who reads their own memory
// alone), what /web-link sends to that person; for the operator (the
// terminal's audience), what /web-link answers there. The link opens a
// page whose button signs in, so a chat's link preview, which only
// fetches it, signs nobody in.
func (s *Server) SignInLink(a audience.Audience) (string, error) {
	return Link(s.cfg.Key, s.cfg.BaseURL, a, s.cfg.LinkTTL, s.now())
}

// Link is a sign-in link for a, made with the page's key as its server
// makes them, valid for ttl from now: `dreamgate web-link` makes the
// operator's this way, in a process of its own, from the key it reads in
// the state directory (so only the gateway's own account can). The page
// takes it once, and only when it was made after the page started.
func Link(key []byte, baseURL string, a audience.Audience, ttl time.Duration, now time.Time) (string, error) {
	if len(key) < 32 {
		return "", errors.New("web: the signing key must be at least 32 bytes")
	}
	c := claim{Kind: claimLink, Audience: a.String(), Expires: now.Add(ttl).Unix(), Nonce: randomID()}
	switch {
	case a.Kind == audience.Operator:
		c = claim{Kind: claimOperatorLink, Expires: c.Expires, Nonce: c.Nonce}
	case !a.Direct() || a.Validate() != nil:
		return "", errors.New("a sign-in link is for one person's direct messages, or the operator")
	}
	v := signer{key: key, clock: func() time.Time { return now }}.sign(claimLink, c)
	return strings.TrimRight(baseURL, "/") + "/signin?link=" + v, nil
}

const sessionCookie = "dreamgate_session"

// viewer finds who sent r: nil when nobody signed in. Only a secret
// signs anyone in — the token, or a session a sign-in link or the token
// started; never the address a request comes from or a header it lacks.
func (s *Server) viewer(r *http.Request) *Viewer {
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok && s.tokenMatches(t) {
			return &Viewer{Operator: true, Admin: true, session: "bearer " + tokenID(s.cfg.Token)}
		}
		return nil
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	c, err := s.verify("session", ck.Value)
	if err != nil {
		return nil
	}
	switch c.Kind {
	case claimOperator:
		if c.Token != tokenID(s.cfg.Token) {
			return nil
		}
		return &Viewer{Operator: true, Admin: true, session: ck.Value}
	case claimPerson:
		a, err := audience.ParseAudience(c.Audience)
		if err != nil || !a.Direct() {
			return nil
		}
		return &Viewer{Audience: a, Admin: s.isAdmin(a), session: ck.Value}
	}
	return nil
}

// tokenMatches compares t with the operator's token in constant time.
func (s *Server) tokenMatches(t string) bool {
	a, b := sha256.Sum256([]byte(t)), sha256.Sum256([]byte(s.cfg.Token))
	return s.cfg.Token != "" && subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// isAdmin: config admins names the person ("slack:U123"), as chat's
// /dream-restore asks.
func (s *Server) isAdmin(a audience.Audience) bool {
	return slices.Contains(s.cfg.Admins, a.Platform+":"+a.Person)
}

// startSession sets the session cookie for c and returns its value.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, c claim) {
	c.Expires = s.now().Add(s.cfg.SessionTTL).Unix()
	c.Nonce = randomID()
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: s.sign("session", c), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r),
		MaxAge: int(s.cfg.SessionTTL / time.Second),
	})
}

func (s *Server) endSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
}

// secure: the cookie is sent over HTTPS only when the page is reached so
// (TLS here, or the base URL a proxy serves).
func (s *Server) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(s.cfg.BaseURL, "https://")
}

// csrfWindow is how often a session's form token changes: a form is
// taken with the token of the window it is posted in or of the one
// before, so a token lasts at most two windows, and a new sign-in (a new
// session) makes new ones at once.
const csrfWindow = 30 * time.Minute

// csrfToken is v's form token now: a MAC of the session and the window,
// so it is valid for that sign-in alone, for a while, and unknown to any
// other site.
func (s *Server) csrfToken(v *Viewer) string { return s.csrfAt(v, s.now()) }

func (s *Server) csrfAt(v *Viewer, t time.Time) string {
	window := strconv.FormatInt(t.Unix()/int64(csrfWindow/time.Second), 10)
	return base64.RawURLEncoding.EncodeToString(s.mac("csrf", v.session+"\n"+window))
}

// checkPost refuses a form post without this sign-in's current (or last)
// CSRF token. A post from another site never gets here: the page's
// cross-origin protection (crossOrigin) refused it first.
func (s *Server) checkPost(r *http.Request, v *Viewer) error {
	got := []byte(r.PostFormValue("csrf"))
	now := s.now()
	if len(got) == 0 || !hmac.Equal(got, []byte(s.csrfAt(v, now))) && !hmac.Equal(got, []byte(s.csrfAt(v, now.Add(-csrfWindow)))) {
		return errors.New("missing, wrong or outdated CSRF token")
	}
	return nil
}

// crossOrigin is the page's cross-origin protection for every form post
// (Go's http.CrossOriginProtection: a browser's Sec-Fetch-Site, else its
// Origin against the Host asked for): a post another site made a browser
// send is refused, with the sign-in and sign-out posts too. Behind a proxy
// the browser's origin is the page's configured URL, not the address the
// page listens on, so that origin is trusted as the page's own.
func crossOrigin(baseURL string, log *slog.Logger) (*http.CrossOriginProtection, error) {
	p := http.NewCrossOriginProtection()
	if u, err := url.Parse(baseURL); err == nil && u.Scheme != "" && u.Host != "" {
		if err := p.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
			return nil, fmt.Errorf("web: the page's URL %q: %w", baseURL, err)
		}
	}
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.Warn("web: a form posted from another site refused", "path", r.URL.Path)
		http.Error(w, "This form was not sent from this page. Open the page again and retry.", http.StatusForbidden)
	}))
	return p, nil
}

// loopbackHost reports whether a host names this machine by a loopback
// address or "localhost".
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// LoopbackAddr reports whether a listen address is on loopback alone
// (127.0.0.0/8, ::1, localhost): the only addresses the page may listen on
// without a token (its sign-in links then travel over plain HTTP on this
// machine alone).
func LoopbackAddr(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil || h == "" {
		return false // ":8080" listens everywhere
	}
	return loopbackHost(h)
}

package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
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

// readable lists the scopes the viewer reads (for a person; the operator
// reads all: nil with all true).
func (v Viewer) readable(shared bool) (scopes []audience.Scope, all bool) {
	switch {
	case v.Operator:
		return nil, true
	case shared:
		// memory.scoped false: everyone's conversations read the root's
		// files, so everyone's page does.
		return []audience.Scope{audience.Default}, false
	default:
		return v.Audience.Readable(), false
	}
}

// mayRead reports whether the viewer reads scope s.
func (v Viewer) mayRead(s audience.Scope, shared bool) bool {
	scopes, all := v.readable(shared)
	return all || slices.Contains(scopes, s)
}

// keep is the path filter of the memory repository for the viewer: nil
// (every file) for the operator, else the files of their scopes.
func (v Viewer) keep(shared bool) func(string) bool {
	scopes, all := v.readable(shared)
	if all {
		return nil
	}
	return func(p string) bool {
		s, ok := audience.ScopeOfPath(p)
		return ok && slices.Contains(scopes, s)
	}
}

// dreamScopes are the viewer's scopes as Dream takes them.
func (v Viewer) dreamScopes(shared bool) dream.Scopes {
	scopes, all := v.readable(shared)
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
)

// sign writes c as base64url(json) "." base64url(mac), the mac taken over
// purpose and the payload, so a link is never taken for a session.
func (s *Server) sign(purpose string, c claim) string {
	payload, _ := json.Marshal(c)
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac(purpose, p))
}

// verify reads a value sign wrote for purpose, unexpired.
func (s *Server) verify(purpose, value string) (claim, error) {
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
	if s.now().Unix() >= c.Expires {
		return claim{}, errors.New("expired")
	}
	return c, nil
}

func (s *Server) mac(purpose, payload string) []byte {
	m := hmac.New(sha256.New, s.cfg.Key)
	m.Write([]byte(purpose + "\n" + payload))
	return m.Sum(nil)
}

// tokenID is a short digest of the operator's token, which operator
// sessions carry: never the token itself.
func tokenID(token string) string {
	sum := sha256.Sum256([]byte("dreamgate web token\n" + token))
	return base64.RawURLEncoding.EncodeToString(sum[:9])
}

// SignInLink returns a link that signs a in (the audience of a DM with the
// bot: Person, or Guest, who reads their own memory alone) for LinkTTL:
// what /web-link sends to that person. The link opens a page whose button
// signs in, so a chat's link preview, which only fetches it, signs nobody
// in.
func (s *Server) SignInLink(a audience.Audience) (string, error) {
	if s.cfg.Token == "" {
		// Without a token every request from this machine is the
		// operator's: a link would sign nobody in as themselves.
		return "", fmt.Errorf("the memory page has no web.token: %w", gateway.ErrNoWebSignIn)
	}
	if !a.Direct() || a.Validate() != nil {
		return "", errors.New("a sign-in link is for one person's direct messages")
	}
	v := s.sign(claimLink, claim{Kind: claimLink, Audience: a.String(), Expires: s.now().Add(s.cfg.LinkTTL).Unix(), Nonce: randomID()})
	return strings.TrimRight(s.cfg.BaseURL, "/") + "/signin?link=" + v, nil
}

const sessionCookie = "dreamgate_session"

// viewer finds who sent r: nil when nobody signed in.
func (s *Server) viewer(r *http.Request) *Viewer {
	if s.cfg.Token == "" {
		// Loopback without a token (New refuses anything else): whoever
		// reaches it is on this machine, as the terminal is.
		return &Viewer{Operator: true, Admin: true}
	}
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok && s.tokenMatches(t) {
			return &Viewer{Operator: true, Admin: true, session: "bearer"}
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

// csrfToken is the form token of v's session: a MAC of the session, so it
// is valid for that sign-in alone and unknown to any other site.
func (s *Server) csrfToken(v *Viewer) string {
	return base64.RawURLEncoding.EncodeToString(s.mac("csrf", v.session))
}

// checkPost refuses a form post that did not come from our own page: a
// missing or wrong CSRF token, or a browser saying it came from another
// site.
func (s *Server) checkPost(r *http.Request, v *Viewer) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return fmt.Errorf("cross-site request (Sec-Fetch-Site %s)", site)
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !sameHost(o, r.Host) {
		return errors.New("cross-origin request")
	}
	got := r.PostFormValue("csrf")
	if got == "" || !hmac.Equal([]byte(got), []byte(s.csrfToken(v))) {
		return errors.New("missing or wrong CSRF token")
	}
	return nil
}

// sameHost reports whether the Origin header names host.
func sameHost(origin, host string) bool {
	_, rest, ok := strings.Cut(origin, "://")
	return ok && strings.EqualFold(rest, host)
}

// loopbackHost reports whether a Host header names this machine by a
// loopback address or "localhost": without a token, another name is a
// page of someone else's site whose name was pointed at 127.0.0.1 (DNS
// rebinding), and is refused.
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

// proxied reports whether r came through a proxy that says so: without a
// token, a page reached through a proxy would be everyone's.
func proxied(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return true
		}
	}
	return false
}

// LoopbackAddr reports whether a listen address is on loopback alone
// (127.0.0.0/8, ::1, localhost): the only addresses the page may listen on
// without a token.
func LoopbackAddr(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil || h == "" {
		return false // ":8080" listens everywhere
	}
	return loopbackHost(h)
}

package web

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
)

// Signing in. The operator types the token (config web.token) once, or
// follows a one-time link `dreamgate web-link` printed on the gateway's
// machine (or /web-link in its terminal chat); a person follows the link
// /web-link sent to their DM. A link opens a page whose button signs in
// (a chat's link preview only fetches the link, so it signs nobody in).
// Either way a session cookie follows, HttpOnly and SameSite=Strict,
// signed with the page's key, until SessionTTL or sign-out.

type signInData struct {
	// Who is whom a pending sign-in link signs in ("" none); Operator
	// says it is the operator.
	Who      string
	Operator bool
	// Token: the operator's token form is shown (web.token is set).
	Token bool
	// Problem says why the last attempt failed.
	Problem string
}

// linkCookie holds a sign-in link between the page it opens and the
// button's post, so the link's value is never written into the page.
const linkCookie = "dreamgate_link"

const badLink = "This sign-in link has expired, was used already, or is not valid. Ask for a new one: /web-link in a direct message with the bot (the operator: dreamgate web-link on the gateway's machine)."

func (s *Server) signInPage(w http.ResponseWriter, r *http.Request) {
	form := signInData{Token: s.cfg.Token != ""}
	if link := r.URL.Query().Get("link"); link != "" {
		who, _, err := s.readLink(link)
		if err != nil {
			form.Problem = badLink
			s.render(w, r, nil, http.StatusUnauthorized, "Sign in", "", signInPage(form))
			return
		}
		http.SetCookie(w, &http.Cookie{Name: linkCookie, Value: link, Path: "/signin", MaxAge: int(s.cfg.LinkTTL / time.Second),
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
		name := who.name
		if a, err := audience.ParseAudience(who.session.Audience); err == nil && who.session.Kind == claimPerson {
			nm := s.namer(r)
			name = nm.viewer(a)
			nm.done()
		}
		s.render(w, r, nil, http.StatusOK, "Sign in", "", signInPage(signInData{Who: name, Operator: who.session.Kind == claimOperator}))
		return
	}
	s.render(w, r, nil, http.StatusOK, "Sign in", "", signInPage(form))
}

// linkHolder is whom a sign-in link signs in: the session it starts and
// a name for the page and the log.
type linkHolder struct {
	session claim
	name    string
}

// readLink is whom a sign-in link signs in, and the link's own claim
// (its nonce and expiry, by which it is used once).
func (s *Server) readLink(link string) (linkHolder, claim, error) {
	c, err := s.verify(claimLink, link)
	if err != nil || c.Nonce == "" {
		return linkHolder{}, c, errors.New("not a valid link")
	}
	var who linkHolder
	switch c.Kind {
	case claimOperatorLink:
		who = linkHolder{session: claim{Kind: claimOperator, Token: tokenID(s.cfg.Token)}, name: "the operator"}
	case claimLink:
		a, err := audience.ParseAudience(c.Audience)
		if err != nil || !a.Direct() {
			return linkHolder{}, c, errors.New("not a person's link")
		}
		who = linkHolder{session: claim{Kind: claimPerson, Audience: a.String()}, name: a.Platform + " user " + a.Person}
	default:
		return linkHolder{}, c, errors.New("not a link")
	}
	if used, err := s.links.Used(c.Nonce, s.now()); err != nil || used {
		return linkHolder{}, c, errors.New("a link already used, or its use unknown")
	}
	if !s.linksKept && c.Expires-int64(s.cfg.LinkTTL/time.Second) < s.started {
		// Made by an earlier process: whether it was used is not known
		// here, so it is not taken (the person asks for a new one).
		return linkHolder{}, c, errors.New("a link from before the page's last start")
	}
	return who, c, nil
}

func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	form := signInData{Token: s.cfg.Token != ""}
	if !s.attempts.allow(s.now()) {
		form.Problem = "Too many failed attempts; wait a minute."
		s.render(w, r, nil, http.StatusTooManyRequests, "Sign in", "", signInPage(form))
		return
	}
	if r.PostFormValue("link") != "" {
		s.signInWithLink(w, r, form)
		return
	}
	if !s.tokenMatches(r.PostFormValue("token")) {
		s.attempts.fail(s.now())
		s.log.Warn("web: a sign-in with a wrong token")
		form.Problem = "That is not the token."
		s.render(w, r, nil, http.StatusUnauthorized, "Sign in", "", signInPage(form))
		return
	}
	s.startSession(w, r, claim{Kind: claimOperator, Token: tokenID(s.cfg.Token)})
	s.log.Info("web: signed in", "who", "the operator")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signInWithLink signs in whom the link its page left in a cookie names,
// once.
func (s *Server) signInWithLink(w http.ResponseWriter, r *http.Request, form signInData) {
	ck, err := r.Cookie(linkCookie)
	var who linkHolder
	var c claim
	if err == nil {
		who, c, err = s.readLink(ck.Value)
	}
	if err == nil {
		if first, uerr := s.links.Use(c.Nonce, time.Unix(c.Expires, 0)); uerr != nil || !first {
			err = errors.New("a link already used, or its use not recorded")
		}
	}
	if err != nil {
		s.attempts.fail(s.now())
		form.Problem = badLink
		s.render(w, r, nil, http.StatusUnauthorized, "Sign in", "", signInPage(form))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: linkCookie, Value: "", Path: "/signin", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	s.startSession(w, r, who.session)
	s.log.Info("web: signed in", "who", who.name)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) signOut(w http.ResponseWriter, r *http.Request, _ *Viewer) {
	s.endSession(w, r)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// attempts bounds failed sign-ins: at most maxFailures a minute, from
// anyone, so a token cannot be guessed at the speed of the network.
type attempts struct {
	mu       sync.Mutex
	window   time.Time
	failures int
}

const maxFailures = 20

func (a *attempts) allow(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if now.Sub(a.window) >= time.Minute {
		a.window, a.failures = now, 0
	}
	return a.failures < maxFailures
}

func (a *attempts) fail(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if now.Sub(a.window) >= time.Minute {
		a.window, a.failures = now, 0
	}
	a.failures++
}

package web

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
)

// Names are the chat platforms' names for the ids the pages show: a
// person's display name (Slack's users.info, a Discord member's nickname
// or name) and a channel's name (conversations.info, a Discord channel's),
// each adapter keeping what it learnt. "" when the platform cannot say, or
// has no such adapter running: the page then shows the id alone. cmd
// passes the running adapters.
type Names interface {
	PersonName(ctx context.Context, platform, team, person string) string
	ChatName(ctx context.Context, platform, team, chat string) string
}

// namesBudget bounds the time a page spends asking for names it has not
// learnt yet: past it, the ids alone are shown (and the names come on a
// later view, from the adapters' caches).
const namesBudget = 2 * time.Second

// namer names ids for one request, within namesBudget.
type namer struct {
	ctx    context.Context
	cancel context.CancelFunc
	names  Names
}

func (s *Server) namer(r *http.Request) *namer {
	ctx, cancel := context.WithTimeout(r.Context(), namesBudget)
	return &namer{ctx: ctx, cancel: cancel, names: s.deps.Names}
}

func (n *namer) done() {
	if n != nil {
		n.cancel()
	}
}

func (n *namer) person(platform, team, id string) string {
	if n == nil || n.names == nil || id == "" || n.ctx.Err() != nil {
		return ""
	}
	return n.names.PersonName(n.ctx, platform, team, id)
}

func (n *namer) chat(platform, team, id string) string {
	if n == nil || n.names == nil || id == "" || n.ctx.Err() != nil {
		return ""
	}
	if name := n.names.ChatName(n.ctx, platform, team, id); name != "" {
		return "#" + strings.TrimPrefix(name, "#")
	}
	return ""
}

// scopeName is the person's or channel's name a scope belongs to, "" for
// the operator's, a team's, or one the platform does not name.
func (n *namer) scope(sc audience.Scope) string {
	a, ok := sc.Owner()
	if !ok {
		return ""
	}
	switch a.Kind {
	case audience.Person:
		return n.person(a.Platform, a.Team, a.Person)
	case audience.Private, audience.Shared:
		return n.chat(a.Platform, a.Team, a.Chat)
	}
	return ""
}

// viewer names a signed-in person beside their platform id: "Ana (slack
// user U0ANA)".
func (n *namer) viewer(a audience.Audience) string {
	who := a.Platform + " user " + a.Person
	if name := n.person(a.Platform, a.Team, a.Person); name != "" {
		return name + " (" + who + ")"
	}
	return who
}

// conversation names a session key's channel ("slack:C1:1712.5" in the
// scope sc's team), "" when it has none to name.
func (n *namer) conversation(key string, sc audience.Scope) string {
	platform, rest, ok := strings.Cut(key, ":")
	if !ok || platform == "terminal" {
		return ""
	}
	chat, _, _ := strings.Cut(rest, ":")
	a, _ := sc.Owner()
	return n.chat(platform, a.Team, chat)
}

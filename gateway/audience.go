package gateway

import (
	"fmt"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/workspace"
)

// Audiences. Every conversation is answered as an audience, which the
// adapter derives from the platform (never from the text): it decides the
// memory scopes the turn's prompt shows and its file tools reach, and the
// scope its archive is written in. Submit settles a message's audience
// once, before anything records it (audienceOf), and a conversation keeps
// the audience of its messages (openSession): a conversation whose audience
// changes (a channel made private or public) is set aside, to be archived
// under the audience it was held under, and starts afresh, so that nothing
// said under one audience is shown to another.

// audienceOf is the audience in is answered as: the one its adapter set,
// or, when it set none or an invalid one, audience.Unknown of its
// conversation, which reads and writes only a scope of its own — never its
// team's, never the default scope.
func (g *Gateway) audienceOf(in channels.Inbound) audience.Audience {
	if in.Audience.Validate() == nil {
		return in.Audience
	}
	if !in.Audience.IsZero() {
		g.logger.Warn("message with an invalid audience; answered as a conversation of its own that reads and writes no other memory",
			"session", in.SessionKey, "channel", in.Channel)
	} else {
		g.logger.Debug("message without an audience; answered as a conversation of its own that reads and writes no other memory",
			"session", in.SessionKey, "channel", in.Channel)
	}
	return audience.Unknown(in.SessionKey)
}

// home is the scope a's conversations are archived in (memory.Home).
func (g *Gateway) home(a audience.Audience) audience.Scope { return g.mem.Home(a) }

// readable lists the scopes a's prompts show, widest first, its home last
// (memory.Readable).
func (g *Gateway) readable(a audience.Audience) []audience.Scope { return g.mem.Readable(a) }

// scoped reports whether a's memory is a scope folder of its own
// (memory.OwnFolder).
func (g *Gateway) scoped(a audience.Audience) bool { return g.mem.OwnFolder(a) }

// ownDM reports whether in comes from a DM between the bot and its sender
// alone: a direct audience (Person or Guest; an adapter gives one only to
// a DM with the bot — a DM between people that a user's own installation
// of the app reaches is theirs, not the bot's) whose person is the
// sender. Only there does /web-link answer, an admin use the operator's
// tools, and the prompt name the DM's person.
func ownDM(in channels.Inbound) bool {
	return in.Audience.Direct() && in.SenderID == in.Audience.Person
}

// memoryView is what in's prompt may show of memory: the scopes its
// audience reads, and the name of a DM's person for its heading.
func (g *Gateway) memoryView(in channels.Inbound) MemoryView {
	v := MemoryView{Audience: in.Audience, Scopes: g.readable(in.Audience)}
	if ownDM(in) {
		v.Person = in.SenderName
	}
	return v
}

// ScopeFiles opens a memory scope's folder for a chat turn's file tools.
// ScopeFolders implements it over the workspace; tests may stub it.
type ScopeFiles interface {
	// Tools returns file tools confined to scope's folder, for a sender
	// who is, or is not, an admin, and a function that lets go of the
	// folder once the turn is over. An error means no file tools.
	Tools(scope audience.Scope, admin bool) (tools []agent.Tool, release func(), err error)
}

// ScopeFolders is the workspace's ScopeFiles: the file tools of a scope's
// folder (workspace.Root.Scope, which creates it on first use), with the
// chat policies of the workspace's own tools — memory files only for
// people who are not admins.
type ScopeFolders struct {
	Root *workspace.Root
	// DenyWrite lists paths of a scope's folder the tools may not write
	// (agent.Policy's syntax): the memory files, when the memory
	// repository is kept in the database and the folder holds a copy of
	// them for reading.
	DenyWrite []string
}

func (s ScopeFolders) Tools(scope audience.Scope, admin bool) ([]agent.Tool, func(), error) {
	sub, err := s.Root.Scope(scope)
	if err != nil {
		return nil, nil, err
	}
	pol := agent.ChatGuestPolicy()
	if admin {
		pol = agent.ChatPolicy()
	}
	pol.DenyWrite = append(pol.DenyWrite, s.DenyWrite...)
	return agent.FileTools(sub, pol), func() { _ = sub.Close() }, nil
}

// fileTools returns the file tools of in's turn, their text and what
// releases them. The operator (and everyone when memory is shared) has the
// workspace's; any other audience has tools confined to its own scope's
// folder, so the archive, the root's memory files and every other scope
// are out of their reach by construction — or none, when that folder
// cannot be opened.
func (g *Gateway) fileTools(in channels.Inbound, admin bool) ([]agent.Tool, string, func()) {
	if g.deps.MemoryCopy != nil {
		if err := g.deps.MemoryCopy(g.home(in.Audience)); err != nil {
			g.logger.Warn("the memory files in the folder could not be brought up to date; the file tools read them as they were", "session", in.SessionKey, "err", err)
		}
	}
	if !g.scoped(in.Audience) {
		tools, text := g.baseTools(admin)
		return tools, text, func() {}
	}
	if g.deps.ScopeFiles == nil {
		return nil, "", func() {}
	}
	tools, release, err := g.deps.ScopeFiles.Tools(g.home(in.Audience), admin)
	if err != nil {
		g.logger.Error("cannot open the conversation's memory folder; the turn has no file tools", "session", in.SessionKey, "err", err)
		return nil, "", func() {}
	}
	return tools, toolText(tools), release
}

// openSession returns in's session, holding in's audience (Submit settled
// it). A conversation held under an audience whose scope is another is set
// aside first (session.Store.Rotate, as /new does) and archived under its
// old audience in the background — or, with archive false (at shutdown,
// when no background work may start), by the next scan of set-aside
// conversations — and in's is a fresh conversation: the old one's messages,
// summary and continuity window are never shown to the new audience.
func (g *Gateway) openSession(in channels.Inbound, archive bool) (*session.Session, error) {
	sess, err := g.deps.Sessions.Get(in.SessionKey)
	if err != nil {
		return nil, err
	}
	if old, ok := sess.RecordedAudience(); ok && g.home(old) != g.home(in.Audience) {
		if sess, err = g.restartFor(in, old, archive); err != nil {
			return nil, err
		}
	}
	if err := sess.SetAudience(in.Audience); err != nil {
		return nil, err
	}
	return sess, nil
}

// restartFor sets in's conversation, held under old, aside and returns the
// fresh one that replaces it.
func (g *Gateway) restartFor(in channels.Inbound, old audience.Audience, archive bool) (*session.Session, error) {
	prev, fresh, err := g.deps.Sessions.Rotate(in.SessionKey)
	if err != nil {
		return nil, fmt.Errorf("set aside a conversation whose audience changed: %w", err)
	}
	unarchived := prev.Len() - prev.LastConsolidated()
	g.logger.Info("the conversation's audience changed; what was said before is archived under the old audience and the conversation starts afresh",
		"session", in.SessionKey, "from", old.String(), "to", in.Audience.String(), "unarchived", unarchived)
	if unarchived > 0 && archive && g.deps.Consolidator != nil {
		g.goBackground(func() { g.archivePrevious(prev) })
	}
	return fresh, nil
}

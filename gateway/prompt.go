package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/recall"
)

// A turn's prompt is three parts: the tools offered to the sender, the
// system prompt (the fixed prefix built here from the workspace files, then
// the consolidator's part), and the conversation's messages replayed from
// the session (each platform message under its sender's name), the newest
// opened by the runtime header and carrying this message's images.
//
// Providers' prompt caches serve the longest byte-identical prefix of an
// earlier request, so the prompt runs from what changes least to what
// changes most: instructions and memory files (a Dream changes them), the
// Recent history and last summary (an archive does), the conversation
// (each turn appends to it), and last what is new every turn — the time,
// the sender, this message's images. Every earlier message renders from
// the message alone, the same way every turn.

// runtimeHeader is the line that opens the turn's newest user message:
// when, where and from whom. It changes every turn, so it goes where only
// the turn's own steps follow it; the session keeps the message without
// it, so next turn the message renders as every earlier one does.
func runtimeHeader(now time.Time, in channels.Inbound) string {
	return fmt.Sprintf("[Now: %s. Channel: %s. Conversation: %s. Sender: %s.]\n\n",
		now.Format("Monday 2006-01-02 15:04 MST"), in.Channel, in.SessionKey, senderLabel(in))
}

// stampNewest opens the last user message of msgs (the turn's copies) with
// header.
func stampNewest(msgs []llm.Message, header string) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			msgs[i].Content = header + msgs[i].Content
			return
		}
	}
}

// toolText renders the tool definitions for counting; they cost prompt
// tokens on every call.
func toolText(tools []agent.Tool) string {
	var b strings.Builder
	for _, t := range tools {
		d := t.Def()
		b.WriteString("\n")
		b.WriteString(d.Name)
		b.WriteString(" ")
		b.WriteString(d.Description)
		b.Write(d.Parameters)
	}
	return b.String()
}

// TurnTools supplies tools chosen for each turn (the MCP servers' tools),
// beside the fixed Deps.Tools.
type TurnTools interface {
	// ForTurn returns the extra tools of a turn of t. It never fails:
	// whatever is unavailable is left out (and reported by StatusText).
	// Names must not clash with Deps.Tools.
	ForTurn(ctx context.Context, t ToolTurn) []agent.Tool
	// StatusText is a block for /status in a turn of t, each line ending
	// in "\n", showing only what t may use; "" when there is nothing to
	// show.
	StatusText(t ToolTurn) string
}

// ToolTurn is who a turn's extra tools are chosen for (toolTurn).
type ToolTurn struct {
	// Scope is the conversation's home scope: a tool that keeps state per
	// scope keeps this turn's there.
	Scope audience.Scope
	// Admin: the sender is an admin (the operator at the terminal is).
	Admin bool
	// Operator: the operator at the terminal, or an admin in their own DM
	// with the bot: a conversation no one else reads, which may use what
	// only the operator may.
	Operator bool
}

// toolTurn is who in's extra tools are for. A per-scope tool's scope is
// the audience's own home even when memory is shared: what it keeps is
// kept apart by audience all the same.
func (g *Gateway) toolTurn(in channels.Inbound) ToolTurn {
	admin := g.isAdmin(in)
	return ToolTurn{
		Scope:    in.Audience.Home(),
		Admin:    admin,
		Operator: in.Audience.Kind == audience.Operator || (admin && ownDM(in)),
	}
}

// RunningTools is optional for a TurnTools: what ForTurn would return now
// without starting anything, and how many of the turn's sources are not
// running (a turn would try to start them). /status counts with it, since
// showing a status must not start servers.
type RunningTools interface {
	RunningTools(t ToolTurn) (tools []agent.Tool, notRunning int)
}

// baseTools returns the workspace's file tools for the sender and their
// text: the operator's, and everyone's when memory is shared.
func (g *Gateway) baseTools(admin bool) ([]agent.Tool, string) {
	if g.deps.AdminTools != nil && admin {
		return g.deps.AdminTools, g.adminToolText
	}
	return g.deps.Tools, g.toolText
}

// statusToolText is the tools' text /status counts for the sender of in:
// what a turn would be offered, of the per-turn tools only those running.
// notCounted is how many per-turn sources are left out because they are
// not running; -1 when the TurnTools cannot tell without starting them.
// A scope's file tools are the workspace's, rooted elsewhere, and are
// counted as such.
func (g *Gateway) statusToolText(in channels.Inbound) (text string, notCounted int) {
	admin := g.isAdmin(in)
	_, text = g.baseTools(admin)
	if g.scoped(in.Audience) && g.deps.ScopeFiles == nil {
		text = ""
	}
	if r := g.recallTool(in); r != nil {
		text += toolText([]agent.Tool{r})
	}
	if g.deps.TurnTools == nil {
		return text, 0
	}
	rt, ok := g.deps.TurnTools.(RunningTools)
	if !ok {
		return text, -1
	}
	extra, notRunning := rt.RunningTools(g.toolTurn(in))
	return text + toolText(extra), notRunning
}

// recallTool is the recall tool of in's turn, searching the scopes its
// audience may read; nil without a recall index.
func (g *Gateway) recallTool(in channels.Inbound) agent.Tool {
	if g.deps.Recall == nil {
		return nil
	}
	a := in.Audience
	return recall.Tool(g.deps.Recall, g.readable(a), func(s audience.Scope) string { return g.mem.Label(s, a) })
}

// toolsFor returns a turn's tools and their text as the consolidator
// counts it: the file tools of the sender's memory (fileTools), then the
// tools chosen per turn (MCP servers) for an admin or not. release lets go
// of what the file tools hold, once the turn is over.
func (g *Gateway) toolsFor(ctx context.Context, in channels.Inbound) (tools []agent.Tool, text string, release func()) {
	admin := g.isAdmin(in)
	base, text, release := g.fileTools(in, admin)
	if r := g.recallTool(in); r != nil {
		base = append(slices.Clip(base), r)
		text += toolText([]agent.Tool{r})
	}
	if g.deps.TurnTools == nil {
		return base, text, release
	}
	extra := g.deps.TurnTools.ForTurn(ctx, g.toolTurn(in))
	if len(extra) == 0 {
		return base, text, release
	}
	return append(slices.Clip(base), extra...), text + toolText(extra), release
}

// replay returns the session's messages from index from on (its
// unarchived messages and the consolidator's continuity window) in a form
// every provider accepts: starting at a user message, every tool call
// answered by exactly one result and no result without its call (a crash
// mid-turn could leave either behind).
func replay(sess *session.Session, from int) []llm.Message {
	base, held := sess.Tail()
	tail := held[min(max(from-base, 0), len(held)):]
	i := slices.IndexFunc(tail, func(m llm.Message) bool { return m.Role == llm.RoleUser })
	if i < 0 {
		return nil
	}
	tail = tail[i:]
	answered := map[string]int{}
	for _, m := range tail {
		if m.Role == llm.RoleTool {
			answered[m.ToolCallID]++
		}
	}
	out := make([]llm.Message, 0, len(tail))
	called := map[string]bool{}
	for _, m := range tail {
		switch m.Role {
		case llm.RoleAssistant:
			if len(m.ToolCalls) > 0 && !allAnswered(m.ToolCalls, answered) {
				m.ToolCalls = nil
				if m.Content == "" {
					continue
				}
			}
			for _, tc := range m.ToolCalls {
				called[tc.ID] = true
			}
		case llm.RoleTool:
			if !called[m.ToolCallID] {
				continue
			}
			delete(called, m.ToolCallID)
		}
		out = append(out, m)
	}
	nameSenders(out)
	return out
}

// nameSenders opens each user message that came from a chat platform with
// its sender's name, "[Ana] …": among several people the model otherwise
// reads them as one user's and cannot tell who asked or said what. The
// name depends on the message alone — not on who else spoke, nor on where
// the replay starts — so a message reads the same in every later turn and
// the prompt's prefix stays byte-identical for providers' caches (naming
// only once a second person spoke rewrote every earlier message then, and
// again whenever an archive left one speaker in view). The local
// terminal's messages have no sender. msgs are the turn's copies, never
// the session's.
func nameSenders(msgs []llm.Message) {
	for i, m := range msgs {
		if m.Role == llm.RoleUser && m.Sender != "" {
			msgs[i].Content = "[" + m.SenderLabel() + "] " + m.Content
		}
	}
}

func allAnswered(calls []llm.ToolCall, answered map[string]int) bool {
	for _, tc := range calls {
		if answered[tc.ID] == 0 {
			return false
		}
	}
	return true
}

// senderLabel names in's sender in the runtime header, "Ana (U1)", each
// part one line without the brackets, parentheses and colons the header is
// delimited by.
func senderLabel(in channels.Inbound) string {
	name := llm.Message{Sender: in.SenderName}.SenderLabel()
	id := llm.Message{Sender: in.SenderID}.SenderLabel()
	switch {
	case name != "" && id != "":
		return name + " (" + id + ")"
	case name != "":
		return name
	case id != "":
		return id
	default:
		return "unknown"
	}
}

// Images sent with a message (Inbound.Images, from an adapter configured
// for a model that reads images) are shown to the model during that
// message's turn only: every model call of the turn carries them as image
// parts on the user message. The session records a marker naming each
// image, never its bytes, so later turns, replays after a restart and the
// archive see only the marker — and the marker says so, so that nothing
// the model reads claims it can still see an image it cannot: nothing the
// model is shown may claim what is not true.

// userMessage is the session record of in: its text, then one marker line
// per image. seen says whether the model is shown the images with it.
func userMessage(in channels.Inbound, seen bool) llm.Message {
	m := llm.Message{Role: llm.RoleUser, Content: in.Text, Time: in.Time}
	if len(in.Images) == 0 {
		return m
	}
	lines := make([]string, 0, len(in.Images)+1)
	if in.Text != "" {
		lines = append(lines, in.Text, "")
	}
	for _, img := range in.Images {
		if seen {
			lines = append(lines, fmt.Sprintf("[image %s (%s, %s): attached to this message; visible only while answering it, not kept]",
				img.Name, strings.ToUpper(strings.TrimPrefix(img.MIME, "image/")), formatBytes(len(img.Data))))
		} else {
			lines = append(lines, fmt.Sprintf("[image %s: sent with this message, never shown to the assistant]", img.Name))
		}
	}
	m.Content = strings.Join(lines, "\n")
	return m
}

// showImages puts in's images on the turn's user message, the last of msgs
// (a copy: the session's own record stays without them).
func showImages(msgs []llm.Message, in channels.Inbound) {
	if len(in.Images) == 0 || len(msgs) == 0 || msgs[len(msgs)-1].Role != llm.RoleUser {
		return
	}
	imgs := make([]llm.Image, len(in.Images))
	for i, img := range in.Images {
		imgs[i] = llm.Image{MIME: img.MIME, Data: img.Data}
	}
	msgs[len(msgs)-1].Images = imgs
}

package gateway

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/textcut"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/workspace"
)

// The fixed prefix of a system prompt: who the assistant is, its
// instructions (AGENTS.md, the same everywhere), and the memory files of
// the scopes the conversation's audience may read — exactly those, each
// under a heading that says whose it is. It depends only on the audience
// and the files, so it is byte-identical at every turn of a conversation
// until a file changes, for providers' prompt caches.

// identity opens the operator's system prompt (and every one when memory
// is shared), whose memory is the workspace root's files.
const identity = `You are an AI assistant that a team talks to through chat (a terminal, Slack or Discord), running in dreamgate.
Your workspace holds your instructions (AGENTS.md), your voice and rules (SOUL.md), what you know about the people you talk with (USER.md) and your long-term memory (memory/MEMORY.md). SOUL.md, USER.md and memory/MEMORY.md are maintained by Dream, a background process that reads archived conversations; read them, do not edit them.
Only what is written below or in this conversation is known to you. If something is not here, you do not remember it: say so instead of guessing.`

// scopedIdentity opens the system prompt of every other audience: its
// memory comes in parts, each shown only where its readers are, and its
// file tools reach only its own part.
const scopedIdentity = `You are an AI assistant that a team talks to through chat (a terminal, Slack or Discord), running in dreamgate.
Your instructions (AGENTS.md) are the same in every conversation. Your memory is kept apart by who may read it, and this conversation is shown only the parts the people in it may read; the heading of each part says whose it is. In each part, SOUL.md is your voice and rules, USER.md what you know about the people you talk with, and memory/MEMORY.md your long-term memory. They are maintained by Dream, a background process that reads archived conversations; read them, do not edit them. Your file tools reach only this conversation's own part, under those same names.
Only what is written below or in this conversation is known to you. If something is not here, you do not remember it: say so instead of guessing.`

// agentsHeading heads AGENTS.md, shown to every audience.
const agentsHeading = "# Instructions (AGENTS.md)"

// memoryTitles name the memory files in headings.
var memoryTitles = map[string]string{memory.Soul: "Soul", memory.User: "Users", memory.Long: "Long-term memory"}

func memoryTitle(rel string) string {
	if t := memoryTitles[rel]; t != "" {
		return t
	}
	return rel
}

// maxAgentsChars caps AGENTS.md in the prompt, marked where it is cut: a
// runaway instructions file must not crowd out the conversation. Memory
// files are never cut: they are shown within their budget (hotmemory.go).
const maxAgentsChars = 32000

// maxCachedFiles bounds the files a PromptBuilder keeps: a gateway may
// hear thousands of DMs, each with a scope of its own.
const maxCachedFiles = 1024

// PromptBuilder assembles the fixed prefix of system prompts from the
// workspace files. It keeps the files in memory and re-reads one only when
// its size or mtime changes, so a turn costs a few stat calls, not reads;
// what a scope shows within its budget is chosen again only when one of
// its files changed. The session's part (Recent history, last archive
// summary) is rendered by the consolidator and follows the prefix.
type PromptBuilder struct {
	dir    string
	mem    *memory.Memory
	logger *slog.Logger
	hot    HotMemory

	mu    sync.Mutex
	files map[string]cachedFile // AGENTS.md
	parts map[partKey]cachedPart
	usage map[audience.Scope]cachedUsage
	// over are the scopes found over their budget since TakeOverBudget
	// last asked.
	over map[audience.Scope]bool
}

type cachedFile struct {
	size    int64
	modTime time.Time
	text    string // "" when missing
}

// partKey names a scope's part: with, or without, the template's SOUL.md
// standing in for a scope's own (the one part of a view that depends on
// the others).
type partKey struct {
	scope    audience.Scope
	soulTmpl bool
}

type cachedPart struct {
	stamps [3]string // of its files, in memory.HotFiles order
	part   hotPart
}

// NewPromptBuilder reads the instructions from the workspace dir and the
// memory of scopes from mem (nil: mem read from dir), showing every memory
// line until WithHotMemory sets a budget.
func NewPromptBuilder(dir string, mem *memory.Memory, logger *slog.Logger) *PromptBuilder {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if mem == nil {
		mem = memory.New(memory.NewDisk(dir), false).WithLogger(logger)
	}
	return &PromptBuilder{dir: dir, mem: mem, logger: logger, files: map[string]cachedFile{},
		parts: map[partKey]cachedPart{}, usage: map[audience.Scope]cachedUsage{}, over: map[audience.Scope]bool{}}
}

// WithHotMemory sets how memory fits the prompt; call it before the first
// prompt is built.
func (p *PromptBuilder) WithHotMemory(h HotMemory) *PromptBuilder {
	if h.Counter == nil {
		h.Tokens = 0
	}
	p.hot = h
	return p
}

// MemoryView is what a conversation's prompt may show of memory.
type MemoryView struct {
	// Audience is the conversation's.
	Audience audience.Audience
	// Scopes are the scopes it may read, widest first, its own last
	// (Gateway.readable): the default scope alone for the operator, and
	// for everyone when memory is shared.
	Scopes []audience.Scope
	// Person is the display name of the person a DM is with, for its
	// heading ("" when not known).
	Person string
}

// Fixed is the fixed prefix of a system prompt for view: identity,
// AGENTS.md, then the memory files of view's scopes, each scope within its
// budget (hotmemory.go). The default scope alone (the operator; everyone
// when memory is shared) is shown as the workspace's files always were.
// Any other view shows each scope under a heading saying whose it is, its
// files under their titles; a file still identical to the template is
// left out (an empty skeleton costs tokens and says nothing), but for one
// SOUL.md, which sets how every reply sounds: when no scope's own is
// shown, the conversation's own scope shows the template's. It changes
// only when a file does.
func (p *PromptBuilder) Fixed(view MemoryView) string {
	var b strings.Builder
	if len(view.Scopes) == 1 && view.Scopes[0] == audience.Default {
		b.WriteString(p.identity(identity))
		p.writeAgents(&b)
		part := p.part(audience.Default, false)
		if part.dated {
			b.WriteString("\n\n" + datedNote)
		}
		for _, f := range part.files {
			fmt.Fprintf(&b, "\n\n# %s (%s)\n\n%s", memoryTitle(f.rel), f.rel, f.text)
		}
		if s := part.omitted(p.hot.Recall); s != "" {
			b.WriteString("\n\n" + s)
		}
		return b.String()
	}
	b.WriteString(p.identity(scopedIdentity))
	p.writeAgents(&b)
	parts := make([]hotPart, len(view.Scopes))
	soulShown, dated := false, false
	for i, s := range view.Scopes {
		own := i == len(view.Scopes)-1
		parts[i] = p.part(s, own && !soulShown)
		for _, f := range parts[i].files {
			soulShown = soulShown || f.rel == memory.Soul
		}
		dated = dated || parts[i].dated
	}
	if dated {
		b.WriteString("\n\n" + datedNote)
	}
	for i, s := range view.Scopes {
		own := i == len(view.Scopes)-1
		if len(parts[i].files) == 0 {
			continue
		}
		b.WriteString("\n\n# " + scopeHeading(view, s))
		for _, f := range parts[i].files {
			heading := "## " + memoryTitle(f.rel)
			if own {
				heading += " (" + f.rel + ")" // the name its file tools know it by
			}
			fmt.Fprintf(&b, "\n\n%s\n\n%s", heading, f.text)
		}
		if s := parts[i].omitted(p.hot.Recall); s != "" {
			b.WriteString("\n\n" + s)
		}
	}
	return b.String()
}

// identity is text, told of the recall tool when turns have it.
func (p *PromptBuilder) identity(text string) string {
	if !p.hot.Recall {
		return text
	}
	return strings.Replace(text, "Only what is written below or in this conversation is known to you. If something is not here, you do not remember it: say so instead of guessing.",
		"What is written below and in this conversation is what you know; the recall tool searches what was said before in conversations you may repeat here, and memory moved out of the prompt. If neither has something, you do not remember it: say so instead of guessing.", 1)
}

// part is scope s's memory as the prompt shows it, chosen again only when
// one of its files changed. soulTmpl shows the template's SOUL.md when the
// scope has none of its own.
func (p *PromptBuilder) part(s audience.Scope, soulTmpl bool) hotPart {
	files, readErr := p.mem.Hot(s)
	rels := make([]string, len(files))
	texts := make([]string, len(files))
	var stamps [3]string
	for i, f := range files {
		rels[i], texts[i], stamps[i] = f.Rel, f.Text, f.Stamp
		if texts[i] == "" && soulTmpl && f.Rel == memory.Soul {
			texts[i] = memory.TemplateText(f.Rel)
		}
	}
	key := partKey{scope: s, soulTmpl: soulTmpl}
	p.mu.Lock()
	c, ok := p.parts[key]
	p.mu.Unlock()
	if ok && c.stamps == stamps {
		return c.part
	}
	if readErr != nil {
		p.logger.Warn("cannot read a memory file for the prompt; it is left out", "scope", memory.Name(s), "err", readErr)
	}
	part, over := fitScope(rels, texts, p.hot.Tokens, p.hot.Counter)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.parts) >= maxCachedFiles {
		clear(p.parts)
	}
	p.parts[key] = cachedPart{stamps: stamps, part: part}
	if over {
		p.over[s] = true
		p.logger.Info("a memory scope is over its budget in the prompt; its least important, oldest lines are left out",
			"scope", string(s), "shown", part.shown, "lines", part.total, "budget", p.hot.Tokens)
	}
	return part
}

// TakeOverBudget returns the scopes found over their budget since it was
// last called, each once, for a deep Dream.
func (p *PromptBuilder) TakeOverBudget() []audience.Scope {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.over) == 0 {
		return nil
	}
	out := make([]audience.Scope, 0, len(p.over))
	for s := range p.over {
		out = append(out, s)
	}
	clear(p.over)
	slices.Sort(out)
	return out
}

// scopeHeading says whose memory scope s is, as view's conversation sees
// it, and where it is shown; it claims nothing the scope rules do not
// guarantee.
func scopeHeading(view MemoryView, s audience.Scope) string {
	a := view.Audience
	// The one scope an audience reads besides its own is its team's.
	if s != a.Home() || a.Kind == audience.Team {
		where, who := "this team's", "the team"
		switch a.Platform {
		case "slack":
			where, who = "this Slack workspace's", "the workspace"
		case "discord":
			where, who = "this Discord server's", "the server"
		}
		return "Memory shared with the team — from " + where + " public channels; everyone in " + who + " may see it"
	}
	switch {
	case a.Direct():
		who := view.Person
		if who == "" {
			who = "this person"
		}
		return "Memory from your direct messages with " + who + " — from what was said in them, shown only in them"
	case a.Kind == audience.Private:
		return "Memory of this private conversation — from what was said here, shown only here"
	case a.IsUnknown():
		return "Memory of this conversation — from what was said here, shown only here"
	case a.Kind == audience.Shared:
		return "Memory of this shared channel — from what was said here, shown only here (people from other organisations read this channel)"
	}
	return "Memory of this conversation"
}

// writeAgents writes AGENTS.md under its heading when it has text: the
// instructions every audience shares, cut (and marked so) when longer
// than maxAgentsChars.
func (p *PromptBuilder) writeAgents(b *strings.Builder) {
	if text := p.file(workspace.Agents); text != "" {
		text, _ = textcut.Chars(text, maxAgentsChars, "\n... (AGENTS.md is cut here: it is longer than this prompt shows)")
		fmt.Fprintf(b, "\n\n%s\n\n%s", agentsHeading, text)
	}
}

// file returns the text of the workspace file at rel (slash-separated,
// workspace-relative: AGENTS.md, which is no scope's memory), trimmed;
// "" when it is missing.
func (p *PromptBuilder) file(rel string) string {
	full := filepath.Join(p.dir, filepath.FromSlash(rel))
	fi, err := os.Stat(full)
	if err != nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.files[rel]; ok && c.size == fi.Size() && c.modTime.Equal(fi.ModTime()) {
		return c.text
	}
	data, err := os.ReadFile(full)
	if err != nil {
		p.logger.Warn("cannot read workspace file for prompt", "file", rel, "err", err)
		return ""
	}
	text := strings.TrimSpace(string(data))
	if len(p.files) >= maxCachedFiles {
		clear(p.files) // read again as turns come: a stat and a read each
	}
	p.files[rel] = cachedFile{size: fi.Size(), modTime: fi.ModTime(), text: text}
	return text
}

package gateway

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/textcut"
	"github.com/dreamgate/dreamgate/workspace"
	workspacetemplate "github.com/dreamgate/dreamgate/workspace-template"
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
var memoryTitles = map[string]string{workspace.Soul: "Soul", workspace.User: "Users", workspace.Memory: "Long-term memory"}

func memoryTitle(rel string) string {
	if t := memoryTitles[rel]; t != "" {
		return t
	}
	return rel
}

// maxPromptFileChars caps each file in the prompt; a runaway file must not
// crowd out the conversation.
const maxPromptFileChars = 32000

// maxCachedFiles bounds the files a PromptBuilder keeps: a gateway may
// hear thousands of DMs, each with a scope of its own.
const maxCachedFiles = 1024

// PromptBuilder assembles the fixed prefix of system prompts from the
// workspace files. It keeps the files in memory and re-reads one only when
// its size or mtime changes, so a turn costs a few stat calls, not reads.
// The session's part (Recent history, last archive summary) is rendered by
// the consolidator and follows the prefix.
type PromptBuilder struct {
	dir    string
	logger *slog.Logger

	mu    sync.Mutex
	files map[string]cachedFile
}

type cachedFile struct {
	size    int64
	modTime time.Time
	text    string // "" when missing or left out
}

// NewPromptBuilder reads prompts from the workspace dir.
func NewPromptBuilder(dir string, logger *slog.Logger) *PromptBuilder {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &PromptBuilder{dir: dir, logger: logger, files: map[string]cachedFile{}}
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
// AGENTS.md, then the memory files of view's scopes. The default scope
// alone (the operator; everyone when memory is shared) is shown as the
// workspace's files always were. Any other view shows each scope under a
// heading saying whose it is, its files under their titles; a file still
// identical to the template is left out (an empty skeleton costs tokens
// and says nothing), but for one SOUL.md, which sets how every reply
// sounds: when no scope's own is shown, the conversation's own scope shows
// the template's. It changes only when a file does.
func (p *PromptBuilder) Fixed(view MemoryView) string {
	var b strings.Builder
	if len(view.Scopes) == 1 && view.Scopes[0] == audience.Default {
		b.WriteString(identity)
		p.writeFile(&b, agentsHeading, workspace.Agents, false)
		for _, rel := range workspace.MemoryFiles() {
			p.writeFile(&b, "# "+memoryTitle(rel)+" ("+rel+")", rel, rel != workspace.Soul)
		}
		return b.String()
	}
	b.WriteString(scopedIdentity)
	p.writeFile(&b, agentsHeading, workspace.Agents, false)
	soulShown := false
	for i, s := range view.Scopes {
		own := i == len(view.Scopes)-1
		var part strings.Builder
		for _, rel := range workspace.MemoryFiles() {
			text := p.file(path.Join(s.Dir(), rel), rel, true)
			if text == "" && own && rel == workspace.Soul && !soulShown {
				text = templateText(rel)
			}
			if text == "" {
				continue
			}
			soulShown = soulShown || rel == workspace.Soul
			heading := "## " + memoryTitle(rel)
			if own {
				heading += " (" + rel + ")" // the name its file tools know it by
			}
			fmt.Fprintf(&part, "\n\n%s\n\n%s", heading, text)
		}
		if part.Len() > 0 {
			b.WriteString("\n\n# " + scopeHeading(view, s))
			b.WriteString(part.String())
		}
	}
	return b.String()
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
	case a.Kind == audience.Person:
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

// writeFile writes rel under heading when it has text to show.
func (p *PromptBuilder) writeFile(b *strings.Builder, heading, rel string, skipIfTemplate bool) {
	if text := p.file(rel, rel, skipIfTemplate); text != "" {
		fmt.Fprintf(b, "\n\n%s\n\n%s", heading, text)
	}
}

// file returns the text of the workspace file at rel (slash-separated,
// workspace-relative), trimmed and capped; "" when it is missing, or when
// skipIfTemplate and it is still the template's file tpl.
func (p *PromptBuilder) file(rel, tpl string, skipIfTemplate bool) string {
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
	text := ""
	if !skipIfTemplate || !sameAsTemplate(tpl, data) {
		text = strings.TrimSpace(string(data))
		text, _ = textcut.Chars(text, maxPromptFileChars, "\n... (truncated)")
	}
	if len(p.files) >= maxCachedFiles {
		clear(p.files) // read again as turns come: a stat and a read each
	}
	p.files[rel] = cachedFile{size: fi.Size(), modTime: fi.ModTime(), text: text}
	return text
}

// templateText is the template's file rel as the prompt shows it.
func templateText(rel string) string {
	tpl, err := workspacetemplate.Read(rel)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(tpl))
}

func sameAsTemplate(path string, data []byte) bool {
	tpl, err := workspacetemplate.Read(path)
	return err == nil && bytes.Equal(bytes.TrimSpace(tpl), bytes.TrimSpace(data))
}

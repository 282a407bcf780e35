package gateway

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/workspace"
	workspacetemplate "github.com/dreamgate/dreamgate/workspace-template"
)

// identity opens every system prompt. It never changes between turns, so it
// and the files after it form a stable prefix for providers' prompt caches.
const identity = `You are an AI assistant that a team talks to through chat (a terminal, Slack or Discord), running in dreamgate.
Your workspace holds your instructions (AGENTS.md), your voice and rules (SOUL.md), what you know about the people you talk with (USER.md) and your long-term memory (memory/MEMORY.md). SOUL.md, USER.md and memory/MEMORY.md are maintained by Dream, a background process that reads archived conversations; read them, do not edit them.
Only what is written below or in this conversation is known to you. If something is not here, you do not remember it: say so instead of guessing.`

// promptFile is one workspace file the system prompt includes.
type promptFile struct {
	path    string // workspace-relative
	heading string
	// skipIfTemplate leaves the file out while it is still byte-identical
	// to the template: an empty skeleton costs tokens and says nothing.
	skipIfTemplate bool
}

// promptFiles are AGENTS.md and then the workspace's memory files, in the
// workspace's order.
var promptFiles = append([]promptFile{{workspace.Agents, "# Instructions (AGENTS.md)", false}}, memoryPromptFiles()...)

// memoryPromptFiles heads each memory file with a title; the voice (SOUL.md)
// is shown even as a bare template, since it sets how every reply sounds.
func memoryPromptFiles() []promptFile {
	titles := map[string]string{workspace.Soul: "Soul", workspace.User: "Users", workspace.Memory: "Long-term memory"}
	files := workspace.MemoryFiles()
	out := make([]promptFile, 0, len(files))
	for _, rel := range files {
		title := titles[rel]
		if title == "" {
			title = rel
		}
		out = append(out, promptFile{rel, "# " + title + " (" + rel + ")", rel != workspace.Soul})
	}
	return out
}

// maxPromptFileChars caps each file in the prompt; a runaway file must not
// crowd out the conversation.
const maxPromptFileChars = 32000

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

// Fixed is the part of the system prompt shared by every session: identity
// and the workspace files. It changes only when a file does.
func (p *PromptBuilder) Fixed() string {
	var b strings.Builder
	b.WriteString(identity)
	for _, f := range promptFiles {
		text := p.file(f)
		if text == "" {
			continue
		}
		fmt.Fprintf(&b, "\n\n%s\n\n%s", f.heading, text)
	}
	return b.String()
}

// Runtime is the small, changing tail of the system prompt.
func Runtime(now time.Time, channel, sessionKey, sender string) string {
	return fmt.Sprintf("\n\n# Now\n\nTime: %s. Channel: %s. Conversation: %s. Sender: %s.",
		now.Format("Monday 2006-01-02 15:04 MST"), channel, sessionKey, sender)
}

func (p *PromptBuilder) file(f promptFile) string {
	path := filepath.Join(p.dir, filepath.FromSlash(f.path))
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.files[f.path]; ok && c.size == fi.Size() && c.modTime.Equal(fi.ModTime()) {
		return c.text
	}
	data, err := os.ReadFile(path)
	if err != nil {
		p.logger.Warn("cannot read workspace file for prompt", "file", f.path, "err", err)
		return ""
	}
	text := ""
	if !f.skipIfTemplate || !sameAsTemplate(f.path, data) {
		text = strings.TrimSpace(string(data))
		if r := []rune(text); len(r) > maxPromptFileChars {
			text = string(r[:maxPromptFileChars]) + "\n... (truncated)"
		}
	}
	p.files[f.path] = cachedFile{size: fi.Size(), modTime: fi.ModTime(), text: text}
	return text
}

func sameAsTemplate(path string, data []byte) bool {
	tpl, err := workspacetemplate.Read(path)
	return err == nil && bytes.Equal(bytes.TrimSpace(tpl), bytes.TrimSpace(data))
}

package dream

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/internal/textcut"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// The memory files Dream reads and edits, workspace-relative (the
// workspace layout's).
const (
	fileSoul   = workspace.Soul
	fileUser   = workspace.User
	fileMemory = workspace.Memory
)

// memoryFiles is the fixed set phase 2 may edit (agent.DreamPolicy).
var memoryFiles = workspace.MemoryFiles()

// overridePath is the workspace's own Dream guidance: when it holds more
// than white space it replaces the built-in guidance of both phases; the
// fixed rules, the memory files and the history are still added.
const overridePath = workspace.DreamGuide

// Caps on what goes into a prompt, in characters (runes).
const (
	// A scope's files are shown whole far past any budget a prompt keeps
	// them to (memory.hotTokens is at most a quarter of the window: 32K
	// tokens on a 128K model, about 128K characters), so that Dream
	// deduplicates and corrects against all of them; the deep Dream keeps
	// them near the budget. Only a file far beyond it is cut, saying so.
	memoryCap   = 128_000 // MEMORY.md
	profileCap  = 64_000  // SOUL.md and USER.md
	overrideCap = 32_000  // prompts/dream.md
	summaryCap  = 6_000   // the unified diff in a commit body
)

// The built-in guidance. A non-empty prompts/dream.md replaces both texts;
// the step and format sections below are always appended, because the
// program parses phase 1's answer and the tools enforce phase 2's rules
// whatever the guidance says.
const phase1Guidance = `You look after the long-term memory of a chat assistant. You get a batch of entries from the archive of its conversations, oldest first, and the current text of its three memory files:

- USER.md: who the users are: names, roles, preferences, habits, how they like to be answered.
- SOUL.md: how the assistant should behave: tone, rules, things the users asked it to always or never do.
- memory/MEMORY.md: durable knowledge: projects, decisions and their reasons, people, systems, dates that stay relevant.

Decide what in the archive deserves to be remembered, and what in the files is now wrong or redundant.

- Keep a fact only if it will still matter in a few weeks, or, tagged [ephemeral], in the next days (a plan, an absence). Leave out small talk, one-off questions, passing status, weather, errors that were fixed, and anything the files already say.
- One fact per line, short and self-contained; say who or what it is about.
- Each fact belongs in exactly one file. MEMORY.md must not repeat what belongs in USER.md or SOUL.md.
- When the archive corrects something a file says, state the corrected fact: it replaces the old one, it is not added beside it.
- Propose a removal for duplicates, and for what the archive shows is no longer true. Never remove a stated preference or a behaviour rule only because it is old.
- Saying nothing is better than guessing.`

const phase2Guidance = `You edit the memory files of a chat assistant. You get the findings of an analysis of its conversation archive and the current text of the files. Apply the findings with small, exact edits.

- A [USER], [SOUL] or [MEMORY] finding adds a fact to that file. If the file already says it, leave the file alone. If the file holds an older version of the fact, replace that line instead of adding a second one.
- A [FILE-REMOVE] finding deletes what it names: the lines only; keep a heading while other lines remain under it.
- Keep each file's structure and headings. Put a new fact under the heading it fits, or add a short heading when none fits.
- Change only what the findings ask for: do not rewrite, reorder or reformat anything else.
- Skip a finding that is unclear or contradicts another one.`

// phase1Rules follow the guidance in phase 1's system prompt.
const phase1Rules = `## This step: analysis
Read the archive entries and the files below and list your findings. Do not edit anything; another step applies the findings.

## Answer format (required)
One finding per line and nothing else. Every line starts with one of these tags:
[USER] a fact about the users
[SOUL] a rule for the assistant's behaviour
[MEMORY] a durable fact, decision or piece of context
[FILE-REMOVE] what to delete, from which file, and why
[SKIP]
After [USER], [SOUL] or [MEMORY] you may add how long the fact matters, in brackets: [permanent] (names, standing preferences, rules to always follow), [durable] (true until something contradicts it; the default), [ephemeral] (about now: a plan for a day, who is away this week; it retires after a few weeks). Example: [USER] [ephemeral] Ana is in Lisbon until Friday.
Every memory line ends with a comment holding its id (id:7f3a). When a finding corrects a line of the files, or of the cold memory shown below them, name the line it replaces right after the tag: [USER] [replaces:7f3a] Ana's office is Canal Road. Name only ids you were shown; the program marks that line as replaced.
Answer with the single line [SKIP] when nothing needs to change. Lines without one of these tags are ignored.`

// phase2Rules follow the guidance in phase 2's system prompt.
const phase2Rules = `## This step: editing
Apply the findings given below to the files.

## Tools (required)
- You may touch only SOUL.md, USER.md and memory/MEMORY.md, named by exactly these paths. Any other path is refused.
- Their current text is given below, so you need read_file only to look again after a failed edit.
- edit_file(path, old_text, new_text) replaces old_text, which must occur exactly once in the file: copy it exactly, with enough neighbouring lines to make it unique. To delete, give the lines as old_text and an empty new_text. To fill an empty or missing file, give an empty old_text. old_text and new_text must differ.
- Combine changes to the same passage into one edit. Do not repeat an edit that failed; look at the file again and adjust.
- Write each fact as one "- " line. A comment at the end of a line ("<!-- durable 2026-11-26 src:41 id:7f3a -->") is the fact's priority, date, sources and id, kept up to date by the program: leave it as it is, and do not write dates, sources or ids yourself. You may end a new line with its priority alone ("<!-- ephemeral -->") when the finding gives one.
- A finding marked [replaces:<id>] corrects the line with that id. If a file holds that line (by its comment, or as the list of lines without an id below the findings says), replace the whole line (its comment too) with the new fact; if none does (it is in cold memory), add the new fact. Either way end the line you write with the comment "<!-- replaces:<id> -->" (with its priority if the finding gives one: "<!-- ephemeral replaces:7f3a -->"), so that the program marks the old line as replaced.
- When every finding is applied, or none needs a change, answer with one short sentence and no tool call. That ends the work.`

// memFile is one memory file as read for a prompt.
type memFile struct {
	rel  string
	text string // "" when missing or empty
}

// readMemoryFiles reads the three memory files, in the order the prompts
// show them (MEMORY, SOUL, USER). A missing file reads as empty; any other
// error is returned.
func readMemoryFiles(dir string) ([]memFile, error) {
	out := make([]memFile, 0, len(memoryFiles))
	for _, rel := range []string{fileMemory, fileSoul, fileUser} {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
		out = append(out, memFile{rel: rel, text: string(b)})
	}
	return out, nil
}

// guidance returns the workspace's prompts/dream.md when it holds more than
// white space (capped), else "".
func guidance(dir string) (text string, truncated bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(overridePath)))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", overridePath, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", false, nil
	}
	capped, cut := capText(s, overrideCap)
	return capped, cut, nil
}

// system joins guidance and the fixed rules of a step.
func system(guidance, rules string) string {
	return guidance + "\n\n" + rules
}

// phase1Messages builds an analysis request: the archive entries (as
// phase1Parts renders them, whole or a part of one), today's date, the
// current files and the lines of cold memory that may concern the batch
// (coldShown), which a correction may name.
func phase1Messages(guide string, entries []string, today time.Time, files []memFile, cold []memline.Line) []llm.Message {
	if guide == "" {
		guide = phase1Guidance
	}
	var b strings.Builder
	b.WriteString("## Archive entries (oldest first)\n")
	for _, e := range entries {
		b.WriteString(e)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "\n## Today\n%s\n", today.Format("2006-01-02 (Monday)"))
	writeFiles(&b, files, "## Current %s (%d characters)\n", phase1CutNote)
	if len(cold) > 0 {
		b.WriteString("\n" + coldShownHeading + "\n")
		for _, l := range cold {
			l.Indent = ""
			b.WriteString(l.String())
			b.WriteByte('\n')
		}
	}
	return []llm.Message{
		{Role: llm.RoleSystem, Content: system(guide, phase1Rules)},
		{Role: llm.RoleUser, Content: b.String()},
	}
}

// phase2Messages builds the editing conversation: the findings, then the
// current files (the same caps as phase 1).
func phase2Messages(guide string, findings []finding, files []memFile, named []namedLine) []llm.Message {
	if guide == "" {
		guide = phase2Guidance
	}
	var b strings.Builder
	b.WriteString("## Findings to apply\n")
	for _, f := range findings {
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	if len(named) > 0 {
		b.WriteString("\n" + namedHeading + "\n")
		for _, nl := range named {
			fmt.Fprintf(&b, "[id:%s] in %s: %s\n", nl.line.ID, nl.rel, nl.raw)
		}
	}
	b.WriteString("\n## Current memory files\n")
	writeFiles(&b, files, "### %s (%d characters)\n", phase2CutNote)
	return []llm.Message{
		{Role: llm.RoleSystem, Content: system(guide, phase2Rules)},
		{Role: llm.RoleUser, Content: b.String()},
	}
}

// namedHeading opens the lines phase 2 is told the ids of: lines without
// an id in their file that the findings name (showIDs).
const namedHeading = "## Lines the findings name that have no id in their file"

// Notes after a memory file cut for a prompt (the cap, the file). Phase 1
// has no tools, so only phase 2's note may point at read_file.
const (
	phase1CutNote = "[cut at %d characters; the rest of %s is not shown]\n"
	phase2CutNote = "[cut at %d characters; use read_file on %s to see the rest]\n"
)

// writeFiles renders the memory files in the order MEMORY, SOUL, USER; a
// file over its cap is cut, saying so with cutNote.
func writeFiles(b *strings.Builder, files []memFile, header, cutNote string) {
	for _, f := range files {
		limit := profileCap
		if f.rel == fileMemory {
			limit = memoryCap
		}
		text := strings.TrimRight(f.text, "\n")
		fmt.Fprintf(b, "\n"+header, f.rel, utf8.RuneCountInString(text))
		if strings.TrimSpace(text) == "" {
			b.WriteString("(empty)\n")
			continue
		}
		capped, cut := capText(text, limit)
		b.WriteString(capped)
		b.WriteByte('\n')
		if cut {
			fmt.Fprintf(b, cutNote, limit, f.rel)
		}
	}
}

// capText cuts s to at most limit characters and marks the cut the way
// Dream's prompts, skip records and /dream-log diffs always have.
func capText(s string, limit int) (string, bool) { return textcut.Chars(s, limit, "…[truncated]") }

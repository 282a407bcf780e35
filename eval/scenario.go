package eval

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
)

// Memory files, workspace-relative: the files Dream edits and the checks
// read.
const (
	FileSoul   = "SOUL.md"
	FileUser   = "USER.md"
	FileMemory = "memory/MEMORY.md"
)

// MemoryFiles are the files an expectation may name, in report order.
var MemoryFiles = []string{FileUser, FileMemory, FileSoul}

// MaxScenarioBytes bounds a scenario file (its seeded files included): the
// built-in ones are under 5 KB, and a file is read whole into memory.
const MaxScenarioBytes = 4 << 20

// MaxSeedBytes bounds one seeded file's text.
const MaxSeedBytes = 1 << 20

// maxSeedName bounds a seeded file's path, and maxSeedComponent each of
// its parts (file systems refuse a name over 255 bytes).
const (
	maxSeedName      = 1024
	maxSeedComponent = 255
)

// minContextWindow is the smallest contextWindow a scenario may ask for: the
// system prompt alone takes about 1.5K tokens.
const minContextWindow = 4096

// Scenario is one scripted conversation and what should follow from it.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Source is the file the scenario came from.
	Source   string    `json:"-"`
	Sessions []Session `json:"sessions"`
	Expect   []Expect  `json:"expect,omitempty"`
	// Questions are asked after Dream, each in a fresh session.
	Questions []Question `json:"questions,omitempty"`
	// Files are written into the throw-away workspace before the first
	// session (workspace-relative path -> content): documents a tool can
	// read, or memory files that already hold something.
	Files map[string]string `json:"files,omitempty"`
	// ContextWindow, when set, replaces the configured context window for
	// this scenario, so the Consolidator's budget is crossed by a
	// conversation of a few dozen turns.
	ContextWindow int `json:"contextWindow,omitempty"`
}

// Session is one conversation: its turns are played in order, then it is
// archived as /new archives it.
type Session struct {
	// Key names the conversation. A key with a colon is used as the
	// session key as it is ("slack:C1"), its prefix naming the channel;
	// any other key becomes "eval:<key>".
	Key    string `json:"key"`
	Sender string `json:"sender"`
	// Audience is who can read the conversation, in audience's text form
	// ("slack/person/T1/UANA", "slack/team/T1", "discord/private/G1/C2"):
	// its turns read and are remembered in that audience's memory. The
	// zero value is the operator's, the workspace root's files, as every
	// conversation's memory was before audiences.
	Audience audience.Audience `json:"audience,omitzero"`
	Turns    []Turn            `json:"turns"`
}

// operatorAudience is the audience of a session or check that names none.
var operatorAudience = audience.Audience{Kind: audience.Operator, Platform: "eval"}

// Of returns a, or the operator's audience when a is the zero value.
func Of(a audience.Audience) audience.Audience {
	if a.IsZero() {
		return operatorAudience
	}
	return a
}

// SessionKey is the gateway session key of the conversation.
func (s Session) SessionKey() string {
	if strings.Contains(s.Key, ":") {
		return s.Key
	}
	return "eval:" + s.Key
}

// Channel is the channel name the turns arrive on.
func (s Session) Channel() string {
	ch, _, _ := strings.Cut(s.SessionKey(), ":")
	return ch
}

// Turn is one message of the user. Idle archives the conversation's tail
// after it, as the idle timer would.
type Turn struct {
	Text string `json:"text"`
	Idle bool   `json:"idle,omitempty"`
}

// Expect is one check of the memory files: exactly one of Contains, Matches
// and Absent is set. File is "" for all memory files.
type Expect struct {
	// Audience, when set, checks the memory that audience's prompts may
	// show (the files of its readable scopes) instead of the operator's.
	Audience audience.Audience `json:"audience,omitzero"`
	File     string            `json:"file,omitempty"`
	Contains string            `json:"contains,omitempty"`
	Matches  string            `json:"matches,omitempty"`
	Absent   string            `json:"absent,omitempty"`

	re *regexp.Regexp
}

// Question is asked in a fresh session of Audience (the operator's when
// unset); the answer must contain Expect, or must not contain Absent
// (case-insensitive): exactly one of the two is set.
type Question struct {
	Audience audience.Audience `json:"audience,omitzero"`
	Ask      string            `json:"ask"`
	Expect   string            `json:"expect,omitempty"`
	Absent   string            `json:"absent,omitempty"`
}

// ScopeFiles lists, for each memory file name (MemoryFiles), the
// workspace-relative paths of that file in the scopes a may read, widest
// first: what an expectation of a reads. The operator's (and the zero
// audience's) are the workspace root's files.
func ScopeFiles(a audience.Audience, file string) []string {
	var out []string
	for _, s := range Of(a).Readable() {
		out = append(out, path.Join(s.Dir(), file))
	}
	return out
}

// ScenarioError is a bad scenario file. It names the file, the scenario
// (when known) and the field (a path such as "sessions[1].turns[0].text").
type ScenarioError struct {
	File     string
	Scenario string
	Field    string
	Msg      string
}

func (e *ScenarioError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Scenario != "" {
		fmt.Fprintf(&b, ": scenario %q", e.Scenario)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

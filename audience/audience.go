// Package audience says who can read a conversation, and so which memory it
// may be shown and where what is said in it is kept. An Audience is derived
// by a channel adapter from what the platform says about the conversation
// (a DM, a private channel, a workspace's public channel), never from the
// text of a message. A Scope is a folder of memory files: the default scope
// is the workspace root (SOUL.md, USER.md, memory/MEMORY.md, as nanobot
// keeps them); every other scope is scopes/<name>/ with the same file names
// inside.
//
// The rule the package encodes: nothing said in one audience is shown to
// another that could not have read it. An audience's Home is the one scope
// its conversations are archived into; Readable lists the scopes its
// prompts may show. Two Slack workspaces or two Discord servers never share
// a scope, and no platform id, however odd, makes a scope's folder leave
// scopes/.
//
// It is a leaf: it imports nothing of ours, so the channels, the workspace
// and everything above may use it.
package audience

import (
	"errors"
	"fmt"
	"strings"
)

// Kind is the sort of audience a conversation has.
type Kind string

// The kinds of audience.
const (
	// Operator is the machine's own user at the terminal: the default
	// scope is theirs, and they may inspect any other explicitly.
	Operator Kind = "operator"
	// Person is a direct message with one person.
	Person Kind = "person"
	// Private is a private channel, a group DM or a private thread: its
	// members, who all belong to the team.
	Private Kind = "private"
	// Team is a public channel: everyone in one Slack workspace or one
	// Discord server.
	Team Kind = "team"
	// Shared is a channel shared with another organisation (Slack
	// Connect): people outside the team read it, so it sees nothing of the
	// team's memory. A channel one of whose members is a guest of the
	// team is Shared too.
	Shared Kind = "shared"
	// Guest is a direct message with a person who is not one of the
	// team's full members: a guest of the workspace (Slack's multi- and
	// single-channel guests) or a person of another organisation. The
	// team's memory is built from channels they cannot read, so their DM
	// reads their own memory alone. Its home is the person's scope, the
	// one a Person audience of the same person has: what they said in
	// their DM stays theirs whatever their standing.
	Guest Kind = "guest"
)

func (k Kind) valid() bool {
	switch k {
	case Operator, Person, Private, Team, Shared, Guest:
		return true
	}
	return false
}

// Audience is who can read one conversation. Which ids are set depends on
// Kind (Validate checks it):
//
//	Operator  Platform
//	Person    Platform, Person, and Team unless the platform has none (a Discord DM)
//	Guest     as Person
//	Private   Platform, Team, Chat
//	Team      Platform, Team
//	Shared    Platform, Chat, and Team when known (the workspace the bot heard it in)
type Audience struct {
	Kind     Kind
	Platform string // the adapter: "terminal", "slack", "discord"
	Team     string // Slack team (workspace) id, Discord guild id
	Chat     string // the private or shared conversation: a channel, group DM or thread id
	Person   string // the user id a DM is with
}

// Limits on the parts of an audience. An id is longer on no platform we
// know (Slack's are about 11 characters, Discord's about 19); the name of
// every Home must stay within maxScopeLen.
const (
	maxPlatformLen = 16
	maxIDLen       = 64
)

// ErrInvalid is wrapped by the errors of Validate, ParseAudience and
// ParseScope.
var ErrInvalid = errors.New("invalid audience or scope")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Validate reports whether a is complete and consistent: a known kind, a
// platform name of lowercase letters and digits, exactly the ids its kind
// needs (see Audience), each 1 to 64 printable ASCII characters without a
// slash or a space. The zero Audience is not valid.
func (a Audience) Validate() error {
	if !a.Kind.valid() {
		return invalid("unknown kind %q", a.Kind)
	}
	if !validPlatform(a.Platform) {
		return invalid("platform %q is not 1 to %d lowercase letters and digits starting with a letter", a.Platform, maxPlatformLen)
	}
	// Per field: must be set, may be set, must be empty.
	const (
		empty = iota
		optional
		required
	)
	var team, chat, person int
	switch a.Kind {
	case Person, Guest:
		team, person = optional, required
	case Private:
		team, chat = required, required
	case Team:
		team = required
	case Shared:
		team, chat = optional, required
	}
	for _, f := range [...]struct {
		name, v string
		need    int
	}{{"team", a.Team, team}, {"chat", a.Chat, chat}, {"person", a.Person, person}} {
		switch {
		case f.v == "" && f.need == required:
			return invalid("a %s audience needs a %s id", a.Kind, f.name)
		case f.v != "" && f.need == empty:
			return invalid("a %s audience has no %s id (got %q)", a.Kind, f.name, f.v)
		case f.v != "" && !validID(f.v):
			return invalid("%s id %q is not 1 to %d printable characters without '/' or space", f.name, f.v, maxIDLen)
		}
	}
	if n := len(a.home()); n > maxScopeLen {
		return invalid("its scope name would be %d bytes, more than %d", n, maxScopeLen)
	}
	return nil
}

func validPlatform(p string) bool {
	if p == "" || len(p) > maxPlatformLen || p[0] < 'a' || p[0] > 'z' {
		return false
	}
	for i := range len(p) {
		if c := p[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func validID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for i := range len(id) {
		if c := id[i]; c <= ' ' || c >= 0x7f || c == '/' {
			return false
		}
	}
	return true
}

// Direct reports whether a is a direct message with one person (Person
// or Guest): the only audiences whose words one person alone reads.
func (a Audience) Direct() bool { return a.Kind == Person || a.Kind == Guest }

// IsZero reports whether a is the zero Audience: none was recorded.
func (a Audience) IsZero() bool { return a == Audience{} }

// String is the compact form kept in session metadata and history:
// platform/kind/team/chat-or-person, trailing empty parts left out
// ("terminal/operator", "slack/team/T123", "slack/private/T123/C789",
// "slack/person/T123/U456", "discord/person//U456",
// "slack/guest/T123/U789", "slack/shared/T123/C999"). ParseAudience
// reads it back. The zero
// Audience is ""; another invalid one is shown for logs but does not parse.
func (a Audience) String() string {
	if a.IsZero() {
		return ""
	}
	last := a.Chat
	if a.Direct() {
		last = a.Person
	}
	return strings.TrimRight(string(a.Platform)+"/"+string(a.Kind)+"/"+a.Team+"/"+last, "/")
}

// ParseAudience reads the String form of a valid audience.
func ParseAudience(s string) (Audience, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 4 {
		return Audience{}, invalid("audience %q is not platform/kind[/team[/id]]", s)
	}
	a := Audience{Platform: parts[0], Kind: Kind(parts[1])}
	if len(parts) > 2 {
		a.Team = parts[2]
	}
	if len(parts) > 3 {
		switch a.Kind {
		case Person, Guest:
			a.Person = parts[3]
		case Private, Shared:
			a.Chat = parts[3]
		default:
			return Audience{}, invalid("audience %q: a %s audience has no fourth part", s, a.Kind)
		}
	}
	if err := a.Validate(); err != nil {
		return Audience{}, fmt.Errorf("audience %q: %w", s, err)
	}
	if a.String() != s {
		// "slack/team/T1/" and the like: one audience, one spelling.
		return Audience{}, invalid("audience %q is not in its canonical form %q", s, a.String())
	}
	return a, nil
}

// MarshalText writes the String form, so an Audience can be a JSON field;
// the zero Audience is "" and an invalid one an error.
func (a Audience) MarshalText() ([]byte, error) {
	if a.IsZero() {
		return []byte{}, nil
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return []byte(a.String()), nil
}

// UnmarshalText reads the String form; "" is the zero Audience (none
// recorded, as in files written before audiences existed).
func (a *Audience) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*a = Audience{}
		return nil
	}
	v, err := ParseAudience(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

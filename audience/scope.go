package audience

import (
	"slices"
	"strings"
)

// Scope is a memory scope: "" is the default scope (the workspace root),
// any other value the name of a folder under scopes/. Names are made by
// Home and read by ParseScope (UnmarshalText, for a JSON field); a Scope
// converted from any other string is a bug, which Dir refuses.
type Scope string

// Default is the default scope: the workspace root's memory files.
const Default Scope = ""

// ScopesDir is the workspace-relative folder of the scopes other than the
// default one.
const ScopesDir = "scopes"

// maxScopeLen bounds a scope's name, well under the 255 bytes a file
// system takes for one path element.
const maxScopeLen = 200

// Home is the scope this audience's conversations are archived into, and
// the only one written from them:
//
//	Operator  ""  (the default scope)
//	Person    person-<platform>-<team>-<user>, or person-<platform>-<user> without a team
//	Guest     as Person: the person's own scope
//	Private   private-<platform>-<team>-<chat>
//	Team      team-<platform>-<team>
//	Shared    shared-<platform>-<chat>
//
// Ids are written in lowercase (Slack's T123 becomes t123), and any
// character but an uppercase letter or a digit is escaped, so two ids
// never make one name and no name holds a path. An audience that does not
// Validate has no home: Home returns a name ParseScope refuses and Dir
// panics on, so that nothing is archived for it.
func (a Audience) Home() Scope {
	if a.Validate() != nil {
		return invalidScope
	}
	return Scope(a.home())
}

// invalidScope is what Home gives an invalid audience: no kind prefix
// starts it, so ParseScope and Dir refuse it.
const invalidScope Scope = "invalid"

// home builds the name from a's fields, valid or not.
func (a Audience) home() string {
	p := a.Platform
	switch a.Kind {
	case Operator:
		return ""
	case Person, Guest:
		if a.Team == "" {
			return "person-" + p + "-" + encodeID(a.Person)
		}
		return "person-" + p + "-" + encodeID(a.Team) + "-" + encodeID(a.Person)
	case Private:
		return "private-" + p + "-" + encodeID(a.Team) + "-" + encodeID(a.Chat)
	case Team:
		return "team-" + p + "-" + encodeID(a.Team)
	case Shared:
		return "shared-" + p + "-" + encodeID(a.Chat)
	}
	return string(invalidScope)
}

// Readable lists the scopes this audience's prompts may show, widest
// first; its Home is always the last:
//
//	Team      [team]
//	Private   [team, private]
//	Person    [team, person], or [person] without a team (a Discord DM)
//	Shared    [shared]: people of another organisation read it
//	Guest     [person]: a guest or an outsider reads no team memory
//	Operator  [""]
//
// An audience that does not Validate may read nothing: nil.
func (a Audience) Readable() []Scope {
	if a.Validate() != nil {
		return nil
	}
	home := Scope(a.home())
	if a.Kind == Private || (a.Kind == Person && a.Team != "") {
		team := Audience{Kind: Team, Platform: a.Platform, Team: a.Team}
		return []Scope{Scope(team.home()), home}
	}
	return []Scope{home}
}

// MayRead reports whether s is among a's Readable scopes.
func (a Audience) MayRead(s Scope) bool {
	return slices.Contains(a.Readable(), s)
}

// Dir is the scope's folder, workspace-relative and slash-separated: "" for
// the default scope, "scopes/<name>" for another. It panics on a name
// ParseScope refuses: a Scope comes from Home or ParseScope, so such a
// name is a bug, and a path that might leave scopes/ is worse than a
// crash.
func (s Scope) Dir() string {
	if s == Default {
		return ""
	}
	if err := checkName(string(s)); err != nil {
		panic("audience: Dir of an unchecked scope: " + err.Error())
	}
	return ScopesDir + "/" + string(s)
}

// ParseScope checks a scope name read from outside (a history entry, a
// command's argument, a folder under scopes/): "" is the default scope;
// any other name must be one Home can make, a kind prefix (team-, person-,
// private-, shared-), a platform name and one or two ids in Home's
// alphabet (a-z, 0-9, "_" before a lowercase letter, "." before two hex
// digits), at most 200 bytes. Never "..", a slash or an empty part.
func ParseScope(name string) (Scope, error) {
	if name == "" {
		return Default, nil
	}
	if err := checkName(name); err != nil {
		return "", err
	}
	return Scope(name), nil
}

// UnmarshalText reads a scope through ParseScope, so a JSON field of type
// Scope never holds a name Dir would refuse.
func (s *Scope) UnmarshalText(b []byte) error {
	v, err := ParseScope(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

func checkName(name string) error {
	if len(name) > maxScopeLen {
		return invalid("scope name of %d bytes, more than %d", len(name), maxScopeLen)
	}
	parts := strings.Split(name, "-")
	if len(parts) < 3 {
		return invalid("scope %q is not <kind>-<platform>-<id>", name)
	}
	ids := len(parts) - 2
	switch Kind(parts[0]) {
	case Team, Shared:
		if ids != 1 {
			return invalid("scope %q: a %s scope has one id", name, parts[0])
		}
	case Private:
		if ids != 2 {
			return invalid("scope %q: a private scope has two ids", name)
		}
	case Person:
		if ids != 1 && ids != 2 {
			return invalid("scope %q: a person scope has one or two ids", name)
		}
	default:
		return invalid("scope %q does not start with team-, person-, private- or shared-", name)
	}
	if !validPlatform(parts[1]) {
		return invalid("scope %q: bad platform %q", name, parts[1])
	}
	for _, id := range parts[2:] {
		if !encodedID(id) {
			return invalid("scope %q: %q is not an id as Home writes it", name, id)
		}
	}
	return nil
}

// encodeID writes a platform id in a scope name's alphabet, one to one:
// uppercase letters in lowercase, digits as they are, a lowercase letter
// after "_", any other byte as "." and two hex digits. Platform ids are
// uppercase letters and digits, so they read plainly; the escapes only
// keep an unexpected id from meeting another or spelling a path, and keep
// names apart on file systems that ignore case.
func encodeID(id string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := range len(id) {
		switch c := id[i]; {
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		case c >= '0' && c <= '9':
			b.WriteByte(c)
		case c >= 'a' && c <= 'z':
			b.WriteByte('_')
			b.WriteByte(c)
		default:
			b.WriteByte('.')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
	}
	return b.String()
}

// encodedID reports whether s is a non-empty output of encodeID.
func encodedID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '_':
			if i+1 >= len(s) || s[i+1] < 'a' || s[i+1] > 'z' {
				return false
			}
			i++
		case c == '.':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			// Only a byte without a plain spelling is escaped: one
			// id, one name.
			if d := unhex(s[i+1])<<4 | unhex(s[i+2]); isAlnum(d) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

func isAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// ScopeOfPath is the scope a workspace-relative, slash-separated file
// belongs to: the folder scopes/<name>/ it lies in, else the default scope
// (the root's memory files, and the instructions AGENTS.md and
// prompts/dream.md, which are the operator's). A path under scopes/ whose
// folder is no valid scope name belongs to no scope: ok is false, and no
// audience may read it.
func ScopeOfPath(p string) (s Scope, ok bool) {
	rest, under := strings.CutPrefix(p, ScopesDir+"/")
	if !under {
		return Default, true
	}
	name, _, _ := strings.Cut(rest, "/")
	if name == "" || checkName(name) != nil {
		return "", false
	}
	return Scope(name), true
}

package audience

import "strings"

// Owner is the audience whose Home s is, read back from its name: the
// platform and the ids as the platform spells them (Home writes them in
// its own alphabet, one to one). The memory page names a scope's person or
// channel by these ids. ok is false for the default scope and for a name
// ParseScope refuses; a Team scope's owner has no chat or person, a
// Person scope's is a Person (Home does not record whether a person was a
// guest).
func (s Scope) Owner() (a Audience, ok bool) {
	if s == Default || checkName(string(s)) != nil {
		return Audience{}, false
	}
	parts := strings.Split(string(s), "-")
	a = Audience{Kind: Kind(parts[0]), Platform: parts[1]}
	ids := make([]string, 0, 2)
	for _, p := range parts[2:] {
		ids = append(ids, decodeID(p))
	}
	switch a.Kind {
	case Team:
		a.Team = ids[0]
	case Shared:
		a.Chat = ids[0]
	case Private:
		a.Team, a.Chat = ids[0], ids[1]
	case Person:
		if len(ids) == 2 {
			a.Team, a.Person = ids[0], ids[1]
		} else {
			a.Person = ids[0]
		}
	}
	return a, true
}

// decodeID reverses encodeID on a name checkName accepted.
func decodeID(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
		case c == '_':
			i++
			b.WriteByte(s[i])
		case c == '.':
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

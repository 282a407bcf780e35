package audience

import (
	"math/rand/v2"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseScope(t *testing.T) {
	good := []string{
		"", "team-slack-t123", "team-discord-41771983423143937", "private-slack-t1-c2", "person-slack-t1-u2",
		"person-discord-123", "shared-slack-c999", "team-slack-_a.2e", "team-matrix2-x",
	}
	for _, name := range good {
		s, err := ParseScope(name)
		if err != nil || string(s) != name {
			t.Errorf("ParseScope(%q) = %q, %v", name, s, err)
		}
	}
	bad := []string{
		"..", ".", "scopes", "team", "team-", "team-slack", "team-slack-", "team-slack-t1-", "-team-slack-t1",
		"team-slack-T123",       // capitals: Home writes ids in lowercase
		"team-slack-t1-t2",      // a team scope has one id
		"private-slack-t1",      // a private scope has two
		"private-slack-t1-c1-x", // not three
		"person-slack-t1-u1-x",  // nor a person scope
		"shared-slack-t1-c1",    // a shared scope has one
		"boss-slack-t1",         // no such kind
		"operator-terminal-x",   // the operator's scope is the default one
		"team-Slack-t1",         // platform in capitals
		"team-1slack-t1",        // platform starting with a digit
		"team-slack-t1/..",      // a path
		"team-slack-../x",       // a path
		"team-slack-..",         // dots unescaped
		"team-slack-.2",         // a short escape
		"team-slack-.zz",        // not hex
		"team-slack-.41",        // 'A' has a plain spelling
		"team-slack-_1",         // "_" only before a lowercase letter
		"team-slack-_",          // nor at the end
		"team-slack-t 1",        // a space
		"team-slack-t\x001",     // a NUL
		"team-slack-t1\n",       // a newline
		"team-slack-t\\1",       // a backslash
		"team-slack-" + strings.Repeat("a", 200),
	}
	for _, name := range bad {
		if s, err := ParseScope(name); err == nil {
			t.Errorf("ParseScope(%q) = %q, want an error", name, s)
		}
	}
}

func TestDir(t *testing.T) {
	if d := Default.Dir(); d != "" {
		t.Errorf("default Dir = %q", d)
	}
	if d := Scope("team-slack-t1").Dir(); d != "scopes/team-slack-t1" {
		t.Errorf("Dir = %q", d)
	}
	for _, s := range []Scope{"..", "../x", "team-slack-T1", "invalid", Audience{}.Home()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Dir of %q did not panic", s)
				}
			}()
			_ = s.Dir()
		}()
	}
}

// Two different ids never make one name: encodeID is one to one, also on
// ids no platform sends.
func TestEncodeIDOneToOne(t *testing.T) {
	alphabet := "AZaz09._-:@%/ \x00\xff"
	seen := map[string]string{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		n := 1 + rng.IntN(5)
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		id := string(b)
		enc := encodeID(id)
		if other, ok := seen[enc]; ok && other != id {
			t.Fatalf("%q and %q both encode to %q", id, other, enc)
		}
		seen[enc] = id
		if !encodedID(enc) {
			t.Fatalf("encodedID(encodeID(%q) = %q) = false", id, enc)
		}
	}
}

// Every valid audience's home is a name ParseScope takes, and its String
// form reads back as the same audience.
func TestRandomAudiencesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ids := []string{"", "T1", "C1", "U1", "t", "1", "..", "a.b", "x:y", "%", "_"}
	kinds := []Kind{Operator, Person, Private, Team, Shared, Guest}
	valid := 0
	for range 50000 {
		a := Audience{
			Kind:     kinds[rng.IntN(len(kinds))],
			Platform: []string{"slack", "discord", "terminal"}[rng.IntN(3)],
			Team:     ids[rng.IntN(len(ids))],
			Chat:     ids[rng.IntN(len(ids))],
			Person:   ids[rng.IntN(len(ids))],
		}
		if a.Validate() != nil {
			continue
		}
		valid++
		if s, err := ParseScope(string(a.Home())); err != nil || s != a.Home() {
			t.Fatalf("%#v: ParseScope(Home %q) = %q, %v", a, a.Home(), s, err)
		}
		if back, err := ParseAudience(a.String()); err != nil || back != a {
			t.Fatalf("%#v: ParseAudience(%q) = %#v, %v", a, a.String(), back, err)
		}
	}
	if valid < 1000 {
		t.Fatalf("only %d valid audiences generated", valid)
	}
}

// No input makes a scope whose folder leaves scopes/ or is more than one
// folder below it.
func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"", "team-slack-t1", "private-slack-t1-c1", "../x", "team-slack-.2e.2e", "person-discord-1", "team-slack-_a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		s, err := ParseScope(name)
		if err != nil {
			return
		}
		if string(s) != name {
			t.Fatalf("ParseScope(%q) = %q", name, s)
		}
		dir := s.Dir()
		if s == Default {
			if dir != "" {
				t.Fatalf("default Dir = %q", dir)
			}
			return
		}
		elem, ok := strings.CutPrefix(dir, ScopesDir+"/")
		if !ok || elem == "" || strings.ContainsAny(elem, "/\\:\x00") || elem == "." || elem == ".." ||
			path.Clean(dir) != dir || !filepath.IsLocal(dir) || len(elem) > 255 {
			t.Fatalf("ParseScope(%q) has Dir %q", name, dir)
		}
	})
}

// Whatever audience parses, its home and readable scopes are ones
// ParseScope takes.
func FuzzParseAudience(f *testing.F) {
	for _, s := range []string{"terminal/operator", "slack/team/T1", "slack/private/T1/C1", "discord/person//1", "slack/shared/T1/C9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a, err := ParseAudience(in)
		if err != nil {
			return
		}
		if a.String() != in {
			t.Fatalf("ParseAudience(%q).String() = %q", in, a.String())
		}
		for _, s := range a.Readable() {
			if p, err := ParseScope(string(s)); err != nil || p != s {
				t.Fatalf("%q reads %q, which ParseScope refuses: %v", in, s, err)
			}
			_ = s.Dir()
		}
	})
}

func TestScopeOfPath(t *testing.T) {
	for p, want := range map[string]Scope{
		"USER.md": Default, "memory/MEMORY.md": Default, "AGENTS.md": Default, "prompts/dream.md": Default,
		"scopes/team-slack-t1/USER.md":               "team-slack-t1",
		"scopes/person-slack-t1-u2/memory/MEMORY.md": "person-slack-t1-u2",
		"scopesX/USER.md":                            Default,
	} {
		if got, ok := ScopeOfPath(p); !ok || got != want {
			t.Errorf("ScopeOfPath(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
	for _, p := range []string{"scopes/Team-slack-t1/USER.md", "scopes/../USER.md", "scopes//USER.md", "scopes/USER.md", "scopes/invalid/x"} {
		if got, ok := ScopeOfPath(p); ok {
			t.Errorf("ScopeOfPath(%q) = %q, want none", p, got)
		}
	}
}

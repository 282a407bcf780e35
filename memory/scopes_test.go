package memory

import (
	"slices"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
)

var (
	operator = audience.Audience{Kind: audience.Operator, Platform: "terminal"}
	teamT1   = audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T1"}
	anaDM    = audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}
	guestDM  = audience.Audience{Kind: audience.Guest, Platform: "slack", Team: "T1", Person: "UGUEST"}
	privG1   = audience.Audience{Kind: audience.Private, Platform: "slack", Team: "T1", Chat: "G1"}
	shared1  = audience.Audience{Kind: audience.Shared, Platform: "slack", Chat: "C9"}
	unknown  = audience.Unknown("web:x")
)

// The shared-memory setting is decided here, once: scoped, each audience
// reads its Readable scopes and is archived into its Home; shared,
// everyone reads and is archived into the default scope.
func TestSharedSetting(t *testing.T) {
	for _, shared := range []bool{false, true} {
		m := New(nil, shared)
		for _, a := range []audience.Audience{operator, teamT1, anaDM, guestDM, privG1, shared1, unknown} {
			want, home := a.Readable(), a.Home()
			if shared {
				want, home = []audience.Scope{audience.Default}, audience.Default
			}
			if got := m.Readable(a); !slices.Equal(got, want) {
				t.Errorf("shared %v: Readable(%s) = %v, want %v", shared, a, got, want)
			}
			if got := m.Home(a); got != home {
				t.Errorf("shared %v: Home(%s) = %q, want %q", shared, a, got, home)
			}
			if !m.MayRead(a, home) {
				t.Errorf("shared %v: %s may not read its home", shared, a)
			}
			if got, want := m.OwnFolder(a), !shared && a.Kind != audience.Operator; got != want {
				t.Errorf("shared %v: OwnFolder(%s) = %v", shared, a, got)
			}
		}
		if m.MayRead(anaDM, privG1.Home()) {
			t.Errorf("shared %v: Ana's DM reads a private channel's memory", shared)
		}
	}
}

func TestNames(t *testing.T) {
	for _, s := range []audience.Scope{audience.Default, teamT1.Home(), anaDM.Home()} {
		got, err := ParseName(Name(s))
		if err != nil || got != s {
			t.Errorf("ParseName(Name(%q)) = %q, %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "..", "scopes/team-slack-t1", "team", "DEFAULT"} {
		if _, err := ParseName(bad); err == nil {
			t.Errorf("ParseName(%q) accepted", bad)
		}
	}
}

// One label function: the operator is told whose each scope is; anyone
// else is told as their conversation sees it, and never that a scope is
// theirs alone when it is not.
func TestLabel(t *testing.T) {
	m := New(nil, false)
	cases := []struct {
		s      audience.Scope
		reader audience.Audience
		want   string
	}{
		{audience.Default, operator, "the operator's memory (the workspace root)"},
		{teamT1.Home(), operator, "the team's memory (slack t1)"},
		{anaDM.Home(), operator, "direct messages (slack t1 uana)"},
		{privG1.Home(), operator, "a private conversation (slack t1 g1)"},
		{shared1.Home(), operator, "a shared channel (slack c9)"},
		{teamT1.Home(), audience.Audience{}, "the team's memory (slack t1)"},
		{teamT1.Home(), teamT1, "the team's memory"},
		{teamT1.Home(), anaDM, "the team's memory"},
		{anaDM.Home(), anaDM, "your direct messages' memory"},
		{guestDM.Home(), guestDM, "your direct messages' memory"},
		{privG1.Home(), privG1, "this private conversation's memory"},
		{shared1.Home(), shared1, "this shared channel's memory"},
		{unknown.Home(), unknown, "this conversation's memory"},
	}
	for _, c := range cases {
		if got := m.Label(c.s, c.reader); got != c.want {
			t.Errorf("Label(%q, %s) = %q, want %q", c.s, c.reader, got, c.want)
		}
	}
	sh := New(nil, true)
	if got := sh.Label(audience.Default, anaDM); got != "the shared memory" {
		t.Errorf("shared, Ana's label = %q", got)
	}
	if got := sh.Label(audience.Default, operator); got != "the shared memory (the workspace root)" {
		t.Errorf("shared, the operator's label = %q", got)
	}
}

func TestScopesFollowTheSetting(t *testing.T) {
	ws := t.TempDir()
	for _, s := range []audience.Scope{teamT1.Home(), anaDM.Home()} {
		writeFile(t, ws, s, Soul, "- hi\n")
	}
	got, err := New(NewDisk(ws), false).Scopes()
	if want := []audience.Scope{audience.Default, anaDM.Home(), teamT1.Home()}; err != nil || !slices.Equal(got, want) {
		t.Errorf("scoped: Scopes = %v, %v; want %v", got, err, want)
	}
	got, err = New(NewDisk(ws), true).Scopes()
	if want := []audience.Scope{audience.Default}; err != nil || !slices.Equal(got, want) {
		t.Errorf("shared: Scopes = %v, %v; want %v", got, err, want)
	}
}

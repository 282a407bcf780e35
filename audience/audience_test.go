package audience

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestHomeAndReadable(t *testing.T) {
	cases := []struct {
		name     string
		a        Audience
		home     Scope
		readable []Scope
	}{
		{"terminal", Audience{Kind: Operator, Platform: "terminal"},
			"", []Scope{""}},
		{"slack public channel", Audience{Kind: Team, Platform: "slack", Team: "T123"},
			"team-slack-t123", []Scope{"team-slack-t123"}},
		{"slack private channel", Audience{Kind: Private, Platform: "slack", Team: "T123", Chat: "C789"},
			"private-slack-t123-c789", []Scope{"team-slack-t123", "private-slack-t123-c789"}},
		{"slack DM", Audience{Kind: Person, Platform: "slack", Team: "T123", Person: "U456"},
			"person-slack-t123-u456", []Scope{"team-slack-t123", "person-slack-t123-u456"}},
		{"slack guest's DM", Audience{Kind: Guest, Platform: "slack", Team: "T123", Person: "U789"},
			"person-slack-t123-u789", []Scope{"person-slack-t123-u789"}},
		{"slack connect", Audience{Kind: Shared, Platform: "slack", Team: "T123", Chat: "C999"},
			"shared-slack-c999", []Scope{"shared-slack-c999"}},
		{"discord DM", Audience{Kind: Person, Platform: "discord", Person: "80351110224678912"},
			"person-discord-80351110224678912", []Scope{"person-discord-80351110224678912"}},
		{"discord private thread", Audience{Kind: Private, Platform: "discord", Team: "41771983423143937", Chat: "41771983423143938"},
			"private-discord-41771983423143937-41771983423143938",
			[]Scope{"team-discord-41771983423143937", "private-discord-41771983423143937-41771983423143938"}},
		{"odd ids are escaped", Audience{Kind: Private, Platform: "slack", Team: "T.1", Chat: "..x"},
			"private-slack-t.2e1-.2e.2e_x", []Scope{"team-slack-t.2e1", "private-slack-t.2e1-.2e.2e_x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.a.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := c.a.Home(); got != c.home {
				t.Errorf("Home = %q, want %q", got, c.home)
			}
			got := c.a.Readable()
			if !slices.Equal(got, c.readable) {
				t.Errorf("Readable = %q, want %q", got, c.readable)
			}
			if got[len(got)-1] != c.a.Home() {
				t.Errorf("Readable %q does not end with Home %q", got, c.a.Home())
			}
			for _, s := range got {
				if p, err := ParseScope(string(s)); err != nil || p != s {
					t.Errorf("ParseScope(%q) = %q, %v", s, p, err)
				}
				if !c.a.MayRead(s) {
					t.Errorf("MayRead(%q) = false", s)
				}
			}
		})
	}
}

// The promise of the package: no audience reads the home of another that
// it could not have read, and two teams share nothing.
func TestAudiencesStayApart(t *testing.T) {
	team1 := Audience{Kind: Team, Platform: "slack", Team: "T1"}
	team2 := Audience{Kind: Team, Platform: "slack", Team: "T2"}
	discord1 := Audience{Kind: Team, Platform: "discord", Team: "T1"}
	private1 := Audience{Kind: Private, Platform: "slack", Team: "T1", Chat: "G1"}
	private1b := Audience{Kind: Private, Platform: "slack", Team: "T1", Chat: "G2"}
	private2 := Audience{Kind: Private, Platform: "slack", Team: "T2", Chat: "G1"}
	ana := Audience{Kind: Person, Platform: "slack", Team: "T1", Person: "UANA"}
	bob := Audience{Kind: Person, Platform: "slack", Team: "T1", Person: "UBOB"}
	anaElsewhere := Audience{Kind: Person, Platform: "slack", Team: "T2", Person: "UANA"}
	shared := Audience{Kind: Shared, Platform: "slack", Team: "T1", Chat: "C9"}
	operator := Audience{Kind: Operator, Platform: "terminal"}
	all := []Audience{team1, team2, discord1, private1, private1b, private2, ana, bob, anaElsewhere, shared, operator}

	// who may read whose home, beyond their own
	mayRead := map[[2]Audience]bool{
		{private1, team1}: true, {private1b, team1}: true, {ana, team1}: true, {bob, team1}: true,
		{private2, team2}: true, {anaElsewhere, team2}: true,
	}
	homes := map[Scope]Audience{}
	for _, a := range all {
		if other, ok := homes[a.Home()]; ok {
			t.Errorf("%v and %v share the home %q", a, other, a.Home())
		}
		homes[a.Home()] = a
		for _, b := range all {
			want := a == b || mayRead[[2]Audience{a, b}]
			if got := a.MayRead(b.Home()); got != want {
				t.Errorf("%v may read %v's home %q: %v, want %v", a, b, b.Home(), got, want)
			}
		}
	}
}

// A guest's DM reads its person's scope alone, never the team's; its home
// is the one the same person's DM has as a member, so their words stay
// theirs whatever their standing, and no other audience reads it.
func TestGuestReadsNoTeamMemory(t *testing.T) {
	team := Audience{Kind: Team, Platform: "slack", Team: "T1"}
	member := Audience{Kind: Person, Platform: "slack", Team: "T1", Person: "UGUS"}
	guest := Audience{Kind: Guest, Platform: "slack", Team: "T1", Person: "UGUS"}
	other := Audience{Kind: Person, Platform: "slack", Team: "T1", Person: "UANA"}
	if guest.MayRead(team.Home()) {
		t.Error("a guest's DM reads the team's memory")
	}
	if guest.Home() != member.Home() {
		t.Errorf("a guest's home %q is not the person's %q", guest.Home(), member.Home())
	}
	if guest.MayRead(other.Home()) || other.MayRead(guest.Home()) || team.MayRead(guest.Home()) {
		t.Error("a guest's DM and another audience read each other")
	}
	if !guest.Direct() || !member.Direct() || team.Direct() {
		t.Error("Direct: want true for Person and Guest alone")
	}
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("A", maxIDLen+1)
	bad := []struct {
		name string
		a    Audience
	}{
		{"zero", Audience{}},
		{"unknown kind", Audience{Kind: "everyone", Platform: "slack", Team: "T1"}},
		{"no platform", Audience{Kind: Team, Team: "T1"}},
		{"platform with a dash", Audience{Kind: Team, Platform: "sl-ack", Team: "T1"}},
		{"platform in capitals", Audience{Kind: Team, Platform: "Slack", Team: "T1"}},
		{"team without a team", Audience{Kind: Team, Platform: "slack"}},
		{"team with a chat", Audience{Kind: Team, Platform: "slack", Team: "T1", Chat: "C1"}},
		{"private without a chat", Audience{Kind: Private, Platform: "slack", Team: "T1"}},
		{"private without a team", Audience{Kind: Private, Platform: "slack", Chat: "C1"}},
		{"private with a person", Audience{Kind: Private, Platform: "slack", Team: "T1", Chat: "C1", Person: "U1"}},
		{"person without a person", Audience{Kind: Person, Platform: "slack", Team: "T1"}},
		{"person with a chat", Audience{Kind: Person, Platform: "slack", Team: "T1", Person: "U1", Chat: "D1"}},
		{"guest without a person", Audience{Kind: Guest, Platform: "slack", Team: "T1"}},
		{"guest with a chat", Audience{Kind: Guest, Platform: "slack", Team: "T1", Person: "U1", Chat: "D1"}},
		{"shared without a chat", Audience{Kind: Shared, Platform: "slack", Team: "T1"}},
		{"operator with a team", Audience{Kind: Operator, Platform: "terminal", Team: "T1"}},
		{"id with a slash", Audience{Kind: Team, Platform: "slack", Team: "T1/T2"}},
		{"id with a space", Audience{Kind: Team, Platform: "slack", Team: "T1 "}},
		{"id with a NUL", Audience{Kind: Team, Platform: "slack", Team: "T\x00"}},
		{"id with a newline", Audience{Kind: Team, Platform: "slack", Team: "T\n"}},
		{"id not ASCII", Audience{Kind: Team, Platform: "slack", Team: "Té"}},
		{"id too long", Audience{Kind: Team, Platform: "slack", Team: long}},
		{"name too long", Audience{Kind: Private, Platform: "slack", Team: strings.Repeat(".", 40), Chat: strings.Repeat(".", 40)}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			err := c.a.Validate()
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate = %v, want ErrInvalid", err)
			}
			if c.a.Readable() != nil {
				t.Errorf("an invalid audience reads %q", c.a.Readable())
			}
			home := c.a.Home()
			if _, err := ParseScope(string(home)); err == nil || home == Default {
				t.Errorf("an invalid audience has the home %q", home)
			}
		})
	}
}

func TestStringForm(t *testing.T) {
	cases := []struct {
		a Audience
		s string
	}{
		{Audience{Kind: Operator, Platform: "terminal"}, "terminal/operator"},
		{Audience{Kind: Team, Platform: "slack", Team: "T123"}, "slack/team/T123"},
		{Audience{Kind: Private, Platform: "slack", Team: "T123", Chat: "C789"}, "slack/private/T123/C789"},
		{Audience{Kind: Person, Platform: "slack", Team: "T123", Person: "U456"}, "slack/person/T123/U456"},
		{Audience{Kind: Person, Platform: "discord", Person: "1234"}, "discord/person//1234"},
		{Audience{Kind: Guest, Platform: "slack", Team: "T123", Person: "U789"}, "slack/guest/T123/U789"},
		{Audience{Kind: Shared, Platform: "slack", Team: "T123", Chat: "C999"}, "slack/shared/T123/C999"},
		{Audience{Kind: Shared, Platform: "slack", Chat: "C999"}, "slack/shared//C999"},
	}
	for _, c := range cases {
		if got := c.a.String(); got != c.s {
			t.Errorf("%#v.String() = %q, want %q", c.a, got, c.s)
		}
		back, err := ParseAudience(c.s)
		if err != nil || back != c.a {
			t.Errorf("ParseAudience(%q) = %#v, %v; want %#v", c.s, back, err, c.a)
		}
	}
	for _, s := range []string{
		"", "slack", "slack/team", "slack/team/T1/", "slack/team/T1/C1", "terminal/operator/", "slack/team//",
		"slack/private/T1", "slack/person/T1", "slack/guest/T1", "slack/boss/T1", "slack/team/T1/C1/x", "/team/T1", "slack//T1",
		"discord/person/1234", // a person id in the team's place
	} {
		if a, err := ParseAudience(s); err == nil {
			t.Errorf("ParseAudience(%q) = %#v, want an error", s, a)
		}
	}
}

func TestJSON(t *testing.T) {
	type record struct {
		Audience Audience `json:"audience"`
		Scope    Scope    `json:"scope,omitempty"`
	}
	in := record{Audience: Audience{Kind: Private, Platform: "slack", Team: "T1", Chat: "G1"}, Scope: "private-slack-t1-g1"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"audience":"slack/private/T1/G1","scope":"private-slack-t1-g1"}`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
	var out record
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Errorf("round trip = %#v, %v", out, err)
	}

	// Nothing recorded (files older than audiences): zero values.
	b, _ = json.Marshal(record{})
	if string(b) != `{"audience":""}` {
		t.Errorf("zero json = %s", b)
	}
	out = record{}
	if err := json.Unmarshal([]byte(`{"audience":""}`), &out); err != nil || out != (record{}) {
		t.Errorf("zero round trip = %#v, %v", out, err)
	}

	if _, err := json.Marshal(record{Audience: Audience{Kind: Team, Platform: "slack"}}); err == nil {
		t.Error("an invalid audience was written")
	}
	for _, bad := range []string{`{"scope":"../etc"}`, `{"scope":"team-slack-T1"}`, `{"audience":"slack/team"}`} {
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("%s was read as %#v", bad, out)
		}
	}
}

// Home and Readable run for every turn; they validate first.
func BenchmarkReadable(b *testing.B) {
	a := Audience{Kind: Private, Platform: "slack", Team: "T0123ABCD", Chat: "C0456EFGH"}
	for b.Loop() {
		if len(a.Readable()) != 2 {
			b.Fatal("wrong scopes")
		}
	}
}

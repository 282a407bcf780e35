package audience

import "testing"

// A scope's name gives back the audience it is the home of, ids spelled
// as the platform spells them.
func TestScopeOwner(t *testing.T) {
	for _, a := range []Audience{
		{Kind: Person, Platform: "slack", Team: "T1", Person: "U0ANA"},
		{Kind: Person, Platform: "discord", Person: "80351110224678912"},
		{Kind: Team, Platform: "slack", Team: "T1"},
		{Kind: Private, Platform: "slack", Team: "T1", Chat: "G0PRIV"},
		{Kind: Shared, Platform: "slack", Chat: "C0SHARED"},
		{Kind: Person, Platform: "slack", Team: "T1", Person: "weird.id-x_Y"},
	} {
		got, ok := a.Home().Owner()
		if !ok || got != a {
			t.Errorf("%s: owner %+v, %v; want %+v", a.Home(), got, ok, a)
		}
	}
	if _, ok := Default.Owner(); ok {
		t.Error("the default scope has an owner")
	}
	if _, ok := Scope("person-slack-../x").Owner(); ok {
		t.Error("a bad name has an owner")
	}
}

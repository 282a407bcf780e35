package audience

import "testing"

// Unknown is valid, reads only its own scope, is the same for the same key
// and different for different keys, and its scope is none a platform's
// audience has.
func TestUnknown(t *testing.T) {
	a := Unknown("slack:C1:1712.55")
	if err := a.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if r := a.Readable(); len(r) != 1 || r[0] != a.Home() {
		t.Errorf("Readable = %q, want only its home %q", r, a.Home())
	}
	if a.MayRead(Default) || a.MayRead(Audience{Kind: Team, Platform: "slack", Team: "T1"}.Home()) {
		t.Error("an unknown audience reads the default or a team scope")
	}
	if !a.IsUnknown() || (Audience{Kind: Shared, Platform: "slack", Chat: "C1"}).IsUnknown() {
		t.Error("IsUnknown is wrong")
	}
	if Unknown("slack:C1:1712.55") != a {
		t.Error("the same key gave another audience")
	}
	if Unknown("slack:C1:1712.56").Home() == a.Home() || Unknown("").Home() == a.Home() {
		t.Error("two keys share a scope")
	}
	if p, err := ParseScope(string(a.Home())); err != nil || p != a.Home() {
		t.Errorf("ParseScope(%q) = %q, %v", a.Home(), p, err)
	}
	back, err := ParseAudience(a.String())
	if err != nil || back != a {
		t.Errorf("ParseAudience(%q) = %v, %v", a.String(), back, err)
	}
	t.Logf("home: %s", a.Home())
}

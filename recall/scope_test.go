package recall

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/dreamgate/dreamgate/audience"
)

// hostileQueries try to widen a search with the index's query language
// (column filters, operators, prefix and NEAR queries, quotes) and SQL.
var hostileQueries = []string{
	"K7Q2Z9",
	"k7q2z9*",
	`"K7Q2Z9"`,
	"text:K7Q2Z9",
	"{text}: K7Q2Z9",
	"terms:K7Q2Z9",
	"scope:person-slack-t1-uana K7Q2Z9",
	"person-slack-t1-uana",
	"K7Q2Z9 OR *",
	"* OR K7Q2Z9",
	"NEAR(K7Q2Z9 salary, 5)",
	"K7Q2Z9) OR rowid > 0 OR (x",
	"' OR 1=1 --",
	`"); DROP TABLE docs; --`,
	"^K7Q2Z9",
	"K7Q2Z9 AND NOT zzz",
	"salary band",
	"- K7Q2Z9 + VORTEXPLUM",
	"VORTEXPLUM",
	"vortex*",
	"rowid:1",
	"\x00K7Q2Z9",
	"K7Q2Z9\u00a0VORTEXPLUM",
}

// secretsFixture plants Ana's DM secret and a private channel's in every
// source, and things the team and others may find.
func secretsFixture(t testing.TB) *fixture {
	f := newFixture(t)
	ana, priv := anaDM.Home(), private.Home()
	f.archive(t, ana, "- Ana's salary band is K7Q2Z9 (keep it between us)", "slack:DANA")
	f.convs.say("slack:DANA", anaDM, 0, user("Ana", "My salary band is K7Q2Z9. Please keep that between us."))
	f.cold(t, ana, "- (durable, 2026-01-02) salary band K7Q2Z9\n")
	f.archive(t, priv, "- Project Falcon launch code name is VORTEXPLUM", "slack:CPRIV")
	f.convs.say("slack:CPRIV", private, 0, user("Cy", "The launch code name is VORTEXPLUM, only this channel knows."))
	f.cold(t, priv, "- VORTEXPLUM\n")
	f.archive(t, team1.Home(), "- the salary review is in March", "slack:C1")
	f.convs.say("slack:C1", team1, 0, user("Bob", "what is the salary band policy?"))
	f.archive(t, team2.Home(), "- team two's salary band talk", "slack:C2")
	f.archive(t, audience.Default, "- operator notes on salary band", "terminal:default")
	f.update(t)
	return f
}

// A term planted in one scope is never returned to a search over others,
// whatever the query holds; the scope that holds it finds it.
func TestScopeFilterIsHard(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := secretsFixture(t)
		bobDM := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UBOB"}
		shared := audience.Audience{Kind: audience.Shared, Platform: "slack", Team: "T1", Chat: "CSH"}
		others := map[string][]audience.Scope{
			"team":       team1.Readable(),
			"other team": team2.Readable(),
			"bob's DM":   bobDM.Readable(),
			"shared":     shared.Readable(),
			"operator":   op.Readable(),
			"unknown":    audience.Unknown("slack:CPRIV").Readable(),
			"no home":    {audience.Scope("invalid")},
		}
		for who, readable := range others {
			for _, q := range hostileQueries {
				res, err := f.idx.Search(context.Background(), q, readable, MaxLimit)
				if err != nil {
					t.Errorf("%s, %q: %v", who, q, err)
					continue
				}
				for _, m := range res.Matches {
					if !slices.Contains(readable, m.Scope) || strings.Contains(m.Text, "K7Q2Z9") || strings.Contains(m.Text, "VORTEXPLUM") {
						t.Errorf("%s searching %q got %+v", who, q, m)
					}
				}
			}
		}
		// Team members find the team's own things, not the DM's.
		if got := f.search(t, "salary band", team1.Readable()...); len(got) != 2 {
			t.Errorf("team search for salary band: %+v", got)
		}
		// The audiences that may read them find them.
		if got := f.search(t, "K7Q2Z9", anaDM.Readable()...); len(got) != 3 {
			t.Errorf("Ana's DM finds %d of its 3 mentions: %+v", len(got), got)
		}
		if got := f.search(t, "vortexplum", private.Readable()...); len(got) != 3 {
			t.Errorf("the private channel finds %d of its 3: %+v", len(got), got)
		}
	})
}

// Random documents in random scopes, each with a word of its own; random
// searches over random sets of scopes: every match is of a scope searched,
// and every document of a searched scope with the word is found.
func TestScopeFilterProperty(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := newFixture(t)
		rng := rand.New(rand.NewPCG(7, 11))
		var scopes []audience.Scope
		for i := range 12 {
			a := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: fmt.Sprintf("U%d", i)}
			scopes = append(scopes, a.Home())
		}
		scopes = append(scopes, audience.Default)
		type planted struct {
			scope audience.Scope
			word  string
		}
		var all []planted
		cold := map[audience.Scope]string{}
		for i := range 120 {
			s := scopes[rng.IntN(len(scopes))]
			word := fmt.Sprintf("tok%dx%d", i, rng.IntN(1000))
			common := []string{"alpha", "beta", "gamma"}[rng.IntN(3)]
			switch rng.IntN(3) {
			case 0:
				f.archive(t, s, "- "+common+" "+word, "k")
			case 1:
				a := audience.Audience{Kind: audience.Operator, Platform: "terminal"}
				if s != audience.Default {
					a = audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: strings.ToUpper(strings.TrimPrefix(string(s), "person-slack-t1-"))}
				}
				f.convs.say(fmt.Sprintf("conv%d", i), a, 0, user("X", common+" "+word))
			default:
				cold[s] += "- " + common + " " + word + "\n"
			}
			all = append(all, planted{s, word})
		}
		for s, text := range cold {
			f.cold(t, s, text)
		}
		f.update(t)
		for range 80 {
			var readable []audience.Scope
			for _, s := range scopes {
				if rng.IntN(4) == 0 {
					readable = append(readable, s)
				}
			}
			p := all[rng.IntN(len(all))]
			res, err := f.idx.Search(context.Background(), p.word+" alpha", readable, MaxLimit)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, m := range res.Matches {
				if !slices.Contains(readable, m.Scope) {
					t.Fatalf("match of scope %q for a search of %v", m.Scope, readable)
				}
				if strings.Contains(m.Text, p.word) {
					found = true
				}
			}
			if slices.Contains(readable, p.scope) && !found {
				t.Errorf("%q of scope %q not found searching %v", p.word, p.scope, readable)
			}
			if !slices.Contains(readable, p.scope) && found {
				t.Errorf("%q of scope %q found searching %v", p.word, p.scope, readable)
			}
		}
	})
}

// A query can only ever become quoted words of letters and digits joined
// by AND: nothing of the index's query language, whatever the input.
func FuzzTerms(f *testing.F) {
	for _, q := range hostileQueries {
		f.Add(q)
	}
	f.Add(strings.Repeat("word ", 100))
	f.Add("ÉCOLE naïve 東京 ٣٤")
	f.Fuzz(func(t *testing.T, q string) {
		terms := Terms(q)
		if len(terms) > maxTerms {
			t.Fatalf("%d terms", len(terms))
		}
		for _, term := range terms {
			if term == "" || len(term) > maxTermLen {
				t.Fatalf("term %q", term)
			}
			for _, r := range term {
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					t.Fatalf("term %q of %q holds %q", term, q, r)
				}
			}
		}
		want := make([]string, len(terms))
		for i, term := range terms {
			want[i] = `"` + term + `"`
		}
		if got := matchAll(terms); got != strings.Join(want, " AND ") {
			t.Fatalf("matchAll(%q) = %q", terms, got)
		}
	})
}

// Whatever the query, a search over the team's scope never fails and
// never returns what the DM or the private channel hold.
func FuzzSearchStaysInScope(f *testing.F) {
	for _, q := range hostileQueries {
		f.Add(q)
	}
	fx := secretsFixture(f)
	readable := team1.Readable()
	f.Fuzz(func(t *testing.T, q string) {
		res, err := fx.idx.Search(context.Background(), q, readable, MaxLimit)
		if err != nil {
			t.Fatalf("Search(%q): %v", q, err)
		}
		for _, m := range res.Matches {
			if m.Scope != team1.Home() || strings.Contains(m.Text, "K7Q2Z9") || strings.Contains(m.Text, "VORTEXPLUM") {
				t.Fatalf("Search(%q) over the team returned %+v", q, m)
			}
		}
	})
}

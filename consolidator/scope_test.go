package consolidator

import (
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
)

var (
	teamT1  = audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T1"}
	anaDM   = audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}
	privG1  = audience.Audience{Kind: audience.Private, Platform: "slack", Team: "T1", Chat: "G1"}
	teamT2  = audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T2"}
	unknown = audience.Unknown("slack:C9")
)

// Every archive entry, summary or raw, is written in the Home scope of its
// conversation's audience, and the operator's in the default scope; in
// shared mode (memory.scoped false) every entry is in the default scope.
func TestArchiveWritesTheSessionsHomeScope(t *testing.T) {
	for _, shared := range []bool{false, true} {
		for _, aud := range []audience.Audience{{}, teamT1, anaDM, privG1, unknown} {
			for _, raw := range []bool{false, true} {
				var m Model = newFakeModel(t)
				if raw {
					m = newFakeModel(t, step{err: &llm.Error{Kind: llm.ErrUnavailable, Reason: "HTTP 503"}})
				}
				cfg := baseConfig
				cfg.Scopes = memory.New(nil, shared)
				c, store := newTestConsolidator(t, m, cfg)
				s := newSession("slack:C1", user("hello"), assistant("hi"))
				s.aud = aud
				if _, err := c.ArchiveTail(t.Context(), s); err != nil {
					t.Fatal(err)
				}
				es, err := store.Since(0, 0)
				if err != nil || len(es) != 1 {
					t.Fatalf("entries %+v, %v", es, err)
				}
				want := s.Audience().Home()
				if shared {
					want = audience.Default
				}
				if es[0].Scope != want || raw != strings.HasPrefix(es[0].Content, rawPrefix) {
					t.Errorf("shared %v, audience %v, raw %v: entry of scope %q (%.20q), want %q", shared, aud, raw, es[0].Scope, es[0].Content, want)
				}
			}
		}
	}
}

// A conversation's Recent history shows only the entries of scopes its
// audience may read: a DM shows its own and its team's, never another
// person's or another team's, and never the default scope's; in shared
// mode only the default scope's.
func TestRecentHistoryShowsReadableScopesOnly(t *testing.T) {
	for _, shared := range []bool{false, true} {
		cfg := baseConfig
		cfg.Scopes = memory.New(nil, shared)
		c, store := newTestConsolidator(t, newFakeModel(t), cfg)
		write := func(scope audience.Scope, text string) {
			t.Helper()
			if _, err := store.AppendIn(scope, text, "slack:D1"); err != nil {
				t.Fatal(err)
			}
		}
		write(audience.Default, "- operator fact")
		write(teamT1.Home(), "- team fact")
		write(anaDM.Home(), "- ana fact")
		write(privG1.Home(), "- private fact")
		write(teamT2.Home(), "- other team fact")
		s := newSession("slack:D1")
		s.aud = anaDM
		got, err := c.recentHistory(s)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"- team fact", "- ana fact"}
		if shared {
			want = []string{"- operator fact"}
		}
		for _, f := range []string{"- operator fact", "- team fact", "- ana fact", "- private fact", "- other team fact"} {
			if shown, ok := strings.Contains(got, f), slices.Contains(want, f); shown != ok {
				t.Errorf("shared %v: %q shown %v, want %v:\n%s", shared, f, shown, ok, got)
			}
		}
	}
}

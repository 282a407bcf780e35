package web

import (
	"context"
	"fmt"
	"testing"
)

// fakeNames names what a Slack workspace would.
type fakeNames map[string]string

func (n fakeNames) PersonName(_ context.Context, platform, _, person string) string {
	return n[platform+":"+person]
}

func (n fakeNames) ChatName(_ context.Context, platform, _, chat string) string {
	return n[platform+":"+chat]
}

// Scopes, viewers and conversations are named beside their ids as the
// platform names them; what it does not name shows the id alone.
func TestNamesBesideIDs(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	f.srv.deps.Names = fakeNames{"slack:UANA": "Ana", "slack:C1": "general"}
	mustContain(t, f.operator().get("/memory").body, "Direct messages (slack t1 uana) — Ana", "Direct messages (slack t1 ubob)</a>")
	anaC := f.person(ana)
	mustContain(t, anaC.get("/").body, "Ana (slack user UANA)")
	page := anaC.get(fmt.Sprintf("/entries/%s?c=%d", teamScope, f.cur["team"])).body
	mustContain(t, page, "slack:C1</code> #general")
	mustContain(t, anaC.get("/timeline").body, "Direct messages (slack t1 uana) — Ana")
}

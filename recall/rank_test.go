package recall

import (
	"strings"
	"testing"
)

// What people said and cold memory rank above the assistant's own answers:
// an answer quoting the fact is newer and holds every word the person's
// message does, yet the person's words come first, and cold memory's line
// too.
func TestSearchRanksPeopleAboveTheAssistantsAnswers(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := newFixture(t)
		team := team1.Home()
		f.convs.say("slack:C1", team1, 0,
			user("Ana", "My locker combination is LOCKER4417."),
			reply("I found: Ana's locker combination is LOCKER4417."))
		f.cold(t, team, "# Cold memory\n\n- (durable, 2025-06-01) The old locker combination was LOCKER1111\n")
		f.update(t)
		got := f.search(t, "locker combination", team)
		if len(got) != 3 {
			t.Fatalf("found %d, want the message, the answer and the cold line: %+v", len(got), got)
		}
		if got[0].Who != "Ana" || got[1].Kind != KindCold || got[2].Who != "assistant" {
			var order []string
			for _, m := range got {
				order = append(order, m.Who+" "+m.Text)
			}
			t.Errorf("order:\n%s\nwant Ana's words, then cold memory, then the assistant's answer", strings.Join(order, "\n"))
		}
		// Alone, the assistant's answer is still found.
		if got := f.search(t, "found", team); len(got) != 1 || got[0].Who != "assistant" {
			t.Errorf("the answer alone: %+v", got)
		}
	})
}

package slack

import (
	"context"
	"fmt"
	"testing"

	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// What describing a channel costs (conversations.info, its members, who
// each member is) for a channel of n members, through the fake's Web API:
// the first time (nobody known: users.list in pages of 200 instead of one
// users.info each) and again once the people are known (info and members
// only). Reported per description: Web API calls and time.
//
//	go test -run '^$' -bench BenchmarkDescribeChannel -benchtime 20x ./channels/slack/
func BenchmarkDescribeChannel(b *testing.B) {
	for _, n := range []int{50, 2000} {
		people := make([]fakeslack.Person, n)
		ids := make([]string, n)
		for i := range people {
			ids[i] = fmt.Sprintf("U%05d", i)
			people[i] = fakeslack.Person{ID: ids[i], Name: ids[i]}
		}
		fake := fakeslack.New(fakeslack.Config{People: people, Conversations: []fakeslack.Conversation{{ID: "C1", Members: ids}}})
		a, err := New(Config{BotToken: fake.BotToken(), AppToken: fake.AppToken(), APIURL: fake.APIURL()})
		if err != nil {
			b.Fatal(err)
		}
		r := &runner{a: a, botUserID: fake.BotUserID()}
		for _, warm := range []bool{false, true} {
			b.Run(fmt.Sprintf("members=%d/people-known=%v", n, warm), func(b *testing.B) {
				if warm {
					r.describe(context.Background(), fakeslack.DefaultTeamID, "C1")
				}
				calls := 0
				for b.Loop() {
					if !warm {
						b.StopTimer()
						a.people = newPeople(a.now)
						b.StartTimer()
					}
					before := len(fake.Calls())
					if info := r.describe(context.Background(), fakeslack.DefaultTeamID, "C1"); info.kind != convPublic || info.outsiders {
						b.Fatalf("described %+v", info)
					}
					calls += len(fake.Calls()) - before
				}
				b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
			})
		}
		fake.Close()
	}
}

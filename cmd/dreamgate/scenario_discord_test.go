package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// The Discord side of the scenarios: a bot in two servers, one on each
// of two shards (Discord gives a server's events to the shard
// (server_id >> 22) % shards), each with one text channel: C0 in the
// server of shard 0, C1 in shard 1's.

// scenarioGuilds are the two servers: the id of each is chosen so that
// its shard is its index.
var scenarioGuilds = []struct{ guild, channel string }{
	{guild: fmt.Sprint(2 << 22), channel: "C0"},
	{guild: fmt.Sprint(1 << 22), channel: "C1"},
}

// discord start | discord shards S... | discord identified SHARD N
// discord say CHANNEL TEXT... | discord answered CHANNEL N
// discord commands N
//
// start runs the fake Discord; shards waits until exactly the listed
// shards have a live session; identified waits until SHARD was identified
// N times (a takeover identifies it anew) and is live; say posts as a
// person in CHANNEL, mentioning the bot; answered waits until the bot
// posted N messages in CHANNEL and writes them to stdout, one a line;
// commands checks that the slash commands were declared N times (bulk
// overwrites).
func cmdScenarioDiscord(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: discord start|shards|identified|say|answered|commands ...")
	}
	s := scenarioOf(ts)
	if args[0] != "start" && s.discord == nil {
		ts.Fatalf("discord: start the fake first")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	switch args[0] {
	case "start":
		dc, err := fakediscord.Start(fakediscord.Config{})
		ts.Check(err)
		for _, g := range scenarioGuilds {
			dc.AddGuild(g.guild, fakediscord.Channel{ID: g.channel, GuildID: g.guild, Name: strings.ToLower(g.channel), Type: fakediscord.ChannelText})
		}
		s.discord = dc
	case "shards":
		want := strings.Join(args[1:], " ")
		if !s.waitDiscord(ctx, func() bool { return fmt.Sprint(s.discord.LiveShards()) == "["+want+"]" }) {
			ts.Fatalf("live shards %v, want [%s]", s.discord.LiveShards(), want)
		}
	case "identified":
		ts.Check(s.discord.WaitIdentified(ctx, argInt(ts, args, 1), argInt(ts, args, 2)))
	case "say":
		_, err := s.discord.InjectMessage(fakediscord.Message{ChannelID: args[1], Author: fakediscord.User{ID: "U7", Username: "ana"},
			Content: "<@" + s.discord.BotID() + "> " + strings.Join(args[2:], " ")})
		ts.Check(err)
	case "answered":
		channel, n := args[1], argInt(ts, args, 2)
		var got []string
		if !s.waitDiscord(ctx, func() bool {
			got = got[:0]
			for _, m := range s.discord.Sent() {
				if m.ChannelID == channel {
					got = append(got, m.Content)
				}
			}
			return len(got) >= n
		}) {
			ts.Fatalf("%d posts in %s, want %d: %q", len(got), channel, n, got)
		}
		for _, g := range got {
			fmt.Fprintln(ts.Stdout(), g)
		}
	case "commands":
		if got := s.discord.CommandPuts(); got != argInt(ts, args, 1) {
			ts.Fatalf("the slash commands were declared %d times, want %s", got, args[1])
		}
	default:
		ts.Fatalf("discord: unknown action %q", args[0])
	}
}

// waitDiscord polls cond (the fake's state, read through its methods)
// until it holds or ctx ends.
func (s *scenario) waitDiscord(ctx context.Context, cond func() bool) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

package discord

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// startShard runs an adapter as one shard against fake until the test ends.
func startShard(t *testing.T, fake *fakediscord.Server, id, count int) *recSink {
	t.Helper()
	a, err := New(Config{Token: fake.Token(), APIURL: fake.URL(), GroupPolicy: PolicyOpen, ShardID: id, ShardCount: count})
	if err != nil {
		t.Fatal(err)
	}
	a.tune = testTuning
	sink := newRecSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shard %d: Run: %v", id, err)
		}
	})
	return sink
}

// Two processes, shards 0/2 and 1/2, split the bot's guilds as Discord
// routes them ((guild_id >> 22) % 2; direct messages to shard 0), so no
// session is ever loaded by both.
func TestShardsNeverShareASession(t *testing.T) {
	t.Parallel()
	fake, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	const guilds = 6
	for k := 1; k <= guilds; k++ {
		g := strconv.FormatInt(int64(k)<<22, 10)
		fake.AddGuild(g, fakediscord.Channel{ID: fmt.Sprint("CH", k), Name: "general", Type: fakediscord.ChannelText})
	}
	fake.AddChannel(fakediscord.Channel{ID: "D1", Type: fakediscord.ChannelDM})
	sinks := []*recSink{startShard(t, fake, 0, 2), startShard(t, fake, 1, 2)}
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := fake.WaitSessions(ctx, 2); err != nil {
		t.Fatal(err)
	}
	shards := map[fakediscord.ShardInfo]bool{}
	for _, s := range fake.Identified() {
		shards[s] = true
	}
	if !shards[fakediscord.ShardInfo{ID: 0, Count: 2}] || !shards[fakediscord.ShardInfo{ID: 1, Count: 2}] {
		t.Fatalf("identified as %v", fake.Identified())
	}

	const perChannel = 3
	for round := range perChannel {
		for k := 1; k <= guilds; k++ {
			if _, err := fake.InjectMessage(fakediscord.Message{ChannelID: fmt.Sprint("CH", k),
				Author: fakediscord.User{ID: "U1"}, Content: fmt.Sprint("hello ", round)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := fake.InjectMessage(fakediscord.Message{ChannelID: "D1", Author: fakediscord.User{ID: "U1"}, Content: "dm"}); err != nil {
			t.Fatal(err)
		}
	}

	owner := map[string]int{} // session key -> shard that loaded it
	for range (guilds + 1) * perChannel {
		var in channels.Inbound
		shard := -1
		select {
		case in = <-sinks[0].ch:
			shard = 0
		case in = <-sinks[1].ch:
			shard = 1
		case <-ctx.Done():
			t.Fatalf("deliveries stopped after %d sessions", len(owner))
		}
		if prev, ok := owner[in.SessionKey]; ok && prev != shard {
			t.Fatalf("session %s loaded by shard %d and shard %d", in.SessionKey, prev, shard)
		}
		owner[in.SessionKey] = shard
	}
	for k := 1; k <= guilds; k++ {
		key := fmt.Sprint("discord:CH", k)
		if want := k % 2; owner[key] != want {
			t.Errorf("%s handled by shard %d, want %d", key, owner[key], want)
		}
	}
	if owner["discord:D1"] != 0 {
		t.Errorf("DM handled by shard %d, want 0", owner["discord:D1"])
	}
}

// "auto" identifies with the count Discord recommends.
func TestShardCountAuto(t *testing.T) {
	t.Parallel()
	fake, err := fakediscord.Start(fakediscord.Config{RecommendedShards: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	startShard(t, fake, 2, AutoShards)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := fake.WaitSessions(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := fake.Identified(); len(got) != 1 || got[0] != (fakediscord.ShardInfo{ID: 2, Count: 3}) {
		t.Fatalf("identified as %v", got)
	}
}

// A shard id beyond the recommended count stops the channel with a clear
// error instead of connecting as a shard Discord does not route to.
func TestShardAutoOutOfRange(t *testing.T) {
	t.Parallel()
	fake, err := fakediscord.Start(fakediscord.Config{RecommendedShards: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	a, err := New(Config{Token: fake.Token(), APIURL: fake.URL(), ShardID: 3, ShardCount: AutoShards})
	if err != nil {
		t.Fatal(err)
	}
	a.tune = testTuning
	if err := a.Run(t.Context(), newRecSink()); !errors.Is(err, ErrShardOutOfRange) {
		t.Fatalf("Run = %v, want ErrShardOutOfRange", err)
	}
}

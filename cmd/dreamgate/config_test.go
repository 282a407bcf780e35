package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Config mistakes exit 2 and name the key (or variable) and the file, in
// plain words.
func TestConfigMistakesAreNamed(t *testing.T) {
	h := newHarness(t)
	check := func(r runResult, want ...string) {
		t.Helper()
		if r.code != 2 {
			t.Errorf("exit %d, want 2\n%s", r.code, r.stderr)
		}
		for _, w := range want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
			}
		}
	}

	check(h.runEnv([]string{"DREAMGATE_LOG_LEVEL=loud"}, "status"),
		"DREAMGATE_LOG_LEVEL", `must be debug, info, warn or error, got "loud"`)
	if r := h.runEnv([]string{"DREAMGATE_LOG_LEVEL=debug"}, "status"); r.code != 0 {
		t.Errorf("DREAMGATE_LOG_LEVEL=debug: exit %d\n%s", r.code, r.stderr)
	}

	h.set("gateway.healthAddr", "127.0.0.1:99999")
	check(h.run("status"), h.cfgPath, "gateway.healthAddr", "port from 0 to 65535")
	h.set("gateway.healthAddr", "")

	h.set("gateway.maxConcurrentTurns", "eight")
	check(h.run("status"), h.cfgPath, "gateway.maxConcurrentTurns: must be an integer, not a string")
	h.set("gateway.maxConcurrentTurns", 8)
	h.set("channels.slack.enabled", "yes")
	check(h.run("status"), "channels.slack.enabled: must be true or false, not a string")
	h.set("channels.slack.enabled", false)
	// A channel that is off is still checked (its tokens aside): the typo
	// is named now, not on the day it is turned on.
	h.set("channels.slack.groupPolicy", "mentions")
	check(h.run("status"), "channels.slack.groupPolicy", `must be "mention", "open" or "allowlist", got "mentions"`)
	h.set("channels.slack.groupPolicy", "mention")
	h.set("channels.discord.shardID", 3)
	check(h.run("status"), "channels.discord.shardID: needs channels.discord.shardCount")
	h.set("channels.discord.shardID", 0)
	h.set("memory.hotTokens", 500)
	check(h.run("status"), "memory.hotTokens", "between 1000 and a quarter of that window (32000), got 500")
	h.set("memory.hotTokens", 40000)
	check(h.run("status"), "memory.hotTokens", "got 40000")
	h.set("memory.hotTokens", 0)
	h.set("dream.deepAtShare", 1.5)
	check(h.run("status"), "dream.deepAtShare", "above 0 and at most 1", "got 1.5")
	h.set("dream.deepAtShare", "high")
	check(h.run("status"), "dream.deepAtShare: must be a number, not a string")
	h.set("dream.deepAtShare", 0.7)
	h.set("dream.deepEvery", 0)
	check(h.run("status"), "dream.deepEvery", "at least 1, got 0")
	h.set("dream.deepEvery", 5)
	h.set("dream.ephemeralDays", -1)
	check(h.run("status"), "dream.ephemeralDays", "at least 1, got -1")
	h.set("dream.ephemeralDays", 14)
	if r := h.run("status"); r.code == 2 {
		t.Errorf("channels off without tokens refused: %s", r.stderr)
	}

	if err := os.WriteFile(h.cfgPath, []byte("[]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check(h.run("status"), h.cfgPath+": the file must hold one JSON object")
}

// Discord shards may share a state directory: each keeps its own inbox, so
// that none answers after a crash what another accepted.
func TestEachShardKeepsItsOwnInbox(t *testing.T) {
	var cfg Config
	cfg.StateDir = "/state"
	if got := inboxPath(cfg); got != filepath.Join("/state", "inbox.jsonl") {
		t.Errorf("unsharded: %s", got)
	}
	cfg.Channels.Discord.Enabled, cfg.Channels.Discord.ShardCount = true, 2
	seen := map[string]bool{}
	for id := range 2 {
		cfg.Channels.Discord.ShardID = ShardID(id)
		seen[inboxPath(cfg)] = true
	}
	if len(seen) != 2 || seen[filepath.Join("/state", "inbox.jsonl")] {
		t.Errorf("two shards keep %v", seen)
	}
}

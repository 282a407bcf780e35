package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/channels/discord"
)

// channels.discord.shardCount takes a number or "auto"; shard ids are
// checked against it.
func TestDiscordShardConfig(t *testing.T) {
	tests := []struct {
		name, discord string
		wantCount     int
		wantErr       string
	}{
		{"no sharding", `{"enabled":true,"token":"x"}`, 0, ""},
		{"fixed", `{"enabled":true,"token":"x","shardID":1,"shardCount":2}`, 2, ""},
		{"auto", `{"enabled":true,"token":"x","shardID":3,"shardCount":"auto"}`, discord.AutoShards, ""},
		{"id too high", `{"enabled":true,"token":"x","shardID":2,"shardCount":2}`, 0, "channels.discord.shardID"},
		{"id without count", `{"enabled":true,"token":"x","shardID":1}`, 0, "channels.discord.shardID"},
		{"bad word", `{"enabled":true,"token":"x","shardCount":"many"}`, 0, `"auto"`},
		{"any shard without a database", `{"enabled":true,"token":"x","shardID":"any","shardCount":2}`, 0, "store.postgres"},
		{"any shard, a bad word", `{"enabled":true,"token":"x","shardID":"some","shardCount":2}`, 0, `"any"`},
		{"negative file cap", `{"enabled":true,"token":"x","maxFileBytes":-1}`, 0, "channels.discord.maxFileBytes"},
		{"no send retry", `{"enabled":true,"token":"x","sendRetryMinutes":0}`, 0, "channels.discord.sendRetryMinutes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			data := `{"workspace":"` + filepath.ToSlash(t.TempDir()) + `","channels":{"discord":` + tt.discord + `}}`
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := loadConfig(path, func(string) string { return "" })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := int(cfg.Channels.Discord.ShardCount); got != tt.wantCount {
				t.Fatalf("shardCount = %d, want %d", got, tt.wantCount)
			}
			if !cfg.Channels.Discord.SlashCommands || !cfg.Channels.Discord.Stream || cfg.Channels.Discord.MaxFileBytes != discord.DefaultMaxFileBytes || cfg.Channels.Discord.SendRetryMinutes != 5 {
				t.Fatalf("defaults lost: %+v", cfg.Channels.Discord)
			}
		})
	}
}

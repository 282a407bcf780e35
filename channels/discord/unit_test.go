package discord

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cfg   Config
		field string // "" = valid
	}{
		{"minimal", Config{Token: "abc"}, ""},
		{"token with Bot prefix", Config{Token: "Bot abc"}, ""},
		{"missing token", Config{}, "discord.token:"},
		{"blank token", Config{Token: "  "}, "discord.token:"},
		{"token with space", Config{Token: "abc def"}, "discord.token:"},
		{"open policy", Config{Token: "abc", GroupPolicy: "open"}, ""},
		{"bad policy", Config{Token: "abc", GroupPolicy: "everyone"}, "discord.groupPolicy:"},
		{"allowlist without channels", Config{Token: "abc", GroupPolicy: "allowlist"}, "discord.allowChannels:"},
		{"allowlist with blank channel", Config{Token: "abc", GroupPolicy: "allowlist", AllowChannels: []string{" "}}, "discord.allowChannels:"},
		{"allowlist", Config{Token: "abc", GroupPolicy: "allowlist", AllowChannels: []string{"C1"}}, ""},
		{"api url", Config{Token: "abc", APIURL: "http://127.0.0.1:9"}, ""},
		{"api url without scheme", Config{Token: "abc", APIURL: "127.0.0.1:9"}, "discord.apiURL:"},
		{"api url ftp", Config{Token: "abc", APIURL: "ftp://x"}, "discord.apiURL:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.cfg)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if a.Name() != "discord" {
					t.Fatalf("Name = %q", a.Name())
				}
				return
			}
			if err == nil {
				t.Fatalf("New accepted %+v", tt.cfg)
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.HasPrefix(err.Error(), tt.field) {
				t.Fatalf("error %q, want one starting with %q wrapping ErrInvalidConfig", err, tt.field)
			}
			if strings.TrimSpace(tt.cfg.Token) != "" && strings.Contains(err.Error(), strings.TrimSpace(tt.cfg.Token)) {
				t.Fatalf("error %q shows the token", err)
			}
		})
	}
}

func TestNewSetsBotToken(t *testing.T) {
	t.Parallel()
	for _, token := range []string{"abc", "Bot abc", " abc\n"} {
		a, err := New(Config{Token: token})
		if err != nil {
			t.Fatal(err)
		}
		if a.session.Token != "Bot abc" {
			t.Fatalf("token %q became %q", token, a.session.Token)
		}
	}
}

func TestIDSet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []string
		want string // sorted keys, "nil" for no restriction
	}{
		{nil, "nil"},
		{[]string{}, "nil"},
		{[]string{" ", ""}, "nil"},
		{[]string{"1", "*"}, "nil"},
		{[]string{" 1 ", "2", "2"}, "1,2"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.in), func(t *testing.T) {
			set := idSet(tt.in)
			got := "nil"
			if set != nil {
				var keys []string
				for _, k := range []string{"1", "2"} {
					if set[k] {
						keys = append(keys, k)
					}
				}
				got = strings.Join(keys, ",")
			}
			if got != tt.want {
				t.Fatalf("idSet(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestStripMention(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"<@B> /dream-log", "/dream-log"},
		{"<@!B> /dream-log", "/dream-log"},
		{"  <@B>\t/status  ", "/status"},
		{"hey <@B> there", "hey there"},
		{"hey<@B>there", "hey there"},
		{"line one\n<@B> line two", "line one\nline two"},
		{"<@B> <@!B> twice", "twice"},
		{"<@B>", ""},
		{"no mention", "no mention"},
		{"<@B2> not me", "<@B2> not me"},
		{"<@BB> prefix id", "<@BB> prefix id"},
		{"keep\n\ninner  spacing", "keep\n\ninner  spacing"},
		{"code:\n```\n<@B>\n```", "code:\n```\n```"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := stripMention(tt.in, "B", ""); got != tt.want {
				t.Fatalf("stripMention(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if got := stripMention("  <@B> hi ", "", ""); got != "<@B> hi" {
		t.Fatalf("unknown bot id: %q", got)
	}
	if got := stripMention("<@&R> /dream-log <@&R2>", "B", "R"); got != "/dream-log <@&R2>" {
		t.Fatalf("bot role mention: %q", got)
	}
	if got := stripMention("<@&R> hi", "B", ""); got != "<@&R> hi" {
		t.Fatalf("role mention stripped without a known bot role: %q", got)
	}
}

func TestMentioned(t *testing.T) {
	t.Parallel()
	bot := &discordgo.User{ID: "B"}
	user := &discordgo.User{ID: "U"}
	tests := []struct {
		name string
		m    discordgo.Message
		want bool
	}{
		{"content", discordgo.Message{Content: "<@B> hi"}, true},
		{"nickname content", discordgo.Message{Content: "hi <@!B>"}, true},
		{"mentions", discordgo.Message{Content: "hi", Mentions: []*discordgo.User{user, bot}}, true},
		{"reply to bot", discordgo.Message{Content: "so?", ReferencedMessage: &discordgo.Message{Author: bot}}, true},
		{"reply to user", discordgo.Message{Content: "so?", ReferencedMessage: &discordgo.Message{Author: user}}, false},
		{"other mention", discordgo.Message{Content: "<@U> hi", Mentions: []*discordgo.User{user}}, false},
		{"name only", discordgo.Message{Content: "B, are you there?"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mentioned(&tt.m, "B", ""); got != tt.want {
				t.Fatalf("mentioned = %v, want %v", got, tt.want)
			}
		})
	}
	if mentioned(&discordgo.Message{Content: "<@B>"}, "", "") {
		t.Fatal("mentioned with an unknown bot id")
	}
	for _, tt := range []struct {
		name string
		m    discordgo.Message
		role string
		want bool
	}{
		{"bot role in mention_roles", discordgo.Message{Content: "hi", MentionRoles: []string{"X", "R"}}, "R", true},
		{"bot role in content", discordgo.Message{Content: "<@&R> hi"}, "R", true},
		{"another role", discordgo.Message{Content: "<@&X> hi", MentionRoles: []string{"X"}}, "R", false},
		{"bot role not known", discordgo.Message{Content: "<@&R> hi", MentionRoles: []string{"R"}}, "", false},
	} {
		if got := mentioned(&tt.m, "B", tt.role); got != tt.want {
			t.Errorf("%s: mentioned = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestChannelCache(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Unix(1_800_000_000, 0))
	c := newChannelCache(8, clock.Now)
	hidden := &discordgo.PermissionOverwrite{ID: "G", Type: discordgo.PermissionOverwriteTypeRole, Deny: discordgo.PermissionViewChannel}
	c.learn(&discordgo.Channel{ID: "T", Type: discordgo.ChannelTypeGuildPublicThread, ParentID: "C",
		PermissionOverwrites: []*discordgo.PermissionOverwrite{hidden}})
	c.learn(&discordgo.Channel{ID: "C", Type: discordgo.ChannelTypeGuildText, ParentID: "CATEGORY",
		PermissionOverwrites: []*discordgo.PermissionOverwrite{hidden, nil,
			{ID: "U", Type: discordgo.PermissionOverwriteTypeMember, Allow: discordgo.PermissionViewChannel}}})
	c.learn(&discordgo.Channel{ID: "P", Type: discordgo.ChannelTypeGuildPrivateThread, ParentID: "C"})
	if info, _ := c.get("T"); !info.thread || info.parentID != "C" || info.privateThread || info.overwrites != nil {
		t.Fatalf("a public thread, whose channel's overwrites count: %+v", info)
	}
	want := []overwrite{{id: "G", deny: permViewChannel}, {id: "U", member: true, allow: permViewChannel}}
	if info, _ := c.get("C"); info.thread || info.parentID != "" || !slices.Equal(info.overwrites, want) {
		t.Fatalf("a text channel (its category is not a parent) = %+v", info)
	}
	if info, _ := c.get("P"); !info.privateThread {
		t.Fatalf("private thread = %+v", info)
	}
	c.forget(&discordgo.Channel{ID: "T"})
	if _, ok := c.get("T"); ok {
		t.Fatal("forgotten channel still cached")
	}

	clock.Advance(chanTTL)
	if info, ok := c.get("C"); ok {
		t.Errorf("still cached after its TTL: %+v", info)
	}
	for i := range 20 {
		c.learn(&discordgo.Channel{ID: fmt.Sprint("X", i)})
	}
	if n := c.c.Len(); n > 8 {
		t.Fatalf("cache holds %d entries, bound 8", n)
	}
}

func TestFatalClose(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want error
	}{
		{&websocket.CloseError{Code: 4004}, ErrInvalidAuth},
		{&websocket.CloseError{Code: 4014}, ErrDisallowedIntents},
		{&websocket.CloseError{Code: 4013}, ErrDisallowedIntents},
		{&websocket.CloseError{Code: 4011}, ErrGatewayRefused},
		{&websocket.CloseError{Code: 4000}, nil},
		{&websocket.CloseError{Code: 1006}, nil},
		{errors.New("dial tcp: refused"), nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.err), func(t *testing.T) {
			got := fatalClose(fmt.Errorf("open: %w", tt.err))
			if tt.want == nil && got != nil || tt.want != nil && !errors.Is(got, tt.want) {
				t.Fatalf("fatalClose = %v, want %v", got, tt.want)
			}
		})
	}
}

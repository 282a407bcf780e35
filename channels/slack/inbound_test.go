package slack

import (
	"regexp"
	"testing"
)

func newFilterAdapter(t *testing.T, mod func(*Config)) *Adapter {
	t.Helper()
	cfg := validConfig()
	cfg.ReplyInThread = true
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var testMentionRE = regexp.MustCompile(`\s*<@UBOT(?:\|[^>]*)?>\s*`)

func TestFilter(t *testing.T) {
	tests := []struct {
		name        string
		cfg         func(*Config)
		msg         rawMessage
		want        verdict
		wantText    string
		wantThread  string
		wantSession string
	}{
		{
			name: "channel mention opens a thread of its own",
			msg:  rawMessage{mention: true, channel: "C1", user: "U1", text: "<@UBOT> hello", ts: "100.1"},
			want: verdictAccept, wantText: "hello", wantThread: "100.1", wantSession: "slack:C1:100.1",
		},
		{
			name: "reply inside a thread joins it",
			msg:  rawMessage{mention: true, channel: "C1", user: "U1", text: "<@UBOT> more", ts: "100.5", threadTS: "100.1"},
			want: verdictAccept, wantText: "more", wantThread: "100.1", wantSession: "slack:C1:100.1",
		},
		{
			name: "replyInThread off keeps top-level posts in the channel session",
			cfg:  func(c *Config) { c.ReplyInThread = false },
			msg:  rawMessage{mention: true, channel: "C1", user: "U1", text: "<@UBOT> hi", ts: "100.1"},
			want: verdictAccept, wantText: "hi", wantThread: "", wantSession: "slack:C1",
		},
		{
			name: "DM shares the DM session",
			msg:  rawMessage{channel: "D1", channelType: "im", user: "U1", text: "hi there", ts: "100.2"},
			want: verdictAccept, wantText: "hi there", wantThread: "", wantSession: "slack:D1",
		},
		{
			name: "thread in a DM is its own session",
			msg:  rawMessage{channel: "D1", channelType: "im", user: "U1", text: "x", ts: "100.3", threadTS: "100.2"},
			want: verdictAccept, wantText: "x", wantThread: "100.2", wantSession: "slack:D1:100.2",
		},
		{
			name: "command after the mention",
			msg:  rawMessage{mention: true, channel: "C1", user: "U1", text: "<@UBOT>   /dream-log  ", ts: "100.4"},
			want: verdictAccept, wantText: "/dream-log", wantThread: "100.4", wantSession: "slack:C1:100.4",
		},
		{
			name: "labelled mention and entities",
			msg:  rawMessage{mention: true, channel: "C1", user: "U1", text: "<@UBOT|dreambot> is a &lt; b &amp;&amp; c?", ts: "100.6"},
			want: verdictAccept, wantText: "is a < b && c?", wantThread: "100.6", wantSession: "slack:C1:100.6",
		},
		{
			name: "mention in the middle",
			msg:  rawMessage{mention: true, channel: "C1", user: "U1", text: "hey <@UBOT> what's up", ts: "100.7"},
			want: verdictAccept, wantText: "hey what's up", wantThread: "100.7", wantSession: "slack:C1:100.7",
		},
		{"own user", nil, rawMessage{channel: "D1", channelType: "im", user: "UBOT", text: "x", ts: "1.1"}, verdictOwn, "", "", ""},
		{"own bot id", nil, rawMessage{channel: "C1", user: "UOTHER", botID: "BBOT", text: "x", ts: "1.2"}, verdictOwn, "", "", ""},
		{"edited", nil, rawMessage{channel: "D1", channelType: "im", user: "U1", subtype: "message_changed", text: "x", ts: "1.3"}, verdictSubtype, "", "", ""},
		{"edited mention", nil, rawMessage{mention: true, channel: "C1", user: "U1", text: "<@UBOT> x", ts: "1.4", edited: true}, verdictSubtype, "", "", ""},
		{"channel join", nil, rawMessage{channel: "C1", user: "U1", subtype: "channel_join", text: "joined", ts: "1.5"}, verdictSubtype, "", "", ""},
		{"file share is a post", nil, rawMessage{channel: "D1", channelType: "im", user: "U1", subtype: "file_share", text: "see file", ts: "1.6"}, verdictAccept, "see file", "", "slack:D1"},
		{"empty after the mention", nil, rawMessage{mention: true, channel: "C1", user: "U1", text: "<@UBOT>", ts: "1.7"}, verdictEmpty, "", "", ""},
		{"channel message without mention, policy mention", nil, rawMessage{channel: "C1", channelType: "channel", user: "U1", text: "chatter", ts: "1.8"}, verdictPolicy, "", "", ""},
		{"channel message naming the bot counts as mention", nil, rawMessage{channel: "C1", channelType: "channel", user: "U1", text: "<@UBOT> hi", ts: "1.9"}, verdictAccept, "hi", "1.9", "slack:C1:1.9"},
		{"another user's mention is not ours", nil, rawMessage{channel: "C1", channelType: "channel", user: "U1", text: "<@UBOT2> hi", ts: "1.10"}, verdictPolicy, "", "", ""},
		{
			name: "not allowed in a DM",
			cfg:  func(c *Config) { c.AllowFrom = []string{"U1"} },
			msg:  rawMessage{channel: "D2", channelType: "im", user: "U2", text: "let me in", ts: "2.1"},
			want: verdictNotAllowedDM, wantText: "let me in", wantThread: "", wantSession: "slack:D2",
		},
		{"not allowed in a channel", func(c *Config) { c.AllowFrom = []string{"U1"} }, rawMessage{mention: true, channel: "C1", user: "U2", text: "<@UBOT> hi", ts: "2.2"}, verdictNotAllowed, "", "", ""},
		{"channel not allowed", func(c *Config) { c.AllowChannels = []string{"C9"} }, rawMessage{mention: true, channel: "C1", user: "U1", text: "<@UBOT> hi", ts: "2.3"}, verdictChannel, "", "", ""},
		{"DMs exempt from allowChannels", func(c *Config) { c.AllowChannels = []string{"C9"} }, rawMessage{channel: "D1", channelType: "im", user: "U1", text: "hi", ts: "2.4"}, verdictAccept, "hi", "", "slack:D1"},
		{"open policy answers chatter", func(c *Config) { c.GroupPolicy = "open" }, rawMessage{channel: "C1", channelType: "channel", user: "U1", text: "chatter", ts: "2.5"}, verdictAccept, "chatter", "2.5", "slack:C1:2.5"},
		{"other bots are allowed", func(c *Config) { c.GroupPolicy = "open" }, rawMessage{channel: "C1", channelType: "channel", user: "UB2", botID: "B2", text: "beep", ts: "2.6"}, verdictAccept, "beep", "2.6", "slack:C1:2.6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newFilterAdapter(t, tt.cfg)
			in, v := a.filter(tt.msg, "UBOT", "BBOT", testMentionRE)
			if v != tt.want {
				t.Fatalf("verdict = %v, want %v", v, tt.want)
			}
			if tt.want != verdictAccept && tt.want != verdictNotAllowedDM {
				return
			}
			if in.Text != tt.wantText || in.ThreadID != tt.wantThread || in.SessionKey != tt.wantSession {
				t.Errorf("inbound = text %q thread %q session %q; want %q %q %q",
					in.Text, in.ThreadID, in.SessionKey, tt.wantText, tt.wantThread, tt.wantSession)
			}
			if in.Channel != "slack" || in.ChatID != tt.msg.channel || in.SenderID != tt.msg.user || in.MessageID != tt.msg.ts {
				t.Errorf("inbound ids = %+v", in)
			}
			// The same post again is a duplicate, whatever the event type.
			again := tt.msg
			again.mention = !again.mention
			if _, v := a.filter(again, "UBOT", "BBOT", testMentionRE); v != verdictDuplicate {
				t.Errorf("second delivery verdict = %v, want duplicate", v)
			}
		})
	}
}

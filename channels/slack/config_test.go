package slack

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	return Config{BotToken: "xoxb-1-2-abc", AppToken: "xapp-1-A-2-def"}
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string // "" = valid
	}{
		{"valid defaults", func(*Config) {}, ""},
		{"missing bot token", func(c *Config) { c.BotToken = "" }, "slack.botToken: missing"},
		{"bot token with wrong prefix", func(c *Config) { c.BotToken = "xapp-oops" }, `slack.botToken: must start with "xoxb-"`},
		{"missing app token", func(c *Config) { c.AppToken = " " }, "slack.appToken: missing"},
		{"app token with wrong prefix", func(c *Config) { c.AppToken = "xoxb-oops" }, `slack.appToken: must start with "xapp-"`},
		{"bad group policy", func(c *Config) { c.GroupPolicy = "everyone" }, `slack.groupPolicy: must be one of mention, open, allowlist (got "everyone")`},
		{"policy case-insensitive", func(c *Config) { c.GroupPolicy = " Open " }, ""},
		{"allowlist without channels", func(c *Config) { c.GroupPolicy = "allowlist" }, "slack.allowChannels: must list at least one channel id"},
		{"allowlist with blank channel only", func(c *Config) { c.GroupPolicy = "allowlist"; c.AllowChannels = []string{" "} }, "slack.allowChannels"},
		{"allowlist with channels", func(c *Config) { c.GroupPolicy = "allowlist"; c.AllowChannels = []string{"C1"} }, ""},
		{"api url not http", func(c *Config) { c.APIURL = "ftp://x/api/" }, "slack.apiURL: must be an http(s) URL"},
		{"api url without host", func(c *Config) { c.APIURL = "http:///api/" }, "slack.apiURL"},
		{"command prefix", func(c *Config) { c.CommandPrefix = "/dg-" }, ""},
		{"command prefix with odd characters", func(c *Config) { c.CommandPrefix = "Dg!" }, `slack.commandPrefix: must be up to 16 lower-case letters`},
		{"command prefix too long", func(c *Config) { c.CommandPrefix = strings.Repeat("a", 17) }, "slack.commandPrefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := validConfig()
			tt.mod(&cfg)
			a, err := New(cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if a.Name() != "slack" {
					t.Errorf("Name() = %q", a.Name())
				}
				return
			}
			if err == nil {
				t.Fatalf("New: no error, want %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
			for _, tok := range []string{cfg.BotToken, cfg.AppToken} {
				if len(tok) > 5 && strings.Contains(err.Error(), tok) {
					t.Errorf("error %q leaks a token", err)
				}
			}
		})
	}
}

func TestNewNormalizes(t *testing.T) {
	cfg := validConfig()
	cfg.APIURL = "http://127.0.0.1:9/api"
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.cfg.APIURL != "http://127.0.0.1:9/api/" {
		t.Errorf("APIURL = %q, want the trailing slash added", a.cfg.APIURL)
	}
	if a.cfg.GroupPolicy != PolicyMention {
		t.Errorf("GroupPolicy = %q, want mention", a.cfg.GroupPolicy)
	}
	if h := a.Health(); h.State != "stopped" {
		t.Errorf("Health before Run = %+v", h)
	}
}

func TestParseTS(t *testing.T) {
	got := parseTS("1712345678.000100")
	if got.Unix() != 1712345678 || got.Nanosecond() != 100000 {
		t.Errorf("parseTS = %v", got)
	}
	if !parseTS("junk").IsZero() {
		t.Error("parseTS(junk) should be zero")
	}
}

func TestConnGateSequence(t *testing.T) {
	a, err := New(validConfig())
	if err != nil {
		t.Fatal(err)
	}
	g := a.gate
	// base waits (before jitter) of successive attempts; 0 = at once
	step := func(want time.Duration) {
		t.Helper()
		d, first := g.next()
		if want == 0 {
			if !first || d != 0 {
				t.Fatalf("attempt waited %v, want the first attempt to go at once", d)
			}
			return
		}
		if first || d > want || d < want*3/4 {
			t.Fatalf("attempt waited %v, want about %v", d, want)
		}
	}
	s := time.Second
	step(0) // Run starts
	step(1 * s)
	step(2 * s)
	step(4 * s)
	g.healthy() // a connection said hello, then dropped
	step(1 * s)
	step(2 * s)
	for range 10 {
		g.next()
	}
	step(30 * s) // capped
	g.reset()    // a new Run
	step(0)
}

func TestConfigDefaultsForNativeFeatures(t *testing.T) {
	cfg := validConfig()
	cfg.CommandPrefix = " /dg- "
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.cfg.CommandPrefix != "dg-" || a.cfg.MaxFileBytes != DefaultMaxFileBytes {
		t.Errorf("prefix %q, max file bytes %d", a.cfg.CommandPrefix, a.cfg.MaxFileBytes)
	}
	if got := a.commandName("/DG-Dream-Log"); got != "/dream-log" {
		t.Errorf("commandName = %q", got)
	}
}

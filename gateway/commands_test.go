package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		in         string
		name, args string
		isCmd      bool
	}{
		{"/help", "/help", "", true},
		{"  /Dream-Log  abc123 ", "/dream-log", "abc123", true},
		{"/dream_log abc", "/dream-log", "abc", true},
		{"/dream-log@dreambot 1a2b", "/dream-log", "1a2b", true},
		{"/new\nand more", "/new", "and more", true},
		{"/etc/hosts is missing", "", "", false},
		{"hello /help", "", "", false},
		{"/", "", "", false},
		{"/123", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			pc := parseCommand(tt.in)
			if (pc != nil) != tt.isCmd {
				t.Fatalf("parseCommand(%q) = %v, want command=%v", tt.in, pc, tt.isCmd)
			}
			if pc != nil && (pc.name != tt.name || pc.args != tt.args) {
				t.Errorf("got %q %q, want %q %q", pc.name, pc.args, tt.name, tt.args)
			}
		})
	}
}

func noModel(t *testing.T) func(context.Context, llm.Request) (llm.Response, error) {
	return func(context.Context, llm.Request) (llm.Response, error) {
		t.Error("the model was called for a command")
		return llm.Response{}, nil
	}
}

func TestCommandsNeverReachTheModel(t *testing.T) {
	env := newTestEnv(t, noModel(t), nil)
	tests := []struct {
		text, want string
	}{
		{"/dreamlog", "Unknown command /dreamlog. Did you mean /dream-log?"},
		{"/hlep", "Unknown command /hlep. Did you mean /help?"},
		{"/xyzzy", "Unknown command /xyzzy. Try /help for the list."},
		{"/help extra", "/help takes no arguments. Try /help."},
		{"/dream-log", "The memory repository is not available in this gateway."},
		{"/dream", "Dream is off in this gateway's config."},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			done, err := env.g.Submit(t.Context(), inbound("cmds", tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if r := wait(t, done); r.Reply != tt.want {
				t.Errorf("reply = %q, want %q", r.Reply, tt.want)
			}
			if out := env.ch.next(t); out.Text != tt.want {
				t.Errorf("sent %q, want %q", out.Text, tt.want)
			}
		})
	}
	if n := len(env.model.Requests()); n != 0 {
		t.Errorf("model got %d requests", n)
	}
}

func TestAdminCommandsAreAuthorisedInOnePlace(t *testing.T) {
	env := newTestEnv(t, noModel(t), func(c *Config, _ *Deps) { c.Admins = []string{"test:BOSS"} })
	tests := []struct {
		name   string
		sender string
		local  bool
		refuse bool
	}{
		{"stranger", "U1", false, true},
		{"admin from config", "BOSS", false, false},
		{"local terminal user", "whoever", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := inbound("admin", "/dream-restore abcd")
			in.SenderID, in.Local = tt.sender, tt.local
			done, err := env.g.Submit(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			r := wait(t, done)
			if got := strings.HasPrefix(r.Reply, "Not allowed"); got != tt.refuse {
				t.Errorf("reply %q: refused=%v, want %v", r.Reply, got, tt.refuse)
			}
			env.ch.next(t)
		})
	}
}

func TestHelpListsCommandsForTheSender(t *testing.T) {
	env := newTestEnv(t, noModel(t), nil)
	done, _ := env.g.Submit(t.Context(), inbound("help", "/help"))
	r := wait(t, done)
	for _, c := range []string{"/new", "/status", "/stop", "/dream", "/dream-log [sha]"} {
		if !strings.Contains(r.Reply, c) {
			t.Errorf("/help does not list %s:\n%s", c, r.Reply)
		}
	}
	if strings.Contains(r.Reply, "/dream-restore") {
		t.Errorf("/help shows an admin command to a non-admin:\n%s", r.Reply)
	}
}

func TestCommandsListTheTableForPlatforms(t *testing.T) {
	cmds := Commands()
	table := commandTable()
	if len(cmds) != len(table) {
		t.Fatalf("Commands has %d entries, the table %d", len(cmds), len(table))
	}
	byName := map[string]channels.Command{}
	for _, c := range cmds {
		if strings.HasPrefix(c.Name, "/") || c.Description == "" {
			t.Errorf("command %+v: name with a slash or no description", c)
		}
		if _, ok := table["/"+c.Name]; !ok {
			t.Errorf("command %q is not in the table", c.Name)
		}
		byName[c.Name] = c
	}
	if c := byName["dream-restore"]; c.Arg != "sha" || !c.Admin {
		t.Errorf("dream-restore = %+v, want Arg sha and Admin", c)
	}
	if c := byName["dream"]; c.Arg != "" || c.Admin {
		t.Errorf("dream = %+v, want no argument, not admin", c)
	}
}

func TestHelpSaysHowToLeaveOnlyAtTheTerminal(t *testing.T) {
	env := newTestEnv(t, noModel(t), nil)
	for _, local := range []bool{true, false} {
		in := inbound("help", "/help")
		in.Local = local
		done, err := env.g.Submit(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		r := wait(t, done)
		env.ch.next(t)
		if got := strings.Contains(r.Reply, "Ctrl-D or /quit"); got != local {
			t.Errorf("local=%v: /help mentions leaving = %v:\n%s", local, got, r.Reply)
		}
	}
}

func TestAdminRefusalSaysHowToBecomeOne(t *testing.T) {
	env := newTestEnv(t, noModel(t), func(c *Config, _ *Deps) { c.Admins = []string{"test:BOSS"} })
	in := inbound("admin", "/dream-restore")
	in.SenderID = "U42"
	done, err := env.g.Submit(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	r := wait(t, done)
	env.ch.next(t)
	for _, want := range []string{"Not allowed: /dream-restore is for admins only.", `"test:U42"`, `"admins"`} {
		if !strings.Contains(r.Reply, want) {
			t.Errorf("refusal %q lacks %s", r.Reply, want)
		}
	}
}

// formRecorder is a channel whose commands are typed in another form.
type formRecorder struct{ *recorder }

func (formRecorder) CommandForm(name string) string {
	if name == "/status" {
		return "@bot /status"
	}
	return "/dg-" + name[1:]
}
func (formRecorder) CommandNote() string { return "Mention me in threads." }

func TestHelpShowsTheChannelsForm(t *testing.T) {
	env := newTestEnv(t, noModel(t), nil)
	fr := formRecorder{newRecorder("forms")}
	env.g.AddChannel(fr)
	in := inbound("help", "/help")
	in.Channel = "forms"
	r := wait(t, must(env.g.Submit(t.Context(), in)))
	fr.next(t)
	for _, want := range []string{"\n/dg-dream-log [sha] — ", "\n@bot /status — ", "\n/dg-new — ", "\nMention me in threads."} {
		if !strings.Contains(r.Reply, want) {
			t.Errorf("/help lacks %q:\n%s", want, r.Reply)
		}
	}
	if strings.Contains(r.Reply, "\n/dream ") {
		t.Errorf("/help shows the bare form:\n%s", r.Reply)
	}
}

// The unknown-command answer suggests the form that works on the channel.
func TestUnknownCommandSuggestsTheChannelsForm(t *testing.T) {
	env := newTestEnv(t, noModel(t), nil)
	fr := formRecorder{newRecorder("forms")}
	env.g.AddChannel(fr)
	for _, tc := range []struct{ text, want string }{
		{"/dreamlog", "Unknown command /dreamlog. Did you mean /dg-dream-log?"},
		{"/statsu", "Unknown command /statsu. Did you mean @bot /status?"},
		{"/zzzzzz", "Unknown command /zzzzzz. Try /dg-help for the list."},
	} {
		in := inbound("unknown", tc.text)
		in.Channel = "forms"
		r := wait(t, must(env.g.Submit(t.Context(), in)))
		fr.next(t)
		if r.Reply != tc.want {
			t.Errorf("%s: reply %q, want %q", tc.text, r.Reply, tc.want)
		}
	}
}

package gateway

import (
	"strings"
	"testing"
)

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

package gateway

import (
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
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

// hintingRecorder is a channel that says how its platform types commands.
type hintingRecorder struct{ *recorder }

func (hintingRecorder) CommandHint(channels.Inbound) string { return "Type / and pick a command." }

// /help shows the form of commands that works on the person's platform,
// when the channel knows one.
func TestHelpShowsThePlatformsCommandForm(t *testing.T) {
	env := newTestEnv(t, noModel(t), nil)
	hint := hintingRecorder{newRecorder("hinting")}
	env.g.AddChannel(hint)
	in := inbound("help", "/help")
	in.Channel = "hinting"
	done, err := env.g.Submit(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if r := wait(t, done); !strings.Contains(r.Reply, "\nType / and pick a command.") {
		t.Errorf("/help lacks the platform's hint:\n%s", r.Reply)
	}
	hint.next(t)
	plain, _ := env.g.Submit(t.Context(), inbound("help", "/help"))
	if r := wait(t, plain); strings.Contains(r.Reply, "Type / and pick") {
		t.Errorf("/help of another channel has the hint:\n%s", r.Reply)
	}
	env.ch.next(t)
}

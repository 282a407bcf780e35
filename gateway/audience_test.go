package gateway

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
)

var (
	slackTeam    = audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T1"}
	slackPrivate = audience.Audience{Kind: audience.Private, Platform: "slack", Team: "T1", Chat: "C1"}
)

// archiveRaw is a model that answers chat turns with "ok" and fails every
// archive call, so each archive entry holds the messages word for word
// (a [RAW] entry) and a test can look for what was said.
func archiveRaw(_ context.Context, req llm.Request) (llm.Response, error) {
	if req.Purpose == llm.PurposeArchive {
		return llm.Response{}, &llm.Error{Kind: llm.ErrUnavailable, Reason: "HTTP 503"}
	}
	return textReply("ok"), nil
}

func withAudience(in channels.Inbound, a audience.Audience) channels.Inbound {
	in.Audience = a
	return in
}

// entriesWith returns the history entries whose content holds token.
func entriesWith(t *testing.T, store *history.Store, token string) []history.Entry {
	t.Helper()
	all, err := store.Since(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []history.Entry
	for _, e := range all {
		if strings.Contains(e.Content, token) {
			out = append(out, e)
		}
	}
	return out
}

// A conversation whose audience changes (a private channel made public)
// starts afresh: its next prompt holds nothing said before, and what was
// said before is archived under the old audience's scope, never the new
// one's.
func TestAudienceChangeArchivesUnderTheOldAudience(t *testing.T) {
	env := newTestEnv(t, archiveRaw, nil)
	useRealConsolidator(t, env, 128000, 4096)
	store := openHistory(t, env)
	in := withAudience(inbound("c", "the launch code is VORTEXPLUM"), slackPrivate)
	if r := wait(t, mustSubmit(t, env, in)); r.Err != nil {
		t.Fatal(r.Err)
	}
	in = withAudience(inbound("c", "what is the launch code?"), slackTeam)
	if r := wait(t, mustSubmit(t, env, in)); r.Err != nil {
		t.Fatal(r.Err)
	}
	reqs := chatRequests(env)
	for _, m := range reqs[len(reqs)-1].Messages {
		if strings.Contains(m.Content, "VORTEXPLUM") {
			t.Errorf("the public turn's prompt holds the private channel's words (%s): %.200q", m.Role, m.Content)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := env.g.Shutdown(ctx); err != nil { // waits for the background archive
		t.Fatal(err)
	}
	got := entriesWith(t, store, "VORTEXPLUM")
	if len(got) != 1 || got[0].Scope != slackPrivate.Home() {
		t.Fatalf("entries holding the private words: %+v, want one of scope %q", got, slackPrivate.Home())
	}
	sess, err := env.sessions.Get("test:c")
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := sess.RecordedAudience(); !ok || a != slackTeam {
		t.Errorf("the conversation's audience is %v (%v), want %v", a, ok, slackTeam)
	}
	if strings.Contains(renderMessages(sess.Messages()), "VORTEXPLUM") {
		t.Error("the fresh conversation holds the old audience's messages")
	}
}

// In shared mode (memory.scoped false) an audience change changes nothing:
// every audience's scope is the default one.
func TestAudienceChangeInSharedModeKeepsTheConversation(t *testing.T) {
	env := newTestEnv(t, archiveRaw, func(c *Config, d *Deps) { d.Memory = memory.New(memory.NewDisk(c.Workspace), true) })
	for _, a := range []audience.Audience{slackPrivate, slackTeam} {
		if r := wait(t, mustSubmit(t, env, withAudience(inbound("c", "hello "+string(a.Kind)), a))); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	reqs := chatRequests(env)
	if last := renderMessages(reqs[len(reqs)-1].Messages); !strings.Contains(last, "hello private") {
		t.Errorf("shared mode started the conversation afresh:\n%s", last)
	}
}

// A message whose adapter set no audience (or an invalid one) is answered
// as audience.Unknown of its conversation: it is recorded so, and archived
// into that scope alone — never the default scope, never a team's.
func TestMessageWithoutAudienceIsTheNarrowest(t *testing.T) {
	for name, a := range map[string]audience.Audience{
		"none":    {},
		"invalid": {Kind: audience.Team, Platform: "slack"},
	} {
		t.Run(name, func(t *testing.T) {
			env := newTestEnv(t, archiveRaw, nil)
			useRealConsolidator(t, env, 128000, 4096)
			store := openHistory(t, env)
			if r := wait(t, mustSubmit(t, env, withAudience(inbound("z", "my token is ZEROAUD"), a))); r.Err != nil {
				t.Fatal(r.Err)
			}
			sess, err := env.sessions.Get("test:z")
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := sess.RecordedAudience(); !ok || got != audience.Unknown("test:z") {
				t.Errorf("recorded audience %v, want audience.Unknown", got)
			}
			if _, err := env.g.deps.Consolidator.ArchiveTail(t.Context(), sess); err != nil {
				t.Fatal(err)
			}
			got := entriesWith(t, store, "ZEROAUD")
			if len(got) != 1 || got[0].Scope != audience.Unknown("test:z").Home() {
				t.Errorf("entries %+v, want one of scope %q", got, audience.Unknown("test:z").Home())
			}
		})
	}
}

// The inbox keeps a message's audience across a restart, and a record from
// before audiences is answered as the narrowest.
func TestInboxKeepsTheAudience(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.jsonl")
	ib, _, _, err := openInbox(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	in := withAudience(inbound("c", "hello"), slackPrivate)
	legacy := inbound("d", "hello")
	legacy.Audience = audience.Audience{}
	for _, m := range []channels.Inbound{in, legacy} {
		if _, err := ib.accept(inboxLine{Key: m.SessionKey, Origin: originOf(m), Text: m.Text, Time: m.Time}); err != nil {
			t.Fatal(err)
		}
	}
	ib.close()
	_, left, _, err := openInbox(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 {
		t.Fatalf("%d messages left, want 2", len(left))
	}
	got := map[string]audience.Audience{}
	for _, l := range left {
		got[l.Key] = inboundOf(l.Key, l.Origin, l.Text, l.Time).Audience
	}
	if got["test:c"] != slackPrivate || got["test:d"] != audience.Unknown("test:d") {
		t.Errorf("audiences after a restart: %v", got)
	}
}

func renderMessages(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(string(m.Role) + ": " + m.Content + "\n")
	}
	return b.String()
}

package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm"
)

// archiveDreamer is a Dreamer over the fake consolidator's archive: a run
// reads what was archived since the last run, as the real one reads
// history.jsonl past its cursor.
type archiveDreamer struct {
	fc *fakeConsolidator

	mu   sync.Mutex
	read int
	last *dream.LastRun
}

func (d *archiveDreamer) Run(context.Context, string, dream.Scopes, func(string)) (dream.Report, error) {
	d.fc.mu.Lock()
	n := len(d.fc.archived)
	d.fc.mu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	rep := dream.Report{Trigger: dream.TriggerManual, Outcome: dream.OutcomeNothingNew}
	if n > d.read {
		rep.Outcome, rep.Entries, rep.First, rep.Last = dream.OutcomeCompleted, n-d.read, d.read+1, n
		d.read = n
	}
	d.last = &dream.LastRun{When: time.Now(), Outcome: rep.Outcome}
	return rep, nil
}

func (d *archiveDreamer) Restore(string, dream.Scopes, dream.RestoreOptions) (dream.RestoreResult, error) {
	return dream.RestoreResult{}, gitstore.ErrUnknownRevision
}

func (d *archiveDreamer) PlanRestore(string, dream.Scopes) (dream.RestorePlan, error) {
	return dream.RestorePlan{}, gitstore.ErrUnknownRevision
}

func (d *archiveDreamer) Status(dream.Scopes) dream.Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	return dream.Status{Last: d.last}
}

// noCommits is a memory repository without any Dream commit.
type noCommits struct{}

func (noCommits) Latest(string, func(string) bool) (gitstore.Commit, gitstore.Diff, error) {
	return gitstore.Commit{}, gitstore.Diff{}, gitstore.ErrNoMatchingCommit
}
func (noCommits) Show(string, func(string) bool) (gitstore.Commit, gitstore.Diff, error) {
	return gitstore.Commit{}, gitstore.Diff{}, gitstore.ErrUnknownRevision
}
func (noCommits) LogPrefixes(int, []string, func(string) bool) ([]gitstore.Commit, error) {
	return nil, nil
}
func (noCommits) UndoneBy(string, func(string) bool) (gitstore.Commit, bool, error) {
	return gitstore.Commit{}, false, nil
}

// reply waits for the next reply (skipping progress lines).
func (r *recorder) reply(t testing.TB) string {
	t.Helper()
	for {
		if o := r.next(t); o.Kind == channels.KindReply {
			return o.Text
		}
	}
}

// failure is the next message sent as a failure (channels.KindError),
// passing over progress lines; an answer instead fails the test.
func (r *recorder) failure(t testing.TB) string {
	t.Helper()
	for {
		switch o := r.next(t); o.Kind {
		case channels.KindError:
			return o.Text
		case channels.KindReply:
			t.Fatalf("an answer where a failure was due: %q", o.Text)
		}
	}
}

// /dream right after a few facts means "remember this": the conversation
// is archived first, then Dream reads it. With nothing left, the reply says
// why and how conversations reach Dream.
func TestDreamArchivesTheConversationFirst(t *testing.T) {
	fc := &fakeConsolidator{done: make(chan string, 4)}
	d := &archiveDreamer{fc: fc}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("noted"), nil }, func(c *Config, deps *Deps) {
		c.IdleCompactAfter = 15 * time.Minute
		deps.Consolidator, deps.Dream, deps.MemoryLog = fc, d, noCommits{}
	})

	// Before any Dream, /dream-log says so and how to start one.
	wait(t, must(env.g.Submit(t.Context(), inbound("d", "/dream-log"))))
	if got := env.ch.reply(t); !strings.Contains(got, "No Dream has run yet") || !strings.Contains(got, "/dream") {
		t.Errorf("/dream-log before the first Dream = %q", got)
	}

	wait(t, must(env.g.Submit(t.Context(), inbound("d", "my locker is 42"))))
	env.ch.reply(t)
	wait(t, must(env.g.Submit(t.Context(), inbound("d", "/dream"))))
	if got := env.ch.reply(t); !strings.HasPrefix(got, "Dream: read 1 entry") {
		t.Errorf("/dream after a fact = %q, want Dream to have read this conversation", got)
	}
	select {
	case k := <-fc.done:
		if k != "test:d" {
			t.Errorf("archived %s, want test:d", k)
		}
	default:
		t.Error("/dream did not archive the conversation")
	}
	s, _ := env.sessions.Get("test:d")
	if s.LastConsolidated() != s.Len() {
		t.Errorf("the conversation's tail was not archived: %d of %d", s.LastConsolidated(), s.Len())
	}

	// Nothing new now: the reply says why and how to get there.
	wait(t, must(env.g.Submit(t.Context(), inbound("d", "/dream"))))
	got := env.ch.reply(t)
	for _, want := range []string{"nothing new to read", "archived before", "context window", "/new", "15 minutes"} {
		if !strings.Contains(got, want) {
			t.Errorf("/dream with nothing new lacks %q: %q", want, got)
		}
	}
	if len(fc.done) != 0 {
		t.Error("a conversation with nothing unarchived was archived again")
	}

	// After Dreams that changed nothing, /dream-log says that instead.
	wait(t, must(env.g.Submit(t.Context(), inbound("d", "/dream-log"))))
	if got := env.ch.reply(t); strings.Contains(got, "No Dream has run yet") || !strings.Contains(got, "none has changed the memory files") {
		t.Errorf("/dream-log after Dreams = %q", got)
	}
}

// failedDreamer is a Dreamer whose runs fail on the model and which once
// skipped a batch.
type failedDreamer struct{}

func (failedDreamer) Run(context.Context, string, dream.Scopes, func(string)) (dream.Report, error) {
	rep := dream.Report{Trigger: dream.TriggerManual, Outcome: dream.OutcomeFailed, Entries: 3, First: 1, Last: 3,
		Reason:       "the model provider refused the API key (HTTP 401); check llm.apiKey",
		PublicReason: "the assistant's model is not answering right now; the operator has been told",
		Failures:     1, MaxFailures: 3}
	return rep, &dream.RunError{Reason: rep.Reason}
}

func (failedDreamer) Restore(string, dream.Scopes, dream.RestoreOptions) (dream.RestoreResult, error) {
	return dream.RestoreResult{}, gitstore.ErrUnknownRevision
}

func (failedDreamer) PlanRestore(string, dream.Scopes) (dream.RestorePlan, error) {
	return dream.RestorePlan{}, gitstore.ErrUnknownRevision
}

func (failedDreamer) Status(dream.Scopes) dream.Status {
	return dream.Status{Last: &dream.LastRun{When: time.Now(), Outcome: dream.OutcomeFailed,
		Reason:       "the model provider refused the API key (HTTP 401); check llm.apiKey",
		PublicReason: "the assistant's model is not answering right now; the operator has been told"},
		Backlog: 12,
		Skips:   []dream.Skip{{When: time.Now(), First: 5, Last: 9, Reason: "the model's analysis was empty"}}}
}

// A failed /dream tells a Slack or Discord user no operator detail (the
// terminal's user is the operator and reads it); /dream-log names the
// entries a skip gave up on; /status says how many entries wait, and the
// last failure without the operator's detail.
func TestDreamFailureAndSkipsInChat(t *testing.T) {
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("noted"), nil }, func(c *Config, deps *Deps) {
		deps.Dream, deps.MemoryLog = failedDreamer{}, noCommits{}
	})
	// A failed Dream is the line's failure (a script piping /dream exits
	// 1), not an answer.
	wait(t, must(env.g.Submit(t.Context(), inbound("d", "/dream"))))
	got := env.ch.failure(t)
	if strings.Contains(got, "llm.apiKey") || strings.Contains(got, "401") || !strings.Contains(got, "the operator has been told") {
		t.Errorf("/dream in a shared channel = %q", got)
	}
	local := inbound("d", "/dream")
	local.Local = true
	wait(t, must(env.g.Submit(t.Context(), local)))
	if got := env.ch.failure(t); !strings.Contains(got, "check llm.apiKey") {
		t.Errorf("/dream at the terminal = %q, want the cause for the operator", got)
	}
	wait(t, must(env.g.Submit(t.Context(), inbound("d", "/dream-log"))))
	if got := env.ch.reply(t); !strings.Contains(got, "history entries 5-9") || !strings.Contains(got, "Skipped after repeated failures") {
		t.Errorf("/dream-log = %q", got)
	}
	wait(t, must(env.g.Submit(t.Context(), inbound("d", "/status"))))
	if got := env.ch.reply(t); strings.Contains(got, "llm.apiKey") || !strings.Contains(got, "12 unread history entries waiting") {
		t.Errorf("/status in a shared channel = %q", got)
	}
	localStatus := inbound("d", "/status")
	localStatus.Local = true
	wait(t, must(env.g.Submit(t.Context(), localStatus)))
	if got := env.ch.reply(t); !strings.Contains(got, "llm.apiKey") {
		t.Errorf("/status at the terminal = %q", got)
	}
}

package consolidator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
)

// baseConfig: hard limit 7976, trigger 5000, target 3000.
var baseConfig = Config{ContextWindow: 10000, MaxTokens: 1000, Model: "archiver"}

func newTestConsolidator(t *testing.T, m Model, cfg Config) (*Consolidator, *history.Store) {
	t.Helper()
	st := openTestStore(t, t.TempDir(), nil)
	return New(m, st, cfg, nil), st
}

// before runs Before with an empty fixed prompt and no tools, as the
// tests of archiving need: the prompt is the session's messages and the
// consolidator's own part.
func before(c *Consolidator, ctx context.Context, s Session) (Report, error) {
	_, rep, err := c.Before(ctx, s, Prompt{})
	return rep, err
}

// sent is what a provider reports of a call that carried all of s.
func sent(s Session, promptTokens int) Sent {
	base, msgs := s.Tail()
	return Sent{PromptTokens: promptTokens, Messages: base + len(msgs)}
}

func TestWordsHelper(t *testing.T) {
	c := NewCounter()
	for _, n := range []int{1, 10, 1000} {
		if got := c.Count(words("", n)); got != n {
			t.Errorf("words(%d) has %d tokens", n, got)
		}
	}
}

func TestBeforeSliceSelection(t *testing.T) {
	turns := func(n, size int) []llm.Message {
		var out []llm.Message
		for i := range n {
			out = append(out, user(words(fmt.Sprintf("u%d", i), size)), assistant(words("", size)))
		}
		return out
	}
	tests := []struct {
		name          string
		cfg           Config
		msgs          []llm.Message
		fixed         string // Prompt.Fixed (the Recent history is always counted)
		summary       string // what the model answers (default "- summary N")
		wantRounds    int    // also the number of model calls
		wantLC        int    // LastConsolidated afterwards
		wantOverLimit bool   // Report.OverLimit
		wantLoaded    bool   // the tokenizer had to be loaded
		check         func(*testing.T, []string, Report)
	}{
		{
			name:       "under the byte bound: no tokenizer, nothing archived",
			cfg:        baseConfig,
			msgs:       []llm.Message{user(words("", 100)), assistant(words("", 100)), user(words("", 100))},
			wantRounds: 0, wantLC: 0, wantLoaded: false,
		},
		{
			name:       "over the byte bound, under the trigger",
			cfg:        baseConfig,
			msgs:       []llm.Message{user(words("", 1000)), assistant(words("", 1000)), user(words("", 10))},
			wantRounds: 0, wantLC: 0, wantLoaded: true,
		},
		{
			// The round drains the unarchived messages to the target (one
			// turn of 2000 is enough); the prompt then keeps the archived
			// turn before them in view, staying below the trigger.
			name:       "target reached after one round",
			cfg:        baseConfig,
			msgs:       append(turns(3, 1000), user(words("", 100))),
			wantRounds: 1, wantLC: 4, wantLoaded: true,
			check: func(t *testing.T, tr []string, rep Report) {
				if rep.After > 5000 || rep.Before <= 5000 {
					t.Errorf("before %d after %d; want > 5000 then <= 5000", rep.Before, rep.After)
				}
			},
		},
		{
			name: "a tool chain is archived whole, with its results",
			cfg:  baseConfig,
			msgs: []llm.Message{
				user(words("first", 1500)),
				assistant("", call("c1", "read_file", `{"path":"USER.md"}`), call("c2", "list_dir", `{"path":"."}`)),
				toolResult("c1", "read_file", words("EVIDENCE", 1500)),
				toolResult("c2", "list_dir", "USER.md SOUL.md"),
				assistant(words("done", 1500)),
				user(words("second", 1500)), assistant(words("", 100)), user(words("third", 10)),
			},
			wantRounds: 1, wantLC: 5, wantLoaded: true,
			check: func(t *testing.T, tr []string, _ Report) {
				for _, want := range []string{"TOOL read_file: EVIDENCE", "TOOL list_dir: USER.md SOUL.md", "calls read_file(path=USER.md), list_dir(path=.)"} {
					if !strings.Contains(tr[0], want) {
						t.Errorf("transcript lacks %q", want)
					}
				}
				if strings.Contains(tr[0], "second") {
					t.Error("the transcript crosses the chosen boundary")
				}
			},
		},
		{
			name: "no later user message: nothing to archive",
			cfg:  baseConfig,
			msgs: []llm.Message{
				user(words("", 100)),
				assistant("", call("c1", "read_file", `{"path":"big"}`)),
				toolResult("c1", "read_file", words("", 6000)),
				assistant(words("", 100)),
			},
			wantRounds: 0, wantLC: 0, wantLoaded: true,
		},
		{
			name:       "one huge message",
			cfg:        baseConfig,
			msgs:       []llm.Message{user(words("huge", 6000)), assistant(words("", 50)), user(words("", 20))},
			wantRounds: 1, wantLC: 2, wantLoaded: true,
			check: func(t *testing.T, tr []string, _ Report) {
				if strings.Contains(tr[0], "message cut here") || strings.Count(tr[0], " hello") != 6050 {
					t.Error("a message that fits one archive call must be sent whole")
				}
			},
		},
		{
			name:       "at most five rounds when archiving keeps growing the prompt",
			cfg:        Config{ContextWindow: 20000, MaxTokens: 1000},
			msgs:       append(turns(20, 300), user(words("", 10))),
			fixed:      "You are a helpful assistant.",
			summary:    "- fact" + words("", 1000),
			wantRounds: 5, wantLC: -1, wantLoaded: true,
			check: func(t *testing.T, tr []string, rep Report) {
				if rep.After <= 6000 {
					t.Errorf("after %d: the scenario should still be above the target", rep.After)
				}
				if rep.OverLimit {
					t.Error("above the target is not over the hard limit")
				}
			},
		},
		{
			name:       "hard limit: the newest turn alone is too big",
			cfg:        baseConfig,
			msgs:       []llm.Message{user(words("", 100)), assistant(words("", 100)), user(words("now", 8000))},
			wantRounds: 1, wantLC: 2, wantOverLimit: true, wantLoaded: true,
			check: func(t *testing.T, tr []string, _ Report) {
				if strings.Contains(tr[0], "now") {
					t.Error("the newest user turn was archived")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newFakeModel(t)
			for range 10 {
				if tt.summary != "" {
					m.Push(step{resp: llm.Response{Content: tt.summary, FinishReason: llm.FinishStop}}.chat)
				}
			}
			c, _ := newTestConsolidator(t, m, tt.cfg)
			s := newSession("terminal:t", tt.msgs...)
			_, rep, err := c.Before(t.Context(), s, Prompt{Fixed: tt.fixed})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Rounds != tt.wantRounds || len(m.Requests()) != tt.wantRounds {
				t.Errorf("rounds %d, model calls %d; want %d", rep.Rounds, len(m.Requests()), tt.wantRounds)
			}
			if tt.wantLC >= 0 && s.lc != tt.wantLC {
				t.Errorf("LastConsolidated = %d, want %d", s.lc, tt.wantLC)
			}
			if rep.OverLimit != tt.wantOverLimit {
				t.Errorf("OverLimit = %v (after %d)", rep.OverLimit, rep.After)
			}
			if got := c.counter.Loaded(); got != tt.wantLoaded {
				t.Errorf("tokenizer loaded = %v, want %v", got, tt.wantLoaded)
			}
			lastUser := -1
			for i, msg := range tt.msgs {
				if msg.Role == llm.RoleUser {
					lastUser = i
				}
			}
			for _, n := range s.sets {
				if tt.msgs[n].Role != llm.RoleUser || n > lastUser {
					t.Errorf("slice ended at %d (%s): must end just before a user message, never past the newest", n, tt.msgs[n].Role)
				}
			}
			if rep.Archived != s.lc {
				t.Errorf("Report.Archived = %d, LastConsolidated %d", rep.Archived, s.lc)
			}
			if tt.check != nil {
				tt.check(t, transcripts(m), rep)
			}
		})
	}
}

// outcomeSession: one round archives messages 0-3 (a user turn with a
// tool call and its result); 4-6 stay.
func outcomeSession() *fakeSession {
	s := newSession("slack:C1:1712.55",
		user(words("alpha", 2000)),
		assistant("", call("c1", "read_file", `{"path":"USER.md"}`)),
		toolResult("c1", "read_file", "EVIDENCE-42 Ana prefers tea"),
		assistant(words("", 500)),
		user(words("beta", 2000)),
		assistant(words("", 500)),
		user(words("gamma", 10)),
	)
	s.summary = "old summary"
	return s
}

func TestArchiveOutcomes(t *testing.T) {
	rawLines := func(t *testing.T, content string) {
		t.Helper()
		lines := strings.Split(content, "\n")
		want := []string{
			"[RAW] 4 messages",
			"[2026-04-03 00:02] USER: alpha hello",
			"[2026-04-03 00:02] ASSISTANT [calls read_file]",
			"[2026-04-03 00:02] TOOL read_file: EVIDENCE-42 Ana prefers tea",
			"[2026-04-03 00:02] ASSISTANT: hello",
		}
		if len(lines) != len(want) {
			t.Fatalf("raw entry has %d lines: %q", len(lines), content)
		}
		for i := range want {
			if !strings.HasPrefix(lines[i], want[i]) {
				t.Errorf("raw line %d = %.60q, want prefix %q", i, lines[i], want[i])
			}
		}
		if !strings.HasSuffix(lines[1], "…") || len([]rune(lines[1])) > 330 {
			t.Errorf("a long first line must be cut: %d chars", len([]rune(lines[1])))
		}
	}
	tests := []struct {
		name        string
		step        step
		wantEntry   func(*testing.T, string) // nil: no entry
		wantSummary string
		wantRaw     bool
	}{
		{
			name:        "summary",
			step:        step{resp: llm.Response{Content: "- Ana prefers tea\n", FinishReason: llm.FinishStop}},
			wantEntry:   func(t *testing.T, c string) { equal(t, c, "- Ana prefers tea") },
			wantSummary: "- Ana prefers tea",
		},
		{
			name:        "summary after leaked reasoning",
			step:        step{resp: llm.Response{Content: "<think>the user said tea</think>\n- Ana prefers tea", FinishReason: llm.FinishStop}},
			wantEntry:   func(t *testing.T, c string) { equal(t, c, "- Ana prefers tea") },
			wantSummary: "- Ana prefers tea",
		},
		{
			name:        "oversized summary is capped",
			step:        step{resp: llm.Response{Content: "- " + strings.Repeat("x", 9000), FinishReason: llm.FinishStop}},
			wantEntry:   func(t *testing.T, c string) { equal(t, len([]rune(c)), MaxSummaryChars+len(truncatedSuffix)) },
			wantSummary: "- " + strings.Repeat("x", MaxSummaryChars-2) + truncatedSuffix,
		},
		{
			name:        "nothing worth keeping",
			step:        step{resp: llm.Response{Content: " (nothing) ", FinishReason: llm.FinishStop}},
			wantSummary: "old summary",
		},
		{
			name:        "model error",
			step:        step{err: &llm.Error{Kind: llm.ErrUnavailable, Reason: "HTTP 503"}},
			wantEntry:   rawLines,
			wantSummary: "old summary", wantRaw: true,
		},
		{
			name:        "empty answer",
			step:        step{resp: llm.Response{Content: " \n ", FinishReason: llm.FinishStop}},
			wantEntry:   rawLines,
			wantSummary: "old summary", wantRaw: true,
		},
		{
			name:        "only reasoning",
			step:        step{resp: llm.Response{Content: "<think>hmm", FinishReason: llm.FinishStop}},
			wantEntry:   rawLines,
			wantSummary: "old summary", wantRaw: true,
		},
		{
			name:        "cut-off answer",
			step:        step{resp: llm.Response{Content: "- Ana prefers te", FinishReason: llm.FinishLength}},
			wantEntry:   rawLines,
			wantSummary: "old summary", wantRaw: true,
		},
		{
			name:        "tool call",
			step:        step{resp: llm.Response{ToolCalls: []llm.ToolCall{call("x", "write_file", `{}`)}, FinishReason: llm.FinishToolCalls}},
			wantEntry:   rawLines,
			wantSummary: "old summary", wantRaw: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newFakeModel(t, tt.step)
			// One round: a large summary joins the Recent history and
			// would start another.
			cfg := baseConfig
			cfg.MaxRounds = 1
			c, store := newTestConsolidator(t, m, cfg)
			s := outcomeSession()
			rep, err := before(c, t.Context(), s)
			if err != nil {
				t.Fatal(err)
			}
			entries, _ := store.Since(0, 0)
			switch {
			case tt.wantEntry == nil && len(entries) != 0:
				t.Errorf("want no entry, got %q", entries[0].Content)
			case tt.wantEntry != nil && len(entries) != 1:
				t.Fatalf("want one entry, got %d", len(entries))
			case tt.wantEntry != nil:
				tt.wantEntry(t, entries[0].Content)
				if entries[0].SessionKey != s.key || !slices.Equal(rep.Entries, []int{entries[0].Cursor}) {
					t.Errorf("entry %+v, report entries %v", entries[0], rep.Entries)
				}
			}
			if s.lc != 4 || rep.Archived != 4 {
				t.Errorf("LastConsolidated %d, archived %d; want 4 in every case", s.lc, rep.Archived)
			}
			if s.summary != tt.wantSummary {
				t.Errorf("LastSummary = %.40q, want %.40q", s.summary, tt.wantSummary)
			}
			if rep.Raw != tt.wantRaw || rep.Rounds != 1 {
				t.Errorf("Raw %v rounds %d", rep.Raw, rep.Rounds)
			}
			// Nothing is archived twice: the next archive starts after it.
			if _, err := c.ArchiveTail(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			tr := transcripts(m)
			if len(tr) != 2 || strings.Contains(tr[1], "alpha") || strings.Contains(tr[1], "EVIDENCE-42") || !strings.Contains(tr[1], "beta") {
				t.Errorf("second archive call re-sent archived messages or missed new ones")
			}
			if s.lc != len(s.msgs) {
				t.Errorf("ArchiveTail left LastConsolidated at %d of %d", s.lc, len(s.msgs))
			}
		})
	}
}

func equal[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestArchiveRequest(t *testing.T) {
	m := newFakeModel(t)
	c, _ := newTestConsolidator(t, m, baseConfig)
	s := outcomeSession()
	long := strings.Repeat("r", 5000)
	s.msgs[2] = toolResult("c1", "read_file", "EVIDENCE-42 Ana prefers tea\n"+long)
	if _, err := before(c, t.Context(), s); err != nil {
		t.Fatal(err)
	}
	calls := m.Requests()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	req := calls[0]
	if len(req.Tools) != 0 || req.Purpose != llm.PurposeArchive || req.Model != "archiver" {
		t.Errorf("request: %d tools, purpose %q, model %q; want a plain archive call", len(req.Tools), req.Purpose, req.Model)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != llm.RoleSystem || req.Messages[0].Content != archivePrompt || req.Messages[1].Role != llm.RoleUser {
		t.Fatalf("messages: %+v", req.Messages)
	}
	tr := req.Messages[1].Content
	for _, want := range []string{
		"(4 messages, oldest first)",
		"[2026-04-03 00:02] USER: alpha hello",
		"[2026-04-03 00:02] ASSISTANT [calls read_file(path=USER.md)]\n",
		"[2026-04-03 00:02] TOOL read_file: EVIDENCE-42 Ana prefers tea\n" + long[:4000-28] + "\n... (result cut: 1028 more characters)",
	} {
		if !strings.Contains(tr, want) {
			t.Errorf("transcript lacks %.80q", want)
		}
	}
	if strings.Contains(tr, "beta") {
		t.Error("the transcript includes messages after the slice")
	}
	for _, want := range []string{"(nothing)", "- ", "evidence", "Corrections come first"} {
		if !strings.Contains(archivePrompt, want) {
			t.Errorf("archive prompt lacks %q", want)
		}
	}
}

func TestHistoryWriteFailureKeepsMessages(t *testing.T) {
	m := newFakeModel(t)
	c, store := newTestConsolidator(t, m, baseConfig)
	// A directory where the file should be: every append fails.
	if err := os.Mkdir(store.Path(), 0o755); err != nil {
		t.Fatal(err)
	}
	s := outcomeSession()
	_, err := before(c, t.Context(), s)
	if !errors.Is(err, ErrNotArchived) {
		t.Fatalf("err = %v, want ErrNotArchived", err)
	}
	if s.lc != 0 || s.summary != "old summary" {
		t.Errorf("LastConsolidated %d summary %q: nothing may advance when the entry was not written", s.lc, s.summary)
	}
	// Once the disk is back, the same slice is archived.
	if err := os.Remove(store.Path()); err != nil {
		t.Fatal(err)
	}
	if _, err := before(c, t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if s.lc != 4 {
		t.Errorf("LastConsolidated = %d after recovery", s.lc)
	}
}

func TestSessionSaveFailure(t *testing.T) {
	c, store := newTestConsolidator(t, newFakeModel(t), baseConfig)
	s := outcomeSession()
	s.setErr = errors.New("disk full")
	if _, err := before(c, t.Context(), s); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
	if n, _ := store.Len(); n != 1 || s.lc != 0 {
		t.Errorf("entries %d, LastConsolidated %d: the entry stays, the session did not move", n, s.lc)
	}
}

func TestCancelledArchiveWritesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	m := newFakeModel(t, step{wait: func(ctx context.Context) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}})
	c, store := newTestConsolidator(t, m, baseConfig)
	s := outcomeSession()
	_, err := before(c, ctx, s)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if n, _ := store.Len(); n != 0 || s.lc != 0 {
		t.Errorf("entries %d, LastConsolidated %d: a cancelled call archives nothing (not even raw)", n, s.lc)
	}
}

func TestSameSessionIsSerialized(t *testing.T) {
	c, _ := newTestConsolidator(t, nil, baseConfig)
	waiting := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		if kl := c.locks["slack:C1:1712.55\x00slack:C1:1712.55#1"]; kl != nil {
			return kl.refs
		}
		return 0
	}
	// The first archive call holds until the second caller is queued on
	// the session, so both really overlap.
	m := newFakeModel(t, step{
		wait: func(context.Context) error {
			for waiting() < 2 {
				runtime.Gosched()
			}
			return nil
		},
		resp: llm.Response{Content: "- first", FinishReason: llm.FinishStop},
	})
	c.model = m
	s := outcomeSession()
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := before(c, t.Context(), s); err != nil {
			t.Error(err)
		}
	})
	for len(m.Requests()) == 0 {
		runtime.Gosched()
	}
	wg.Go(func() {
		if _, err := c.ArchiveTail(t.Context(), s); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	if m.MaxInflight() != 1 {
		t.Errorf("%d archive calls of one session ran at once", m.MaxInflight())
	}
	tr := transcripts(m)
	if len(tr) != 2 || strings.Contains(tr[1], "alpha") || !strings.Contains(tr[1], "beta") {
		t.Errorf("the second call must start where the first ended")
	}
	if s.lc != len(s.msgs) {
		t.Errorf("LastConsolidated = %d", s.lc)
	}
}

func TestNewSessionUnderSameKeyIsNotBlocked(t *testing.T) {
	// /new: the old conversation's tail is archived in the background
	// while the new one, under the same key, takes its first turns.
	old := outcomeSession()
	fresh := outcomeSession()
	fresh.id = "slack:C1:1712.55#2"
	freshDone := make(chan struct{})
	m := newFakeModel(t, step{
		wait: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			select {
			case <-freshDone:
				return nil
			case <-ctx.Done():
				return errors.New("the new session waited for the old one's archive")
			}
		},
		resp: llm.Response{Content: "- old", FinishReason: llm.FinishStop},
	})
	c, _ := newTestConsolidator(t, m, baseConfig)
	var wg sync.WaitGroup
	wg.Go(func() {
		if rep, err := c.ArchiveTail(t.Context(), old); err != nil || rep.Raw {
			t.Errorf("old tail: %+v, %v", rep, err)
		}
	})
	for len(m.Requests()) == 0 {
		runtime.Gosched()
	}
	if _, err := before(c, t.Context(), fresh); err != nil {
		t.Error(err)
	}
	close(freshDone)
	wg.Wait()
	if fresh.lc != 4 || old.lc != len(old.msgs) {
		t.Errorf("fresh lc %d, old lc %d", fresh.lc, old.lc)
	}
}

func TestPackageImports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := runGo(t, "list", "-deps", ".")
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(out) {
		rest, ours := strings.CutPrefix(dep, "github.com/dreamgate/dreamgate/")
		// internal/* leaves (internal/backoff, through llm), audience and
		// workspace-template (through workspace: a new scope's files)
		// import nothing of ours; store holds history's record types.
		if ours && rest != "llm" && rest != "history" && rest != "store" && rest != "workspace" && rest != "audience" && rest != "workspace-template" &&
			rest != "consolidator" && !strings.HasPrefix(rest, "internal/") {
			t.Errorf("consolidator imports %s; it may only use llm, history (and store, its record types), workspace and the leaves audience and workspace-template (and internal/* leaves) of ours", dep)
		}
		if dep == "github.com/tiktoken-go/tokenizer" {
			t.Errorf("imports %s: only its codec package may be linked (the root package links every vocabulary)", dep)
		}
	}
}

func runGo(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...).CombinedOutput()
	return string(out), err
}

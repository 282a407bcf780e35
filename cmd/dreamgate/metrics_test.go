package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/metrics"
)

// scrapeMetrics reads GET /metrics into series -> value.
func scrapeMetrics(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad line %q", line)
		}
		out[sortedLabels(line[:i])] = v
	}
	return out
}

// sortedLabels writes a series with its labels sorted by name, as the
// exposition writes them, so a test may name them in the order the docs
// do: name{purpose="chat",outcome="ok"} is name{outcome="ok",purpose="chat"}.
func sortedLabels(series string) string {
	name, rest, ok := strings.Cut(series, "{")
	if !ok {
		return series
	}
	rest = strings.TrimSuffix(rest, "}")
	var labels []string
	start, quoted, escaped := 0, false, false
	for i := range len(rest) {
		switch c := rest[i]; {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			labels = append(labels, rest[start:i])
			start = i + 1
		}
	}
	if start < len(rest) {
		labels = append(labels, rest[start:])
	}
	slices.Sort(labels)
	return name + "{" + strings.Join(labels, ",") + "}"
}

func checkMetrics(t *testing.T, step string, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[sortedLabels(k)]; !ok {
			t.Errorf("%s: %s missing", step, k)
		} else if g != v {
			t.Errorf("%s: %s = %v, want %v", step, k, g, v)
		}
	}
}

var healthURL = regexp.MustCompile(`health (http://127\.0\.0\.1:\d+)/healthz`)

func tokens(prompt, completion int) *llm.Usage {
	return &llm.Usage{PromptTokens: prompt, CompletionTokens: completion}
}

// A scripted conversation through the real gateway (the terminal chat, in
// this process, the fake model behind it), then GET /metrics beside
// /healthz: every number is the one the conversation must have produced.
func TestMetricsAfterAScriptedConversation(t *testing.T) {
	h := newHarness(t)
	h.set("gateway.healthAddr", "127.0.0.1:0")
	// A turn, a command, a turn the model refuses.
	// The provider served 8 of the 10 prompt tokens from its cache.
	h.llm.Push(llmtest.Reply{Text: "hello back", Usage: &llm.Usage{PromptTokens: 10, CompletionTokens: 2, CachedTokens: 8}})
	h.llm.Push(llmtest.Reply{Status: 400})
	it := startInteractive(t, h, nil)
	it.stderr.WaitFor(t, "/help for commands")
	m := healthURL.FindStringSubmatch(it.stderr.String())
	if m == nil {
		t.Fatalf("no health address in the banner:\n%s", it.stderr)
	}
	metricsURL := m[1] + "/metrics"

	it.say(t, "hi")
	it.stdout.WaitFor(t, "hello back")
	it.say(t, "/help")
	it.stdout.WaitFor(t, "Ctrl-D or /quit leaves.")
	it.say(t, "please fail")
	it.stderr.WaitFor(t, "The model rejected the request")

	// /dream archives the conversation (one round), then Dream fails in
	// its analysis: the archive entry stays unread.
	h.llm.Push(
		llmtest.Reply{Text: "- The user said hi.", Usage: tokens(20, 5)},
		llmtest.Reply{Status: 400},
	)
	it.say(t, "/dream")
	it.stderr.WaitFor(t, "Dream failed") // a failure, on stderr
	checkMetrics(t, "after the failed Dream", scrapeMetrics(t, metricsURL), map[string]float64{
		`dreamgate_dream_backlog_entries`:                               1,
		`dreamgate_dream_runs_total{outcome="failed"}`:                  1,
		`dreamgate_archive_rounds_total`:                                1,
		`dreamgate_archive_raw_fallbacks_total`:                         0,
		`dreamgate_channel_state{channel="terminal",state="connected"}`: 1,
	})

	// The second /dream has nothing new to archive, and completes.
	h.llm.Push(
		llmtest.Reply{Text: "[USER] says hi", Usage: tokens(30, 4)},
		llmtest.Reply{ToolCalls: []llm.ToolCall{{Name: "edit_file", Arguments: `{"path":"USER.md","old_text":"## People\n","new_text":"## People\n- Says hi\n"}`}}, Usage: tokens(40, 6)},
		llmtest.Reply{Text: "Done.", Usage: tokens(50, 1)},
	)
	it.say(t, "/dream")
	it.stdout.WaitFor(t, "Dream: 1 change to USER.md")

	// One turn holds the model; 32 messages fill the queue; the next is
	// refused as busy.
	release := make(chan struct{})
	var once sync.Once
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		if last := r.Messages[len(r.Messages)-1]; llmtest.Spoken(last.Content) == "hold" {
			<-release
		}
		return llmtest.Reply{Text: "ok: " + llmtest.Spoken(r.Messages[len(r.Messages)-1].Content), Usage: tokens(1, 1)}
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	before := len(h.llm.Requests())
	it.say(t, "hold")
	if _, err := h.llm.WaitRequests(waitCtx(t), before+1); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 33; i++ {
		it.say(t, fmt.Sprintf("q%d", i))
	}
	it.stderr.WaitFor(t, "Not sent: too many messages waiting")
	checkMetrics(t, "while the queue is full", scrapeMetrics(t, metricsURL), map[string]float64{
		`dreamgate_queue_depth`:                             32,
		`dreamgate_busy_refusals_total{channel="terminal"}`: 1,
	})
	once.Do(func() { close(release) })
	it.stdout.WaitFor(t, "ok: q32")
	// A turn is counted once its reply is out and its archive check done;
	// a command queued behind it answers only after that.
	it.say(t, "/nosuchthing")
	it.stdout.WaitFor(t, "Unknown command /nosuchthing")

	final := scrapeMetrics(t, metricsURL)
	readmeListsEveryFamily(t, final)
	checkMetrics(t, "at the end", final, map[string]float64{
		// hi, hold, q1..q32; the refused one.
		`dreamgate_turns_total{channel="terminal",outcome="ok"}`:          34,
		`dreamgate_turns_total{channel="terminal",outcome="model-error"}`: 1,
		`dreamgate_turn_model_seconds_count`:                              35,
		`dreamgate_turn_gateway_seconds_count`:                            35,
		`dreamgate_commands_total{channel="terminal",command="/help"}`:    1,
		`dreamgate_commands_total{channel="terminal",command="/dream"}`:   2,
		`dreamgate_commands_total{channel="terminal",command="unknown"}`:  1,
		`dreamgate_busy_refusals_total{channel="terminal"}`:               1,
		`dreamgate_queue_depth`:                                           0,

		`dreamgate_model_calls_total{purpose="chat",outcome="ok"}`:                 34,
		`dreamgate_model_calls_total{purpose="chat",outcome="rejected"}`:           1,
		`dreamgate_model_calls_total{purpose="archive",outcome="ok"}`:              1,
		`dreamgate_model_calls_total{purpose="dream-analysis",outcome="rejected"}`: 1,
		`dreamgate_model_calls_total{purpose="dream-analysis",outcome="ok"}`:       1,
		`dreamgate_model_calls_total{purpose="dream-edit",outcome="ok"}`:           2,
		`dreamgate_model_tokens_total{purpose="chat",kind="prompt"}`:               10 + 33,
		`dreamgate_model_tokens_total{purpose="chat",kind="completion"}`:           2 + 33,
		`dreamgate_model_tokens_total{purpose="archive",kind="prompt"}`:            20,
		`dreamgate_model_tokens_total{purpose="archive",kind="completion"}`:        5,
		`dreamgate_model_tokens_total{purpose="dream-analysis",kind="prompt"}`:     30,
		`dreamgate_model_tokens_total{purpose="dream-edit",kind="prompt"}`:         40 + 50,
		`dreamgate_model_tokens_total{purpose="dream-edit",kind="completion"}`:     6 + 1,
		`dreamgate_model_cached_tokens_total{purpose="chat"}`:                      8,
		`dreamgate_model_cached_tokens_total{purpose="archive"}`:                   0,
		`dreamgate_model_breaker_open`:                                             0,

		`dreamgate_archive_rounds_total`:                               1,
		`dreamgate_archive_raw_fallbacks_total`:                        0,
		`dreamgate_dream_runs_total{outcome="failed"}`:                 1,
		`dreamgate_dream_runs_total{outcome="completed"}`:              1,
		`dreamgate_dream_duration_seconds_count`:                       2,
		`dreamgate_dream_backlog_entries`:                              0,
		`dreamgate_channel_reconnects_total{channel="terminal"}`:       0,
		`dreamgate_channel_rate_limit_waits_total{channel="terminal"}`: 0,
	})
}

// Before the gateway is wired, /metrics says it is starting.
func TestMetricsEndpointBeforeWiring(t *testing.T) {
	var e metricsEndpoint
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", rec.Code)
	}
}

// readmeListsEveryFamily keeps the metrics list of docs/operations.md
// true: every family served is named there.
func readmeListsEveryFamily(t *testing.T, series map[string]float64) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for s := range series {
		family, _, _ := strings.Cut(s, "{")
		if !strings.HasPrefix(family, "dreamgate_") {
			continue // go_* and process_*, named as a group
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if f, ok := strings.CutSuffix(family, suffix); ok && strings.HasSuffix(f, "_seconds") {
				family = f
			}
		}
		if !seen[family] && !strings.Contains(string(readme), "`"+family) {
			t.Errorf("the Metrics list of docs/operations.md does not name %s", family)
		}
		seen[family] = true
	}
	if len(seen) < 15 {
		t.Errorf("only %d metric families served: %v", len(seen), seen)
	}
}

// stubArchives answers every consolidator call with the same report.
type stubArchives struct {
	gateway.Consolidator // nil: Status is not called
	rep                  consolidator.Report
}

func (s stubArchives) Before(_ context.Context, _ consolidator.Session, p consolidator.Prompt) (consolidator.Prompt, consolidator.Report, error) {
	return p, s.rep, nil
}

func (s stubArchives) After(context.Context, consolidator.Session, consolidator.Prompt, consolidator.Sent) (consolidator.Report, error) {
	return s.rep, nil
}

func (s stubArchives) ArchiveTail(context.Context, consolidator.Session) (consolidator.Report, error) {
	return s.rep, errors.New("the archive failed half way")
}

// Every consolidator call's report counts, a failed one too (its rounds
// ran); a report with no round counts nothing.
func TestArchivesCountedFromReports(t *testing.T) {
	m := metrics.New()
	a := &app{metrics: m}
	c := a.observedArchives(stubArchives{rep: consolidator.Report{Rounds: 2, Raw: true}})
	_, _, _ = c.Before(t.Context(), nil, consolidator.Prompt{})
	_, _ = c.After(t.Context(), nil, consolidator.Prompt{}, consolidator.Sent{})
	_, _ = c.ArchiveTail(t.Context(), nil)
	_, _ = a.observedArchives(stubArchives{}).ArchiveTail(t.Context(), nil)
	srv := httptest.NewServer(m.Handler(metrics.Sources{}))
	defer srv.Close()
	checkMetrics(t, "archives", scrapeMetrics(t, srv.URL), map[string]float64{
		`dreamgate_archive_rounds_total`:        6,
		`dreamgate_archive_raw_fallbacks_total`: 3,
	})
	if _, wrapped := (&app{}).observedArchives(stubArchives{}).(archiveNotices); wrapped {
		t.Error("without metrics the consolidator is wrapped")
	}
}

func TestCallOutcome(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{&llm.Error{Kind: llm.ErrUnavailable}, "unavailable"},
		{fmt.Errorf("agent: %w", &llm.Error{Kind: llm.ErrRejected, Status: 401}), "rejected"},
		{&llm.Error{Kind: llm.ErrMalformed}, "malformed"},
		{fmt.Errorf("chat with m: %w", context.Canceled), "cancelled"},
		{errors.New("other"), "error"},
	} {
		if got := callOutcome(tc.err); got != tc.want {
			t.Errorf("callOutcome(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

package metrics

import (
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// exposition is a scrape read back with the library's own text parser:
// series (name, then labels sorted by name) -> value, and the families.
type exposition struct {
	values   map[string]float64
	families map[string]*dto.MetricFamily
}

func parse(t *testing.T, r io.Reader) exposition {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatal(err)
	}
	e := exposition{values: map[string]float64{}, families: families}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			pairs := m.GetLabel()
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					le := strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
					e.values[key(name+"_bucket", pairs, "le", le)] = float64(b.GetCumulativeCount())
				}
				e.values[key(name+"_bucket", pairs, "le", "+Inf")] = float64(h.GetSampleCount())
				e.values[key(name+"_sum", pairs, "", "")] = h.GetSampleSum()
				e.values[key(name+"_count", pairs, "", "")] = float64(h.GetSampleCount())
			case dto.MetricType_COUNTER:
				e.values[key(name, pairs, "", "")] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				e.values[key(name, pairs, "", "")] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				e.values[key(name, pairs, "", "")] = m.GetUntyped().GetValue()
			}
		}
	}
	return e
}

// key writes a series as name{a="x",b="y"}, labels sorted by name and
// escaped as the format does.
func key(name string, pairs []*dto.LabelPair, extra, extraValue string) string {
	var ls []string
	for _, p := range pairs {
		ls = append(ls, p.GetName()+"="+quote(p.GetValue()))
	}
	if extra != "" {
		ls = append(ls, extra+"="+quote(extraValue))
	}
	if len(ls) == 0 {
		return name
	}
	slices.Sort(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

func quote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v) + `"`
}

// canonical rewrites a series as key does, so the tests may write labels
// in the order the docs name them.
func canonical(t *testing.T, series string) string {
	t.Helper()
	e := parse(t, strings.NewReader(series+" 1\n"))
	for k := range e.values {
		return k
	}
	t.Fatalf("cannot read series %s", series)
	return ""
}

func expect(t *testing.T, got exposition, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		g, ok := got.values[canonical(t, k)]
		switch {
		case !ok:
			t.Errorf("%s missing", k)
		case g != v:
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
}

func scrape(t *testing.T, m *Metrics, src Sources) exposition {
	t.Helper()
	var b strings.Builder
	if err := m.WritePrometheus(&b, src); err != nil {
		t.Fatal(err)
	}
	return parse(t, strings.NewReader(b.String()))
}

// everySource is a source of every kind.
func everySource() Sources {
	return Sources{
		QueueDepth:  func() int { return 3 },
		BreakerOpen: func() bool { return true },
		Tokens: func() map[string]Tokens {
			return map[string]Tokens{"chat": {Prompt: 120, Completion: 30, Cached: 96}, "dream-edit": {Prompt: 5, Completion: 1}}
		},
		DreamBacklog: func() (int, error) { return 7, nil },
		Channels: func() map[string]Channel {
			return map[string]Channel{
				"slack":   {State: "reconnecting", Reconnects: 2, RateLimitWaits: 4},
				"discord": {State: "connected"},
			}
		},
		Models: func() []ModelCalls {
			return []ModelCalls{
				{Model: "hosted", Purpose: "chat", Calls: 4, Failures: 2, Fallbacks: 1, PromptTokens: 100, CompletionTokens: 20},
				{Model: "local", Purpose: "archive", Calls: 1, PromptTokens: 50, CompletionTokens: 5},
			}
		},
		Cooling:    func() map[string]bool { return map[string]bool{"hosted": true, "local": false} },
		InboxDepth: func() (int, error) { return 12, nil },
	}
}

// everyEvent records an event of every kind.
func everyEvent(m *Metrics) {
	m.TurnDone("slack", "ok", 1500*time.Millisecond, 20*time.Millisecond)
	m.TurnDone("slack", "ok", 3*time.Second, 2*time.Millisecond)
	m.TurnDone("discord", "model-error", 0, 40*time.Millisecond)
	m.CommandDone("slack", "/status")
	m.Busy("slack")
	m.Busy("slack")
	m.ModelCall("chat", "ok")
	m.ModelCall("archive", "unavailable")
	m.Archived(2, false)
	m.Archived(1, true)
	m.Archived(0, false)
	m.Archived(-3, false)
	m.DreamDone("completed", 45*time.Second)
	m.DreamDone("nothing-new", 10*time.Millisecond)
	m.Takeover()
	m.ClaimWait(250 * time.Millisecond)
}

func TestExposition(t *testing.T) {
	m := New()
	everyEvent(m)
	backlog, backlogErr := 7, error(nil)
	src := everySource()
	src.DreamBacklog = func() (int, error) { return backlog, backlogErr }
	got := scrape(t, m, src)
	expect(t, got, map[string]float64{
		`dreamgate_turns_total{channel="slack",outcome="ok"}`:                    2,
		`dreamgate_turns_total{channel="discord",outcome="model-error"}`:         1,
		`dreamgate_turn_model_seconds_count`:                                     3,
		`dreamgate_turn_model_seconds_sum`:                                       4.5,
		`dreamgate_turn_model_seconds_bucket{le="1"}`:                            1,
		`dreamgate_turn_model_seconds_bucket{le="2.5"}`:                          2,
		`dreamgate_turn_model_seconds_bucket{le="5"}`:                            3,
		`dreamgate_turn_gateway_seconds_bucket{le="0.005"}`:                      1,
		`dreamgate_turn_gateway_seconds_bucket{le="0.025"}`:                      2,
		`dreamgate_turn_gateway_seconds_bucket{le="+Inf"}`:                       3,
		`dreamgate_commands_total{channel="slack",command="/status"}`:            1,
		`dreamgate_busy_refusals_total{channel="slack"}`:                         2,
		`dreamgate_model_calls_total{purpose="chat",outcome="ok"}`:               1,
		`dreamgate_model_calls_total{purpose="archive",outcome="unavailable"}`:   1,
		`dreamgate_model_tokens_total{purpose="chat",kind="prompt"}`:             120,
		`dreamgate_model_tokens_total{purpose="chat",kind="completion"}`:         30,
		`dreamgate_model_tokens_total{purpose="dream-edit",kind="prompt"}`:       5,
		`dreamgate_model_cached_tokens_total{purpose="chat"}`:                    96,
		`dreamgate_model_cached_tokens_total{purpose="dream-edit"}`:              0,
		`dreamgate_model_breaker_open`:                                           1,
		`dreamgate_archive_rounds_total`:                                         3,
		`dreamgate_archive_raw_fallbacks_total`:                                  1,
		`dreamgate_dream_runs_total{outcome="completed"}`:                        1,
		`dreamgate_dream_runs_total{outcome="nothing-new"}`:                      1,
		`dreamgate_dream_duration_seconds_count`:                                 2,
		`dreamgate_dream_duration_seconds_bucket{le="0.1"}`:                      1,
		`dreamgate_dream_duration_seconds_bucket{le="30"}`:                       1,
		`dreamgate_dream_duration_seconds_bucket{le="60"}`:                       2,
		`dreamgate_dream_backlog_entries`:                                        7,
		`dreamgate_takeovers_total`:                                              1,
		`dreamgate_claim_wait_seconds_count`:                                     1,
		`dreamgate_inbox_depth`:                                                  12,
		`dreamgate_queue_depth`:                                                  3,
		`dreamgate_llm_calls_total{model="hosted",purpose="chat"}`:               4,
		`dreamgate_llm_failures_total{model="hosted",purpose="chat"}`:            2,
		`dreamgate_llm_fallbacks_total{model="hosted",purpose="chat"}`:           1,
		`dreamgate_llm_prompt_tokens_total{model="hosted",purpose="chat"}`:       100,
		`dreamgate_llm_completion_tokens_total{model="local",purpose="archive"}`: 5,
		`dreamgate_llm_fallbacks_total{model="local",purpose="archive"}`:         0,
		`dreamgate_llm_cooling_down{model="hosted"}`:                             1,
		`dreamgate_llm_cooling_down{model="local"}`:                              0,
		`dreamgate_channel_state{channel="slack",state="reconnecting"}`:          1,
		`dreamgate_channel_state{channel="slack",state="connected"}`:             0,
		`dreamgate_channel_state{channel="discord",state="connected"}`:           1,
		`dreamgate_channel_reconnects_total{channel="slack"}`:                    2,
		`dreamgate_channel_rate_limit_waits_total{channel="slack"}`:              4,
		`dreamgate_channel_rate_limit_waits_total{channel="discord"}`:            0,
	})

	// State read at scrape time follows its source; an unreadable
	// backlog keeps the last value.
	backlog, backlogErr = 0, errors.New("history unreadable")
	expect(t, scrape(t, m, src), map[string]float64{`dreamgate_dream_backlog_entries`: 7})
	backlogErr = nil
	expect(t, scrape(t, m, src), map[string]float64{`dreamgate_dream_backlog_entries`: 0})
}

// Every dreamgate_* family keeps its name, type and labels: dashboards
// and alerts are written against them. The list is the one docs/operations.md
// gives.
func TestEveryFamilyKeepsItsNameAndLabels(t *testing.T) {
	want := map[string]string{
		"dreamgate_archive_raw_fallbacks_total":    "counter",
		"dreamgate_archive_rounds_total":           "counter",
		"dreamgate_busy_refusals_total":            "counter channel",
		"dreamgate_channel_rate_limit_waits_total": "counter channel",
		"dreamgate_channel_reconnects_total":       "counter channel",
		"dreamgate_channel_state":                  "gauge channel state",
		"dreamgate_commands_total":                 "counter channel command",
		"dreamgate_dream_backlog_entries":          "gauge",
		"dreamgate_dream_duration_seconds":         "histogram",
		"dreamgate_dream_runs_total":               "counter outcome",
		"dreamgate_claim_wait_seconds":             "histogram",
		"dreamgate_inbox_depth":                    "gauge",
		"dreamgate_takeovers_total":                "counter",
		"dreamgate_llm_calls_total":                "counter model purpose",
		"dreamgate_llm_completion_tokens_total":    "counter model purpose",
		"dreamgate_llm_cooling_down":               "gauge model",
		"dreamgate_llm_failures_total":             "counter model purpose",
		"dreamgate_llm_fallbacks_total":            "counter model purpose",
		"dreamgate_llm_prompt_tokens_total":        "counter model purpose",
		"dreamgate_model_breaker_open":             "gauge",
		"dreamgate_model_cached_tokens_total":      "counter purpose",
		"dreamgate_model_calls_total":              "counter outcome purpose",
		"dreamgate_model_tokens_total":             "counter kind purpose",
		"dreamgate_queue_depth":                    "gauge",
		"dreamgate_turn_gateway_seconds":           "histogram",
		"dreamgate_turn_model_seconds":             "histogram",
		"dreamgate_turns_total":                    "counter channel outcome",
	}
	m := New()
	everyEvent(m)
	got := map[string]string{}
	for name, f := range scrape(t, m, everySource()).families {
		if !strings.HasPrefix(name, "dreamgate_") {
			continue
		}
		shape := []string{strings.ToLower(f.GetType().String())}
		for _, l := range f.GetMetric()[0].GetLabel() {
			shape = append(shape, l.GetName())
		}
		got[name] = strings.Join(shape, " ")
		if f.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if got[name] != want[name] {
			t.Errorf("%s served as %q, want %q", name, got[name], want[name])
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is served but not in the list", name)
		}
	}
}

// The whole exposition passes promtool's lint (the same rules, as the
// library's promlint package): names, units, types and help text of ours
// and of the Go and process series.
func TestExpositionPassesPromlint(t *testing.T) {
	m := New()
	everyEvent(m)
	var b strings.Builder
	if err := m.WritePrometheus(&b, everySource()); err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.New(strings.NewReader(b.String())).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	e := parse(t, strings.NewReader(b.String()))
	want := []string{"go_gc_duration_seconds", "go_goroutines", "go_info", "go_memstats_alloc_bytes", "go_threads"}
	if runtime.GOOS == "linux" {
		want = append(want, "process_cpu_seconds_total", "process_open_fds", "process_max_fds",
			"process_resident_memory_bytes", "process_start_time_seconds", "process_virtual_memory_bytes")
	}
	for _, name := range want {
		if _, ok := e.families[name]; !ok {
			t.Errorf("%s is not served", name)
		}
	}
}

func TestFreshMetricsShowZeros(t *testing.T) {
	got := scrape(t, New(), Sources{})
	expect(t, got, map[string]float64{
		`dreamgate_turn_model_seconds_count`:     0,
		`dreamgate_archive_rounds_total`:         0,
		`dreamgate_archive_raw_fallbacks_total`:  0,
		`dreamgate_dream_duration_seconds_count`: 0,
	})
	if _, ok := got.values[`dreamgate_queue_depth`]; ok {
		t.Error("queue depth exposed without a source")
	}
	if got.values[`go_goroutines`] < 1 || (runtime.GOOS == "linux" && got.values[`process_resident_memory_bytes`] <= 0) {
		t.Errorf("no go_* and process_* series: goroutines %v, RSS %v", got.values[`go_goroutines`], got.values[`process_resident_memory_bytes`])
	}
}

// Label values are escaped as the format wants; bytes that are not UTF-8
// become U+FFFD rather than a panic or a refused scrape.
func TestLabelValuesAreEscaped(t *testing.T) {
	m := New()
	m.CommandDone(`we"ird`, "/x")
	m.CommandDone("two\nlines\\", `{"}`)
	m.Busy("bad\xffutf8")
	src := Sources{Cooling: func() map[string]bool { return map[string]bool{"bad\xffname": true} }}
	expect(t, scrape(t, m, src), map[string]float64{
		`dreamgate_commands_total{channel="we\"ird",command="/x"}`:        1,
		`dreamgate_commands_total{channel="two\nlines\\",command="{\"}"}`: 1,
		"dreamgate_busy_refusals_total{channel=\"bad\ufffdutf8\"}":        1,
		"dreamgate_llm_cooling_down{model=\"bad\ufffdname\"}":             1,
	})
}

func TestNilMetricsIsANoOp(t *testing.T) {
	var m *Metrics
	m.TurnDone("c", "ok", time.Second, time.Second)
	m.CommandDone("c", "/help")
	m.Busy("c")
	m.ModelCall("chat", "ok")
	m.Archived(1, true)
	m.DreamDone("completed", time.Second)
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(New().Handler(Sources{QueueDepth: func() int { return 1 }}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q", ct)
	}
	expect(t, parse(t, resp.Body), map[string]float64{`dreamgate_queue_depth`: 1})
}

// A value on a bound is in that bound's bucket (le); buckets are
// cumulative and the +Inf one equals _count; a value past the last bound
// is only in +Inf. Every bound of the table is written, in order.
func TestHistogramBuckets(t *testing.T) {
	m := New()
	for _, d := range []time.Duration{0, 5 * time.Millisecond, 6 * time.Millisecond, time.Second, 301 * time.Second} {
		m.TurnDone("c", "ok", d, 0)
	}
	var b strings.Builder
	if err := m.WritePrometheus(&b, Sources{}); err != nil {
		t.Fatal(err)
	}
	expect(t, parse(t, strings.NewReader(b.String())), map[string]float64{
		`dreamgate_turn_model_seconds_bucket{le="0.005"}`:   2,
		`dreamgate_turn_model_seconds_bucket{le="0.01"}`:    3,
		`dreamgate_turn_model_seconds_bucket{le="0.5"}`:     3,
		`dreamgate_turn_model_seconds_bucket{le="1"}`:       4,
		`dreamgate_turn_model_seconds_bucket{le="300"}`:     4,
		`dreamgate_turn_model_seconds_bucket{le="+Inf"}`:    5,
		`dreamgate_turn_model_seconds_count`:                5,
		`dreamgate_turn_model_seconds_sum`:                  0.005 + 0.006 + 1 + 301,
		`dreamgate_turn_gateway_seconds_bucket{le="0.005"}`: 5,
	})
	var les []string
	for line := range strings.Lines(b.String()) {
		if rest, ok := strings.CutPrefix(line, `dreamgate_dream_duration_seconds_bucket{le="`); ok {
			le, _, _ := strings.Cut(rest, `"`)
			les = append(les, le)
		}
	}
	if got, want := strings.Join(les, " "), "0.1 1 5 10 30 60 120 300 600 1200 +Inf"; got != want {
		t.Errorf("dream duration bounds %s, want %s", got, want)
	}
}

// Events and scrapes from many goroutines (run with -race); every event
// is counted.
func TestConcurrentUse(t *testing.T) {
	m := New()
	src := Sources{Channels: func() map[string]Channel { return map[string]Channel{"c": {State: "connected"}} }}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 200 {
				m.TurnDone("c", "ok", time.Millisecond, time.Millisecond)
				m.CommandDone("c", strconv.Itoa(i))
				m.Archived(1, false)
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 20 {
				if err := m.WritePrometheus(io.Discard, src); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	expect(t, scrape(t, m, src), map[string]float64{
		`dreamgate_turns_total{channel="c",outcome="ok"}`:   1600,
		`dreamgate_turn_model_seconds_count`:                1600,
		`dreamgate_archive_rounds_total`:                    1600,
		`dreamgate_commands_total{channel="c",command="7"}`: 200,
	})
}

// go test -run '^$' -bench WritePrometheus -benchmem ./metrics/
func BenchmarkWritePrometheus(b *testing.B) {
	m := New()
	for i := range 20 {
		m.TurnDone("slack", "ok", time.Duration(i)*time.Second, time.Millisecond)
		m.CommandDone("slack", "/help")
		m.ModelCall("chat", "ok")
	}
	src := Sources{
		QueueDepth: func() int { return 1 },
		Tokens:     func() map[string]Tokens { return map[string]Tokens{"chat": {1, 2, 0}, "archive": {3, 4, 1}} },
		Channels: func() map[string]Channel {
			return map[string]Channel{"slack": {State: "connected"}, "discord": {State: "connecting"}}
		},
	}
	for b.Loop() {
		if err := m.WritePrometheus(io.Discard, src); err != nil {
			b.Fatal(err)
		}
	}
}

// go test -run '^$' -bench TurnDone -benchmem ./metrics/
func BenchmarkTurnDone(b *testing.B) {
	m := New()
	for b.Loop() {
		m.TurnDone("slack", "ok", time.Second, time.Millisecond)
	}
}

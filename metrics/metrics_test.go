package metrics

import (
	"errors"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// scrape reads an exposition strictly (parseExposition) into series ->
// value and family -> type.
func scrape(t *testing.T, r io.Reader) (map[string]float64, map[string]string) {
	t.Helper()
	e, err := parseExposition(r)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, f := range e.families {
		types[f.name] = f.typ
	}
	return e.values, types
}

func expect(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s missing", k)
		case g != v:
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
}

func TestExposition(t *testing.T) {
	backlog, backlogErr := 7, error(nil)
	m := New()
	src := Sources{
		QueueDepth:  func() int { return 3 },
		BreakerOpen: func() bool { return true },
		Tokens: func() map[string]Tokens {
			return map[string]Tokens{"chat": {Prompt: 120, Completion: 30, Cached: 96}, "dream-edit": {Prompt: 5, Completion: 1}}
		},
		DreamBacklog: func() (int, error) { return backlog, backlogErr },
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
		Cooling: func() map[string]bool { return map[string]bool{"hosted": true, "local": false} },
	}
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
	m.DreamDone("completed", 45*time.Second)
	m.DreamDone("nothing-new", 10*time.Millisecond)

	var b strings.Builder
	m.WritePrometheus(&b, src)
	got, types := scrape(t, strings.NewReader(b.String()))
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
	for family, typ := range map[string]string{
		"dreamgate_turns_total":                    "counter",
		"dreamgate_turn_model_seconds":             "histogram",
		"dreamgate_model_tokens_total":             "counter",
		"dreamgate_model_cached_tokens_total":      "counter",
		"dreamgate_channel_reconnects_total":       "counter",
		"dreamgate_channel_rate_limit_waits_total": "counter",
		"dreamgate_channel_state":                  "gauge",
		"dreamgate_queue_depth":                    "gauge",
	} {
		if types[family] != typ {
			t.Errorf("# TYPE %s = %q, want %q", family, types[family], typ)
		}
	}

	// State read at scrape time follows its source; an unreadable
	// backlog keeps the last value.
	backlog, backlogErr = 0, errors.New("history unreadable")
	b.Reset()
	m.WritePrometheus(&b, src)
	got, _ = scrape(t, strings.NewReader(b.String()))
	expect(t, got, map[string]float64{`dreamgate_dream_backlog_entries`: 7})
	backlogErr = nil
	b.Reset()
	m.WritePrometheus(&b, src)
	got, _ = scrape(t, strings.NewReader(b.String()))
	expect(t, got, map[string]float64{`dreamgate_dream_backlog_entries`: 0})
}

func TestFreshMetricsShowZeros(t *testing.T) {
	var b strings.Builder
	New().WritePrometheus(&b, Sources{})
	got, _ := scrape(t, strings.NewReader(b.String()))
	expect(t, got, map[string]float64{
		`dreamgate_turn_model_seconds_count`:    0,
		`dreamgate_archive_rounds_total`:        0,
		`dreamgate_archive_raw_fallbacks_total`: 0,
	})
	if _, ok := got[`dreamgate_queue_depth`]; ok {
		t.Error("queue depth exposed without a source")
	}
	if got[`go_goroutines`] < 1 || (runtime.GOOS == "linux" && got[`process_resident_memory_bytes`] <= 0) {
		t.Errorf("no go_* and process_* series: goroutines %v, RSS %v", got[`go_goroutines`], got[`process_resident_memory_bytes`])
	}
}

func TestLabelValuesAreEscaped(t *testing.T) {
	if got, want := string(appendName(nil, "x", "", [2][2]string{{"a", `q"b\c` + "\n"}}, "", "")), `x{a="q\"b\\c\n"}`; got != want {
		t.Errorf("series = %s, want %s", got, want)
	}
	if got, want := string(appendLabel(nil, "a", "bad\xffutf8")), "a=\"bad\ufffdutf8\""; got != want {
		t.Errorf("label = %s, want %s", got, want)
	}
	m := New()
	m.CommandDone(`we"ird`, "/x")
	m.CommandDone("two\nlines\\", `{"}`)
	var b strings.Builder
	m.WritePrometheus(&b, Sources{})
	got, _ := scrape(t, strings.NewReader(b.String()))
	expect(t, got, map[string]float64{
		`dreamgate_commands_total{channel="we\"ird",command="/x"}`:        1,
		`dreamgate_commands_total{channel="two\nlines\\",command="{\"}"}`: 1,
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
	got, _ := scrape(t, resp.Body)
	expect(t, got, map[string]float64{`dreamgate_queue_depth`: 1})
}

// A value on a bound is in that bound's bucket (le); buckets are
// cumulative and the +Inf one equals _count; a value past the last bound
// is only in +Inf.
func TestHistogramBuckets(t *testing.T) {
	m := New()
	for _, d := range []time.Duration{0, 5 * time.Millisecond, 6 * time.Millisecond, time.Second, 301 * time.Second} {
		m.TurnDone("c", "ok", d, 0)
	}
	var b strings.Builder
	m.WritePrometheus(&b, Sources{})
	got, _ := scrape(t, strings.NewReader(b.String()))
	want := map[string]float64{
		`dreamgate_turn_model_seconds_bucket{le="0.005"}`:   2,
		`dreamgate_turn_model_seconds_bucket{le="0.01"}`:    3,
		`dreamgate_turn_model_seconds_bucket{le="0.5"}`:     3,
		`dreamgate_turn_model_seconds_bucket{le="1"}`:       4,
		`dreamgate_turn_model_seconds_bucket{le="300"}`:     4,
		`dreamgate_turn_model_seconds_bucket{le="+Inf"}`:    5,
		`dreamgate_turn_model_seconds_count`:                5,
		`dreamgate_turn_model_seconds_sum`:                  0.005 + 0.006 + 1 + 301,
		`dreamgate_turn_gateway_seconds_bucket{le="0.005"}`: 5,
	}
	expect(t, got, want)
	// Every bound of the table is written, in order, then +Inf.
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

// The whole exposition, with every family present, reads strictly: one
// HELP and TYPE per family, families in name order, every histogram and
// summary well formed.
func TestExpositionIsWellFormed(t *testing.T) {
	m := New()
	m.TurnDone("slack", "ok", time.Second, time.Millisecond)
	m.CommandDone("slack", "/help")
	m.Busy("slack")
	m.ModelCall("chat", "ok")
	m.Archived(1, true)
	m.DreamDone("completed", time.Minute)
	src := Sources{
		QueueDepth:   func() int { return 1 },
		Tokens:       func() map[string]Tokens { return map[string]Tokens{"chat": {1, 2, 0}} },
		BreakerOpen:  func() bool { return false },
		DreamBacklog: func() (int, error) { return 2, nil },
		Channels:     func() map[string]Channel { return map[string]Channel{"slack": {State: "connected"}} },
		Models:       func() []ModelCalls { return []ModelCalls{{Model: "llm", Purpose: "chat", Calls: 1}} },
		Cooling:      func() map[string]bool { return map[string]bool{"llm": false} },
	}
	var b strings.Builder
	m.WritePrometheus(&b, src)
	e, err := parseExposition(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]string{}
	for _, f := range e.families {
		if !f.hasHelp {
			t.Errorf("%s has no HELP", f.name)
		}
		served[f.name] = f.typ
	}
	// Every dreamgate_* family of the table is served once its source or
	// event has been seen, with the table's type.
	for _, f := range families {
		if served[f.name] != f.typ {
			t.Errorf("%s served as %q, want %q", f.name, served[f.name], f.typ)
		}
	}
	want := map[string]string{
		"go_gc_duration_seconds":        "summary",
		"go_goroutines":                 "gauge",
		"go_info":                       "gauge",
		"go_memstats_alloc_bytes":       "gauge",
		"go_memstats_alloc_bytes_total": "counter",
		"go_memstats_sys_bytes":         "gauge",
		"go_memlimit_bytes":             "gauge",
		"go_threads":                    "gauge",
	}
	if runtime.GOOS == "linux" {
		for name, typ := range map[string]string{
			"process_cpu_seconds_total":     "counter",
			"process_max_fds":               "gauge",
			"process_open_fds":              "gauge",
			"process_resident_memory_bytes": "gauge",
			"process_start_time_seconds":    "gauge",
			"process_virtual_memory_bytes":  "gauge",
		} {
			want[name] = typ
		}
	}
	for name, typ := range want {
		if served[name] != typ {
			t.Errorf("%s served as %q, want %q", name, served[name], typ)
		}
	}
	if runtime.GOOS == "linux" {
		v := e.values
		if v["process_open_fds"] < 3 || v["process_open_fds"] > v["process_max_fds"] {
			t.Errorf("open fds %v, max %v", v["process_open_fds"], v["process_max_fds"])
		}
		if start, now := v["process_start_time_seconds"], float64(time.Now().Unix()); start > now+1 || start < now-3600 {
			t.Errorf("process_start_time_seconds %v, now %v", start, now)
		}
		if v["process_virtual_memory_bytes"] < v["process_resident_memory_bytes"] {
			t.Errorf("virtual memory %v below resident %v", v["process_virtual_memory_bytes"], v["process_resident_memory_bytes"])
		}
	}
}

// The reader refuses what the writer must never write, so the tests above
// would see it.
func TestParserIsStrict(t *testing.T) {
	const ok = "# HELP a_seconds h\n# TYPE a_seconds histogram\n" +
		"a_seconds_bucket{le=\"1\"} 1\na_seconds_bucket{le=\"2\"} 2\na_seconds_bucket{le=\"+Inf\"} 2\n" +
		"a_seconds_sum 2.5\na_seconds_count 2\n# TYPE b_total counter\nb_total{x=\"q\\\"\\\\\\n\"} 1\n"
	if _, err := parseExposition(strings.NewReader(ok)); err != nil {
		t.Fatalf("a good exposition refused: %v", err)
	}
	for name, bad := range map[string]string{
		"non-cumulative buckets": strings.Replace(ok, `le="2"} 2`, `le="2"} 0`, 1),
		"+Inf is not _count":     strings.Replace(ok, "a_seconds_count 2", "a_seconds_count 3", 1),
		"no +Inf":                strings.Replace(ok, "a_seconds_bucket{le=\"+Inf\"} 2\n", "", 1),
		"le not ascending":       strings.Replace(ok, `le="2"`, `le="0.5"`, 1),
		"typed twice":            ok + "# TYPE b_total counter\n",
		"families out of order":  ok + "# TYPE a_total counter\na_total 1\n",
		"sample of another name": ok + "c_total 1\n",
		"bad escape":             strings.Replace(ok, `\\`, `\t`, 1),
		"unescaped quote":        strings.Replace(ok, `q\"`, `q"`, 1),
		"series twice":           ok + "b_total{x=\"q\\\"\\\\\\n\"} 1\n",
		"timestamp":              strings.Replace(ok, "a_seconds_count 2", "a_seconds_count 2 1700000000", 1),
		"empty line":             ok + "\n",
		"two spaces":             strings.Replace(ok, "a_seconds_sum 2.5", "a_seconds_sum  2.5", 1),
		"inf spelt wrong":        strings.Replace(ok, `le="+Inf"`, `le="Inf"`, 1),
		"label sets differ":      ok + "b_total{y=\"q\"} 1\n",
		"negative counter":       strings.Replace(ok, "} 1\n", "} -1\n", 1),
		"trailing comma":         strings.Replace(ok, `\n"}`, `\n",}`, 1),
	} {
		if _, err := parseExposition(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
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
				m.WritePrometheus(io.Discard, src)
			}
		})
	}
	wg.Wait()
	var b strings.Builder
	m.WritePrometheus(&b, src)
	got, _ := scrape(t, strings.NewReader(b.String()))
	expect(t, got, map[string]float64{
		`dreamgate_turns_total{channel="c",outcome="ok"}`:   1600,
		`dreamgate_turn_model_seconds_count`:                1600,
		`dreamgate_archive_rounds_total`:                    1600,
		`dreamgate_commands_total{channel="c",command="7"}`: 200,
	})
}

// Metrics starts no goroutine, neither when made nor when scraped: the
// process figures are read on the scraping goroutine.
func TestNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	m := New()
	m.TurnDone("c", "ok", 0, 0)
	m.WritePrometheus(io.Discard, Sources{})
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines %d before, %d after", before, after)
	}
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
		m.WritePrometheus(io.Discard, src)
	}
}

// go test -run '^$' -bench TurnDone -benchmem ./metrics/
func BenchmarkTurnDone(b *testing.B) {
	m := New()
	for b.Loop() {
		m.TurnDone("slack", "ok", time.Second, time.Millisecond)
	}
}

// Every command pays the package initialisation of what this package
// imports, served or not: the imports stay within a list of standard
// packages that the binary links anyway or that have no init work.
// runtime/metrics is left out on purpose (its init builds a table at
// every start); a module from outside would bring its own.
func TestImportsAreInitFree(t *testing.T) {
	allowed := map[string]bool{
		"bytes": true, "io": true, "math": true, "net/http": true, "os": true,
		"runtime": true, "runtime/debug": true, "slices": true, "sort": true,
		"strconv": true, "sync": true, "syscall": true, "time": true, "unicode/utf8": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); !allowed[p] {
				t.Errorf("%s imports %s: measure its init cost (GODEBUG=inittrace=1) before adding it here", name, p)
			}
		}
	}
}

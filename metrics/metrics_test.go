package metrics

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape parses an exposition into series -> value and family -> type,
// failing on a malformed line or a family typed twice.
func scrape(t *testing.T, r io.Reader) (map[string]float64, map[string]string) {
	t.Helper()
	values, types := map[string]float64{}, map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if len(f) != 4 {
				t.Fatalf("bad TYPE line %q", line)
			}
			if _, dup := types[f[2]]; dup {
				t.Errorf("family %s typed twice", f[2])
			}
			types[f[2]] = f[3]
		case strings.HasPrefix(line, "#"), line == "":
		default:
			i := strings.LastIndexByte(line, ' ')
			if i < 0 {
				t.Fatalf("bad sample line %q", line)
			}
			v, err := strconv.ParseFloat(line[i+1:], 64)
			if err != nil {
				t.Fatalf("bad value in %q: %v", line, err)
			}
			if _, dup := values[line[:i]]; dup {
				t.Errorf("series %s written twice", line[:i])
			}
			values[line[:i]] = v
		}
	}
	return values, types
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
			return map[string]Tokens{"chat": {Prompt: 120, Completion: 30}, "dream-edit": {Prompt: 5, Completion: 1}}
		},
		DreamBacklog: func() (int, error) { return backlog, backlogErr },
		Channels: func() map[string]Channel {
			return map[string]Channel{
				"slack":   {State: "reconnecting", Reconnects: 2, RateLimitWaits: 4},
				"discord": {State: "connected"},
			}
		},
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
		`dreamgate_turns_total{channel="slack",outcome="ok"}`:                  2,
		`dreamgate_turns_total{channel="discord",outcome="model-error"}`:       1,
		`dreamgate_turn_model_seconds_count`:                                   3,
		`dreamgate_turn_model_seconds_sum`:                                     4.5,
		`dreamgate_turn_model_seconds_bucket{le="1"}`:                          1,
		`dreamgate_turn_model_seconds_bucket{le="2.5"}`:                        2,
		`dreamgate_turn_model_seconds_bucket{le="5"}`:                          3,
		`dreamgate_turn_gateway_seconds_bucket{le="0.005"}`:                    1,
		`dreamgate_turn_gateway_seconds_bucket{le="0.025"}`:                    2,
		`dreamgate_turn_gateway_seconds_bucket{le="+Inf"}`:                     3,
		`dreamgate_commands_total{channel="slack",command="/status"}`:          1,
		`dreamgate_busy_refusals_total{channel="slack"}`:                       2,
		`dreamgate_model_calls_total{purpose="chat",outcome="ok"}`:             1,
		`dreamgate_model_calls_total{purpose="archive",outcome="unavailable"}`: 1,
		`dreamgate_model_tokens_total{purpose="chat",kind="prompt"}`:           120,
		`dreamgate_model_tokens_total{purpose="chat",kind="completion"}`:       30,
		`dreamgate_model_tokens_total{purpose="dream-edit",kind="prompt"}`:     5,
		`dreamgate_model_breaker_open`:                                         1,
		`dreamgate_archive_rounds_total`:                                       3,
		`dreamgate_archive_raw_fallbacks_total`:                                1,
		`dreamgate_dream_runs_total{outcome="completed"}`:                      1,
		`dreamgate_dream_runs_total{outcome="nothing-new"}`:                    1,
		`dreamgate_dream_duration_seconds_count`:                               2,
		`dreamgate_dream_duration_seconds_bucket{le="0.1"}`:                    1,
		`dreamgate_dream_duration_seconds_bucket{le="30"}`:                     1,
		`dreamgate_dream_duration_seconds_bucket{le="60"}`:                     2,
		`dreamgate_dream_backlog_entries`:                                      7,
		`dreamgate_queue_depth`:                                                3,
		`dreamgate_channel_state{channel="slack",state="reconnecting"}`:        1,
		`dreamgate_channel_state{channel="slack",state="connected"}`:           0,
		`dreamgate_channel_state{channel="discord",state="connected"}`:         1,
		`dreamgate_channel_reconnects_total{channel="slack"}`:                  2,
		`dreamgate_channel_rate_limit_waits_total{channel="slack"}`:            4,
		`dreamgate_channel_rate_limit_waits_total{channel="discord"}`:          0,
	})
	for family, typ := range map[string]string{
		"dreamgate_turns_total":                    "counter",
		"dreamgate_turn_model_seconds":             "histogram",
		"dreamgate_model_tokens_total":             "counter",
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
	if got[`go_goroutines`] < 1 || got[`process_resident_memory_bytes`] <= 0 {
		t.Errorf("no go_* and process_* series: goroutines %v, RSS %v", got[`go_goroutines`], got[`process_resident_memory_bytes`])
	}
}

func TestLabelValuesAreEscaped(t *testing.T) {
	if got, want := series("x", "a", `q"b\c`+"\n"), `x{a="q\"b\\c\n"}`; got != want {
		t.Errorf("series = %s, want %s", got, want)
	}
	m := New()
	m.CommandDone(`we"ird`, "/x") // must not panic in the library's name check
	var b strings.Builder
	m.WritePrometheus(&b, Sources{})
	if !strings.Contains(b.String(), `dreamgate_commands_total{channel="we\"ird",command="/x"} 1`) {
		t.Errorf("escaped series missing:\n%s", b.String())
	}
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

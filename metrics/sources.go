package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Sources read state that is kept elsewhere, at scrape time. Any may be
// nil; its metrics are then left out. They are called on the scraping
// goroutine and must be safe for concurrent use.
type Sources struct {
	// QueueDepth is the number of messages waiting behind a running turn.
	QueueDepth func() int
	// Tokens are the tokens used by successful model calls so far, by
	// purpose.
	Tokens func() map[string]Tokens
	// BreakerOpen reports whether model calls are failing fast.
	BreakerOpen func() bool
	// DreamBacklog is the number of history entries Dream has not read.
	DreamBacklog func() (int, error)
	// Channels reports each channel's connection.
	Channels func() map[string]Channel
	// Models reports each named model's calls and tokens by purpose, and
	// Cooling whether each is passed over now since it failed.
	Models  func() []ModelCalls
	Cooling func() map[string]bool
	// InboxDepth is the number of messages accepted by any process of
	// the store and not answered yet (the PostgreSQL engine's inbox).
	InboxDepth func() (int, error)
}

// ModelCalls counts one named model's calls for one purpose: those sent
// to it, those that failed, those after which the next model of the
// purpose's chain was asked, and the tokens of its successful ones.
type ModelCalls struct {
	Model, Purpose                 string
	Calls, Failures, Fallbacks     int
	PromptTokens, CompletionTokens int
}

// Tokens counts the tokens of one purpose. Cached is the part of Prompt
// the provider reported as served from its cache.
type Tokens struct {
	Prompt, Completion, Cached int
}

// Channel is one channel's connection as its health reports it.
type Channel struct {
	// State is one of the channels.State* values ("connected", …).
	State string
	// Reconnects and RateLimitWaits count since the process started.
	Reconnects     int
	RateLimitWaits int
}

// channelStates are the states a channel may report (channels.State*);
// each gets a series of dreamgate_channel_state, 1 for the current one.
var channelStates = [...]string{"connecting", "connected", "reconnecting", "stopped", "failed", "standby"}

// The families read from Sources: their names, help and label names.
var (
	queueDepthDesc  = desc("dreamgate_queue_depth", "Messages waiting behind a running turn.")
	breakerOpenDesc = desc("dreamgate_model_breaker_open", "1 while model calls fail fast.")
	backlogDesc     = desc("dreamgate_dream_backlog_entries", "History entries Dream has not read yet.")
	inboxDepthDesc  = desc("dreamgate_inbox_depth", "Messages accepted by any process of the store and not answered yet.")
	tokensDesc      = desc("dreamgate_model_tokens_total", "Tokens used by successful model calls, by purpose and kind.", "purpose", "kind")
	// Cached tokens are a part of the prompt tokens, so a family of their
	// own: as a kind of dreamgate_model_tokens_total a sum over kinds would
	// count them twice.
	cachedDesc = desc("dreamgate_model_cached_tokens_total",
		"Prompt tokens of successful model calls that the provider served from its prompt cache (a part of kind=prompt), by purpose.", "purpose")
	llmCallsDesc      = desc("dreamgate_llm_calls_total", "Calls sent to each named model, by model and purpose.", "model", "purpose")
	llmFailuresDesc   = desc("dreamgate_llm_failures_total", "Calls each named model failed, by model and purpose.", "model", "purpose")
	llmFallbacksDesc  = desc("dreamgate_llm_fallbacks_total", "Calls a named model failed that went on to the next model of the purpose's chain, by model and purpose.", "model", "purpose")
	llmPromptDesc     = desc("dreamgate_llm_prompt_tokens_total", "Prompt tokens of each named model's successful calls, by model and purpose.", "model", "purpose")
	llmCompletionDesc = desc("dreamgate_llm_completion_tokens_total", "Completion tokens of each named model's successful calls, by model and purpose.", "model", "purpose")
	coolingDesc       = desc("dreamgate_llm_cooling_down", "1 while a named model is passed over since it failed.", "model")
	channelStateDesc  = desc("dreamgate_channel_state", "1 for each channel's current connection state.", "channel", "state")
	reconnectsDesc    = desc("dreamgate_channel_reconnects_total", "Reconnections, by channel.", "channel")
	rateLimitDesc     = desc("dreamgate_channel_rate_limit_waits_total", "Rate limits waited out, by channel.", "channel")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// sourceCollector reads Sources when the registry is gathered. It
// describes nothing ahead (an unchecked collector): what it serves depends
// on the sources.
type sourceCollector struct {
	src     Sources
	backlog *lastValue
}

func (sourceCollector) Describe(chan<- *prometheus.Desc) {}

func (c sourceCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labelAll(labels)...)
	}
	// A counter never goes down, whatever a source says.
	counter := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(max(v, 0)), labelAll(labels)...)
	}
	s := c.src
	if f := s.QueueDepth; f != nil {
		gauge(queueDepthDesc, float64(f()))
	}
	if f := s.BreakerOpen; f != nil {
		gauge(breakerOpenDesc, boolFloat(f()))
	}
	if f := s.DreamBacklog; f != nil {
		// An unreadable history leaves the last value: a scrape is no
		// place to report it, and Dream logs it when it reads.
		if n, err := f(); err == nil {
			c.backlog.set(float64(n))
		}
		if v, ok := c.backlog.get(); ok {
			gauge(backlogDesc, v)
		}
	}
	if f := s.InboxDepth; f != nil {
		if n, err := f(); err == nil {
			gauge(inboxDepthDesc, float64(n))
		}
	}
	if f := s.Tokens; f != nil {
		for purpose, t := range f() {
			counter(tokensDesc, t.Prompt, purpose, "prompt")
			counter(tokensDesc, t.Completion, purpose, "completion")
			counter(cachedDesc, t.Cached, purpose)
		}
	}
	if f := s.Models; f != nil {
		for _, mc := range f() {
			counter(llmCallsDesc, mc.Calls, mc.Model, mc.Purpose)
			counter(llmFailuresDesc, mc.Failures, mc.Model, mc.Purpose)
			counter(llmFallbacksDesc, mc.Fallbacks, mc.Model, mc.Purpose)
			counter(llmPromptDesc, mc.PromptTokens, mc.Model, mc.Purpose)
			counter(llmCompletionDesc, mc.CompletionTokens, mc.Model, mc.Purpose)
		}
	}
	if f := s.Cooling; f != nil {
		for name, cooling := range f() {
			gauge(coolingDesc, boolFloat(cooling), name)
		}
	}
	if f := s.Channels; f != nil {
		for name, ch := range f() {
			for _, st := range channelStates {
				gauge(channelStateDesc, boolFloat(ch.State == st), name, st)
			}
			counter(reconnectsDesc, ch.Reconnects, name)
			counter(rateLimitDesc, ch.RateLimitWaits, name)
		}
	}
}

func labelAll(vs []string) []string {
	for i, v := range vs {
		vs[i] = label(v)
	}
	return vs
}

// lastValue is a gauge's last known value.
type lastValue struct {
	mu sync.Mutex
	v  float64
	ok bool
}

func (l *lastValue) set(v float64) {
	l.mu.Lock()
	l.v, l.ok = v, true
	l.mu.Unlock()
}

func (l *lastValue) get() (float64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.v, l.ok
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/llm"
)

// ModelConfig is one entry of "models": a model by the name the config
// gives it. What it leaves out comes from its provider's preset (endpoint,
// key variable) and from the llm keys (window, reply, temperature,
// timeout).
type ModelConfig struct {
	Provider string `json:"provider"`
	BaseURL  string `json:"baseURL"`
	// APIKeyEnv names the environment variable holding the key; the
	// provider's usual one when empty.
	APIKeyEnv      string   `json:"apiKeyEnv"`
	APIKey         string   `json:"apiKey"`
	Model          string   `json:"model"`
	ContextWindow  int      `json:"contextWindow"`
	MaxTokens      int      `json:"maxTokens"`
	Temperature    *float32 `json:"temperature"`
	TimeoutSeconds int      `json:"timeoutSeconds"`
	// FirstByteSeconds: see LLMConfig; 0 takes llm.firstByteSeconds.
	FirstByteSeconds int   `json:"firstByteSeconds"`
	PromptCacheKey   *bool `json:"promptCacheKey"`
}

// UseConfig names, per purpose, the models that serve it in order of
// preference: the first, then each fallback.
type UseConfig struct {
	Chat    ModelList `json:"chat"`
	Archive ModelList `json:"archive"`
	// Dream sets both of Dream's purposes; DreamAnalysis and DreamEdit
	// set one each.
	Dream         ModelList `json:"dream"`
	DreamAnalysis ModelList `json:"dreamAnalysis"`
	DreamEdit     ModelList `json:"dreamEdit"`
}

func (u UseConfig) empty() bool {
	return len(u.Chat)+len(u.Archive)+len(u.Dream)+len(u.DreamAnalysis)+len(u.DreamEdit) == 0
}

// ModelList is a list of model names; one name may be written without the
// list.
type ModelList []string

// UnmarshalJSON accepts "name" or ["name", …].
func (l *ModelList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil // the default, as for every key
	}
	var one string
	if json.Unmarshal(b, &one) == nil {
		*l = ModelList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		// A type error, which the decoder names by the key's whole path.
		what := "number " + string(b)
		switch {
		case len(b) > 0 && b[0] == '{':
			what = "object"
		case len(b) > 0 && b[0] == '[':
			what = "a list holding something other than names"
		case len(b) > 0 && (b[0] == 't' || b[0] == 'f'):
			what = "bool"
		}
		return &json.UnmarshalTypeError{Value: what, Type: reflect.TypeFor[ModelList]()}
	}
	*l = many
	return nil
}

// llmModelName is the name of the model the llm keys describe, which "use"
// may list like any other.
const llmModelName = "llm"

// purposes are the model purposes in the order status lines show them,
// with the "use" key of each.
var purposes = []struct{ purpose, key string }{
	{llm.PurposeChat, "use.chat"},
	{llm.PurposeArchive, "use.archive"},
	{llm.PurposeDreamAnalysis, "use.dreamAnalysis"},
	{llm.PurposeDreamEdit, "use.dreamEdit"},
}

// severalModels: the config names models or chains; otherwise the llm keys
// are the one model of every purpose, as before models existed.
func (c *Config) severalModels() bool { return len(c.Models) > 0 || !c.Use.empty() }

// modelSpec is one model as the config resolves it.
type modelSpec struct {
	name  string
	field string // "models.hosted", or "llm"
	cfg   llm.Config
	// window and maxTokens are its context window and reply allowance.
	window, maxTokens int
	// keyFrom says where its key came from: an environment variable, a
	// config key, or "" when it has none.
	keyFrom string
	// keyEnv is the variable its key is read from ("" for none).
	keyEnv string
	local  bool
}

// chains returns each purpose's model names, defaults applied: archive and
// Dream take the chat chain, which is the llm keys' model unless use.chat
// says otherwise.
func (c *Config) chains() map[string][]string {
	chat := []string(c.Use.Chat)
	if len(chat) == 0 {
		chat = []string{llmModelName}
	}
	pick := func(lists ...ModelList) []string {
		for _, l := range lists {
			if len(l) > 0 {
				return l
			}
		}
		return chat
	}
	return map[string][]string{
		llm.PurposeChat:          chat,
		llm.PurposeArchive:       pick(c.Use.Archive),
		llm.PurposeDreamAnalysis: pick(c.Use.DreamAnalysis, c.Use.Dream),
		llm.PurposeDreamEdit:     pick(c.Use.DreamEdit, c.Use.Dream),
	}
}

// modelSpecs resolves every model the config names, the llm keys' one
// included, reading keys from the environment by name.
func (c *Config) modelSpecs() map[string]modelSpec {
	getenv := c.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	timeout := time.Duration(c.LLM.TimeoutSeconds) * time.Second
	firstByte := time.Duration(c.LLM.FirstByteSeconds) * time.Second
	out := map[string]modelSpec{
		llmModelName: {
			name: llmModelName, field: "llm",
			cfg: llm.Config{
				BaseURL: c.LLM.BaseURL, APIKey: c.LLM.APIKey, Model: c.LLM.Model,
				MaxTokens: c.LLM.MaxTokens, Temperature: c.LLM.Temperature, Timeout: timeout,
				FirstByte: firstByte, PromptCacheKey: c.LLM.PromptCacheKey, Names: c.llmNames(),
			},
			window: c.LLM.ContextWindow, maxTokens: c.LLM.MaxTokens,
			keyFrom: c.keyFrom("llm.apiKey", c.LLM.APIKey),
		},
	}
	for name, m := range c.Models {
		field := "models." + name
		s := modelSpec{name: name, field: field, window: c.LLM.ContextWindow, maxTokens: c.LLM.MaxTokens}
		preset, _ := llm.LookupPreset(m.Provider)
		s.local = preset.Local
		s.cfg = llm.Config{
			BaseURL: m.BaseURL, Model: m.Model, Temperature: c.LLM.Temperature, Timeout: timeout,
			FirstByte: firstByte, PromptCacheKey: c.LLM.PromptCacheKey,
			Names: llm.Names{BaseURL: field + ".baseURL", Model: field + ".model"},
		}
		if s.cfg.BaseURL == "" {
			s.cfg.BaseURL = preset.BaseURL
			s.cfg.Names.BaseURL = field + ".provider"
		}
		if m.ContextWindow > 0 {
			s.window = m.ContextWindow
		}
		if m.MaxTokens > 0 {
			s.maxTokens = m.MaxTokens
		}
		s.cfg.MaxTokens = s.maxTokens
		if m.Temperature != nil {
			s.cfg.Temperature = *m.Temperature
		}
		if m.TimeoutSeconds > 0 {
			s.cfg.Timeout = time.Duration(m.TimeoutSeconds) * time.Second
		}
		if m.FirstByteSeconds > 0 {
			s.cfg.FirstByte = time.Duration(m.FirstByteSeconds) * time.Second
		}
		if m.PromptCacheKey != nil {
			s.cfg.PromptCacheKey = *m.PromptCacheKey
		}
		keyEnv := m.APIKeyEnv
		if keyEnv == "" {
			keyEnv = preset.KeyEnv
		}
		s.keyEnv = keyEnv
		switch {
		case keyEnv != "" && getenv(keyEnv) != "":
			s.cfg.APIKey, s.keyFrom = getenv(keyEnv), keyEnv
			s.cfg.Names.APIKey = keyEnv
		case m.APIKey != "":
			s.cfg.APIKey, s.keyFrom = m.APIKey, field+".apiKey"
			s.cfg.Names.APIKey = field + ".apiKey"
		case keyEnv != "":
			s.cfg.Names.APIKey = keyEnv // where one can be set
		default:
			s.cfg.Names.APIKey = field + ".apiKeyEnv"
		}
		out[name] = s
	}
	return out
}

// keyFrom says where a key of the llm keys came from.
func (c *Config) keyFrom(field, v string) string {
	switch {
	case v == "":
		return ""
	case c.fromEnv[field] != "":
		return c.fromEnv[field]
	default:
		return field
	}
}

// validateModels checks "models" and "use", after the llm keys.
func (c *Config) validateModels() error {
	bad := func(field, format string, args ...any) error {
		return &configError{field: field, msg: fmt.Sprintf(format, args...)}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range c.Models {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		if err := c.validateModel(name, c.Models[name]); err != nil {
			return err
		}
	}
	used := map[string]bool{}
	lists := []struct {
		key  string
		list ModelList
	}{{"use.chat", c.Use.Chat}, {"use.archive", c.Use.Archive}, {"use.dream", c.Use.Dream},
		{"use.dreamAnalysis", c.Use.DreamAnalysis}, {"use.dreamEdit", c.Use.DreamEdit}}
	for _, l := range lists {
		seen := map[string]bool{}
		for i, name := range l.list {
			field := fmt.Sprintf("%s[%d]", l.key, i)
			if _, ok := c.Models[name]; !ok && name != llmModelName {
				return bad(field, "no model is named %q; models has %s", name, modelNames(names))
			}
			if seen[name] {
				return bad(field, "lists %q twice", name)
			}
			seen[name] = true
			used[name] = true
		}
	}
	if len(c.Use.Chat) == 0 {
		used[llmModelName] = true
	}
	for _, name := range names {
		if !used[name] {
			return bad("models."+name, "no purpose uses it: name it in use.chat, use.archive or use.dream")
		}
	}
	if c.Dream.Model != "" && c.severalModels() {
		return bad("dream.model", "names a model on llm's endpoint; with models and use, name Dream's model in use.dream instead")
	}
	return nil
}

// validateModel checks one entry of "models".
func (c *Config) validateModel(name string, m ModelConfig) error {
	bad := func(field, format string, args ...any) error {
		return &configError{field: field, msg: fmt.Sprintf(format, args...)}
	}
	field := "models." + name
	switch {
	case name == llmModelName:
		return bad(field, "the name %q is the model of the llm keys; give this model another name", llmModelName)
	case !validModelName(name):
		return bad(field, "a model's name must be letters, digits, '-', '_' or '.', got %q", name)
	}
	if m.Provider != "" {
		if _, ok := llm.LookupPreset(m.Provider); !ok {
			return bad(field+".provider", "unknown provider %q; known: %s (or leave it out and set baseURL)", m.Provider, presetNames())
		}
	}
	switch {
	case m.BaseURL == "" && m.Provider == "":
		return bad(field, "needs a provider (%s) or a baseURL", presetNames())
	case m.BaseURL != "":
		if err := checkURL(field+".baseURL", m.BaseURL); err != nil {
			return err
		}
	}
	if strings.TrimSpace(m.Model) == "" {
		return bad(field+".model", "must name the model as its provider does (\"gpt-4o-mini\", \"llama3.2\")")
	}
	if m.APIKeyEnv != "" && !validEnvName(m.APIKeyEnv) {
		return bad(field+".apiKeyEnv", "must be the name of an environment variable (letters, digits and '_'), got %q", m.APIKeyEnv)
	}
	window := c.LLM.ContextWindow
	if m.ContextWindow != 0 {
		if m.ContextWindow < 2048 {
			return bad(field+".contextWindow", "must be at least 2048 tokens, got %d", m.ContextWindow)
		}
		window = m.ContextWindow
	}
	maxTokens := c.LLM.MaxTokens
	if m.MaxTokens != 0 {
		maxTokens = m.MaxTokens
	}
	if maxTokens < 1 || maxTokens > window-2048 {
		return bad(field+".maxTokens", "must be between 1 and contextWindow-2048 (%d), got %d", window-2048, maxTokens)
	}
	if m.Temperature != nil && (*m.Temperature < 0 || *m.Temperature > 2) {
		return bad(field+".temperature", "must be between 0 and 2, got %g", *m.Temperature)
	}
	if m.TimeoutSeconds < 0 {
		return bad(field+".timeoutSeconds", "must be at least 1 (or left out for llm.timeoutSeconds), got %d", m.TimeoutSeconds)
	}
	if m.FirstByteSeconds < 0 {
		return bad(field+".firstByteSeconds", "must be at least 1 (or left out for llm.firstByteSeconds), got %d", m.FirstByteSeconds)
	}
	return nil
}

// validModelName keeps names that read well in logs, status lines and
// metrics labels.
func validModelName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func validEnvName(s string) bool {
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

func presetNames() string {
	var out []string
	for _, p := range llm.Presets() {
		out = append(out, p.Name)
	}
	return strings.Join(out, ", ")
}

func modelNames(names []string) string {
	return strings.Join(append(slices.Clone(names), llmModelName+" (the llm keys)"), ", ")
}

// budget is the window a purpose's prompts must fit: that of the smallest
// model of its chain, so that whichever model serves, the prompt fits.
// maxTokens is set so that window - maxTokens is the smallest room for
// a prompt any model of the chain leaves.
type budget struct{ window, maxTokens int }

func (c *Config) budget(purpose string) budget {
	specs := c.modelSpecs()
	var b budget
	room := 0
	for i, name := range c.chains()[purpose] {
		s := specs[name]
		if i == 0 || s.window < b.window {
			b.window = s.window
		}
		if r := s.window - s.maxTokens; i == 0 || r < room {
			room = r
		}
	}
	b.maxTokens = b.window - room
	return b
}

// newModels builds every purpose's chain of models; a model several
// chains name is one client, with one breaker and one cooldown.
func newModels(cfg Config, logger *slog.Logger) *llm.Router {
	specs := cfg.modelSpecs()
	log := logger.With("component", "llm")
	named := map[string]*llm.Named{}
	model := func(name string) *llm.Named {
		if m, ok := named[name]; ok {
			return m
		}
		c := specs[name].cfg
		// Turns and archive calls (limited by the gateway), and Dream.
		c.Concurrency = cfg.Gateway.MaxConcurrentTurns + 1
		c.Logger = log.With("model", name)
		if !cfg.severalModels() {
			c.Logger = log // one model: its lines as they always were
		}
		m := llm.NewNamed(name, llm.New(c))
		named[name] = m
		return m
	}
	chains := cfg.chains()
	out := make([]*llm.Chain, 0, len(purposes))
	for _, p := range purposes {
		ms := make([]*llm.Named, 0, len(chains[p.purpose]))
		for _, name := range chains[p.purpose] {
			ms = append(ms, model(name))
		}
		out = append(out, llm.NewChain(p.purpose, ms, log))
	}
	return llm.NewRouter(out...)
}

// modelLines gives /status a line per purpose when the config names
// several models; nil keeps the one Model line.
func (a *app) modelLines() func(operator bool) []string {
	if !a.cfg.severalModels() {
		return nil
	}
	return func(operator bool) []string {
		// The real clock: the models' cooldowns are on it.
		now := time.Now()
		var out []string
		for _, c := range a.model.Chains() {
			out = append(out, c.Status().Text(now, operator))
		}
		return out
	}
}

// modelsStatus writes `dreamgate status`'s lines for several models: each
// model with where its key came from and whether its endpoint answers,
// then each purpose's chain and, when the gateway runs, which model
// answered last. It reports whether a purpose has no model that can be
// used. live says r is the running gateway's own (status asked through
// its admin socket).
func modelsStatus(ctx context.Context, w io.Writer, cfg Config, r *llm.Router, live bool) (unusable bool) {
	specs := cfg.modelSpecs()
	models := r.Models()
	errs := make([]error, len(models))
	var wg sync.WaitGroup
	for i, m := range models {
		wg.Go(func() { errs[i] = m.Client().Ping(ctx) })
	}
	wg.Wait()
	usable := map[string]bool{}
	fmt.Fprintln(w, "Models:")
	for i, m := range models {
		s := specs[m.Name()]
		key := "no key"
		switch {
		case s.keyFrom != "":
			key = "key from " + s.keyFrom
		case s.keyEnv != "" && !s.local:
			key = "no key (" + s.keyEnv + " is not set)"
		}
		state := "reachable"
		if errs[i] != nil {
			state = llm.UserMessage(errs[i])
		}
		usable[m.Name()] = !modelUnusable(errs[i])
		fmt.Fprintf(w, "  %s: %s at %s (window %s), %s — %s\n", m.Name(), s.cfg.Model, llm.RedactURL(s.cfg.BaseURL), kTokens(s.window), key, state)
	}
	// The running gateway's own chains say which model answered last
	// themselves; from another process, its /healthz says it.
	served, running := map[string]chainHealth(nil), live
	if !live {
		served, running = gatewayChains(ctx, cfg)
	}
	if running {
		fmt.Fprintln(w, "Models by purpose (which answered last: as the running gateway says):")
	} else {
		fmt.Fprintln(w, "Models by purpose (which answered last is known while the gateway runs, with gateway.healthAddr set):")
	}
	for _, c := range r.Chains() {
		st := c.Status()
		any := false
		for _, m := range st.Models {
			any = any || usable[m.Name]
		}
		unusable = unusable || !any
		line := "  " + st.Text(time.Now(), true)
		if h, ok := served[st.Purpose]; ok && h.Served != "" {
			line += "; " + h.Served + " answered last"
		}
		for _, cm := range served[st.Purpose].Cooling {
			line += fmt.Sprintf("; %s failed (%s), tried again at %s", cm.Model, cm.Reason, cm.Until.Local().Format("15:04:05"))
		}
		if b := cfg.budget(st.Purpose); len(st.Models) > 1 && (st.Purpose == llm.PurposeChat || st.Purpose == llm.PurposeArchive) {
			line += fmt.Sprintf(" (prompts fit a %s window)", kTokens(b.window))
		}
		if !any {
			line += " — no model of it can be used"
		}
		fmt.Fprintln(w, line)
	}
	return unusable
}

// gatewayChains asks a running gateway (GET /healthz on
// gateway.healthAddr) for its chains; running is false when none answers.
func gatewayChains(ctx context.Context, cfg Config) (map[string]chainHealth, bool) {
	addr := cfg.Gateway.HealthAddr
	if addr == "" {
		return nil, false
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, false
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return nil, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var body healthReport
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil || len(body.Chains) == 0 {
		return nil, false
	}
	out := map[string]chainHealth{}
	for _, c := range body.Chains {
		out[c.Purpose] = c
	}
	return out, true
}

// kTokens writes a token count as people say it: 8K, 128K, 1.5K.
func kTokens(n int) string {
	switch {
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dK", n/1000)
	case n >= 1000:
		return fmt.Sprintf("%.1fK", float64(n)/1000)
	}
	return fmt.Sprint(n)
}

// modelsLine names each purpose's models, for the eval's first line,
// the banner and the log.
func modelsLine(cfg Config) string {
	chains := cfg.chains()
	parts := make([]string, 0, len(purposes))
	for _, p := range purposes {
		parts = append(parts, p.purpose+" "+strings.Join(chains[p.purpose], " → "))
	}
	return strings.Join(parts, ", ")
}

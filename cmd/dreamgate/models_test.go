package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// issueShape is the config shape operators and outside checks write
// (issue 24), with a test model for each name.
const issueShape = `{ "models": { "hosted": { "provider": "openrouter", "model": "anthropic/claude-sonnet-4" },
              "backup": { "baseURL": "https://api.openai.com/v1", "apiKeyEnv": "OPENAI_API_KEY",
                          "model": "gpt-4o-mini", "contextWindow": 128000 },
              "local":  { "baseURL": "http://127.0.0.1:11434/v1", "model": "llama3.2" } },
  "use": { "chat": ["hosted", "backup", "local"], "archive": ["local", "backup"],
           "dream": ["backup", "local"] } }`

// The issue's shape is read as written: each purpose's chain, each model's
// endpoint and key (by the variable's name), the llm keys' defaults for
// what a model leaves out.
func TestModelsConfigOfTheIssuesShape(t *testing.T) {
	cfg, _, err := loadConfigText(t, issueShape, map[string]string{
		"OPENROUTER_API_KEY": "sk-or-test", "OPENAI_API_KEY": "sk-oa-test",
	})
	if err != nil {
		t.Fatal(err)
	}
	chains := cfg.chains()
	want := map[string]string{
		llm.PurposeChat: "hosted backup local", llm.PurposeArchive: "local backup",
		llm.PurposeDreamAnalysis: "backup local", llm.PurposeDreamEdit: "backup local",
	}
	for p, w := range want {
		if got := strings.Join(chains[p], " "); got != w {
			t.Errorf("%s: %q, want %q", p, got, w)
		}
	}
	specs := cfg.modelSpecs()
	h := specs["hosted"]
	if h.cfg.BaseURL != "https://openrouter.ai/api/v1" || h.cfg.APIKey != "sk-or-test" || h.keyFrom != "OPENROUTER_API_KEY" || h.cfg.Model != "anthropic/claude-sonnet-4" {
		t.Errorf("hosted: %+v", h)
	}
	if h.window != 128000 || h.maxTokens != 4096 || h.cfg.Temperature != 0.2 {
		t.Errorf("hosted does not take the llm keys' defaults: window %d, maxTokens %d, temperature %g", h.window, h.maxTokens, h.cfg.Temperature)
	}
	if b := specs["backup"]; b.cfg.APIKey != "sk-oa-test" || b.keyFrom != "OPENAI_API_KEY" {
		t.Errorf("backup: key from %q", b.keyFrom)
	}
	if l := specs["local"]; l.cfg.APIKey != "" || l.keyFrom != "" || l.cfg.Names.APIKey != "models.local.apiKeyEnv" {
		t.Errorf("local: %+v", l)
	}
	if !cfg.severalModels() {
		t.Error("not read as several models")
	}
}

// Without models the llm keys (and their variables) are the one model of
// every purpose, as before.
func TestOnlyTheLLMKeysMeanOneModel(t *testing.T) {
	cfg, _, err := loadConfigText(t, `{"llm": {"baseURL": "http://127.0.0.1:1/v1", "model": "m1", "contextWindow": 32000}}`,
		map[string]string{"OPENAI_API_KEY": "sk-x", "DREAMGATE_MODEL": "m2"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.severalModels() {
		t.Error("llm keys alone read as several models")
	}
	for _, p := range purposes {
		if got := cfg.chains()[p.purpose]; len(got) != 1 || got[0] != llmModelName {
			t.Errorf("%s: %v", p.purpose, got)
		}
	}
	s := cfg.modelSpecs()[llmModelName]
	if s.cfg.Model != "m2" || s.cfg.APIKey != "sk-x" || s.keyFrom != "OPENAI_API_KEY" || s.cfg.Names.Model != "DREAMGATE_MODEL" {
		t.Errorf("llm model %+v", s)
	}
	if b := cfg.budget(llm.PurposeChat); b.window != 32000 || b.maxTokens != 4096 {
		t.Errorf("budget %+v", b)
	}
	r := newModels(cfg, slog.New(slog.DiscardHandler))
	if len(r.Models()) != 1 {
		t.Errorf("%d clients, want one for every purpose", len(r.Models()))
	}
}

// A purpose's prompts fit the smallest window of its chain: the window is
// the smallest, and window - maxTokens the least room any model leaves.
func TestBudgetIsTheSmallestWindowOfTheChain(t *testing.T) {
	cfg, _, err := loadConfigText(t, `{
		"llm": {"contextWindow": 128000, "maxTokens": 4096},
		"models": {"big": {"provider": "openai", "model": "a", "contextWindow": 200000, "maxTokens": 100000},
		           "small": {"provider": "ollama", "model": "b", "contextWindow": 16384, "maxTokens": 2048}},
		"use": {"chat": ["big", "small"], "archive": "big"}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	chat := cfg.budget(llm.PurposeChat)
	if chat.window != 16384 || chat.window-chat.maxTokens != 14336 {
		t.Errorf("chat budget %+v, want the small model's window and room", chat)
	}
	archive := cfg.budget(llm.PurposeArchive)
	if archive.window != 200000 || archive.window-archive.maxTokens != 100000 {
		t.Errorf("archive budget %+v, want the big model's", archive)
	}
	// The big model's own room (100K) is less than its window's share
	// would suggest: a chain of it and one with more room keeps 100K.
	cfg.Use.Chat = ModelList{"small", "big"}
	if b := cfg.budget(llm.PurposeChat); b.window != 16384 || b.window-b.maxTokens != 14336 {
		t.Errorf("order changed the budget: %+v", b)
	}
}

// Mistakes in models and use are named by their whole path.
func TestModelsConfigMistakesNameTheField(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"unknown provider", `{"models": {"a": {"provider": "openrouterx", "model": "m"}}, "use": {"chat": "a"}}`,
			`models.a.provider: unknown provider "openrouterx"; known: openai, openrouter`},
		{"no endpoint", `{"models": {"a": {"model": "m"}}, "use": {"chat": "a"}}`,
			"models.a: needs a provider (openai, "},
		{"bad URL", `{"models": {"a": {"baseURL": "ftp://x", "model": "m"}}, "use": {"chat": "a"}}`,
			"models.a.baseURL: must be an http:// or https:// URL"},
		{"no model id", `{"models": {"a": {"provider": "ollama"}}, "use": {"chat": "a"}}`,
			"models.a.model: must name the model"},
		{"small window", `{"models": {"a": {"provider": "ollama", "model": "m", "contextWindow": 1000}}, "use": {"chat": "a"}}`,
			"models.a.contextWindow: must be at least 2048 tokens, got 1000"},
		{"reply larger than window", `{"models": {"a": {"provider": "ollama", "model": "m", "contextWindow": 4096}}, "use": {"chat": "a"}}`,
			"models.a.maxTokens: must be between 1 and contextWindow-2048 (2048), got 4096"},
		{"temperature", `{"models": {"a": {"provider": "ollama", "model": "m", "temperature": 3}}, "use": {"chat": "a"}}`,
			"models.a.temperature: must be between 0 and 2, got 3"},
		{"env name", `{"models": {"a": {"provider": "openai", "model": "m", "apiKeyEnv": "sk-live-123"}}, "use": {"chat": "a"}}`,
			"models.a.apiKeyEnv: must be the name of an environment variable"},
		{"reserved name", `{"models": {"llm": {"provider": "ollama", "model": "m"}}}`,
			`models.llm: the name "llm" is the model of the llm keys`},
		{"unknown in use", `{"models": {"a": {"provider": "ollama", "model": "m"}}, "use": {"chat": ["a", "b"]}}`,
			`use.chat[1]: no model is named "b"; models has a, llm (the llm keys)`},
		{"twice in use", `{"models": {"a": {"provider": "ollama", "model": "m"}}, "use": {"chat": ["a", "a"]}}`,
			`use.chat[1]: lists "a" twice`},
		{"unused", `{"models": {"a": {"provider": "ollama", "model": "m"}, "b": {"provider": "ollama", "model": "n"}}, "use": {"chat": "a"}}`,
			"models.b: no purpose uses it"},
		{"use of the wrong type", `{"use": {"archive": 3}}`,
			"use.archive: must be a list, not 3"},
		{"dream.model with models", `{"models": {"a": {"provider": "ollama", "model": "m"}}, "use": {"chat": "a"}, "dream": {"model": "x"}}`,
			"dream.model: names a model on llm's endpoint; with models and use, name Dream's model in use.dream instead"},
		{"misspelt field", `{"models": {"a": {"provider": "ollama", "model": "m", "apiKeyEnvv": "X"}}, "use": {"chat": "a"}}`,
			"models.a.apiKeyEnvv: unknown key; did you mean models.a.apiKeyEnv?"},
		{"misspelt purpose", `{"use": {"archiv": ["llm"]}}`,
			"use.archiv: unknown key; did you mean use.archive?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, path, err := loadConfigText(t, tt.body, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("err = %v, want %q and the file", err, tt.want)
			}
		})
	}
}

// A key is never needed in the file, and one there is never shown.
func TestModelKeysComeFromTheEnvironmentByName(t *testing.T) {
	body := `{"models": {"a": {"provider": "groq", "model": "m"},
	                     "b": {"baseURL": "https://x.example/v1", "apiKeyEnv": "MY_KEY", "apiKey": "sk-file", "model": "n"}},
	          "use": {"chat": ["a", "b"]}}`
	cfg, _, err := loadConfigText(t, body, map[string]string{"GROQ_API_KEY": "gsk-1"})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.modelSpecs()
	if s["a"].cfg.APIKey != "gsk-1" || s["a"].keyFrom != "GROQ_API_KEY" {
		t.Errorf("a: %+v", s["a"])
	}
	if s["b"].cfg.APIKey != "sk-file" || s["b"].keyFrom != "models.b.apiKey" {
		t.Errorf("b without MY_KEY: %+v", s["b"])
	}
	cfg, _, _ = loadConfigText(t, body, map[string]string{"MY_KEY": "sk-env"})
	s = cfg.modelSpecs()
	if s["b"].cfg.APIKey != "sk-env" || s["b"].keyFrom != "MY_KEY" {
		t.Errorf("b with MY_KEY: %+v", s["b"])
	}
	if s["a"].cfg.APIKey != "" || s["a"].cfg.Names.APIKey != "GROQ_API_KEY" {
		t.Errorf("a without its key: %+v", s["a"])
	}
}

// evalModels puts one model on each purpose a flag names, alone, and
// leaves the others as the config has them.
func TestEvalModelFlags(t *testing.T) {
	cfg, _, err := loadConfigText(t, issueShape, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := evalModels(&cfg, "", "hosted", ""); err != nil {
		t.Fatal(err)
	}
	chains := cfg.chains()
	if got := strings.Join(chains[llm.PurposeArchive], " "); got != "hosted" {
		t.Errorf("archive %q", got)
	}
	if got := strings.Join(chains[llm.PurposeChat], " "); got != "hosted backup local" {
		t.Errorf("chat changed: %q", got)
	}
	if got := strings.Join(chains[llm.PurposeDreamEdit], " "); got != "backup local" {
		t.Errorf("dream-edit changed: %q", got)
	}
	if got := modelsLine(cfg); got != "chat hosted → backup → local, archive hosted, dream-analysis backup → local, dream-edit backup → local" {
		t.Errorf("line %q", got)
	}
	// Chat changes alone: archive and Dream keep the chat chain they had.
	one, _, _ := loadConfigText(t, `{"models": {"a": {"provider": "ollama", "model": "m"}, "b": {"provider": "ollama", "model": "n"}}, "use": {"chat": ["a", "b"]}}`, nil)
	if err := evalModels(&one, "b", "", ""); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(one.chains()[llm.PurposeArchive], " "); got != "a b" {
		t.Errorf("archive followed the flag for chat: %q", got)
	}
	if err := evalModels(&cfg, "", "nope", ""); err == nil || !strings.Contains(err.Error(), `--archive-model: no model is named "nope"`) {
		t.Errorf("unknown name: %v", err)
	}
}

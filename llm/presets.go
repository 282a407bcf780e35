package llm

import (
	"slices"
	"strings"
)

// Preset is what a well-known OpenAI-compatible provider's name stands
// for: its endpoint and the environment variable its key is usually in
// (named only: this package never reads the environment).
type Preset struct {
	// Name is how a config names the provider ("openrouter").
	Name string
	// BaseURL is the chat-completions endpoint with its version path.
	BaseURL string
	// KeyEnv is the environment variable its key is usually kept in; ""
	// for a local server that takes none.
	KeyEnv string
	// Local: a server on this machine (no key, no bill).
	Local bool
}

// presets are the providers a config may name. The local servers listen
// on their own default ports.
var presets = []Preset{
	{Name: "openai", BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY"},
	{Name: "openrouter", BaseURL: "https://openrouter.ai/api/v1", KeyEnv: "OPENROUTER_API_KEY"},
	// Anthropic's and Google's OpenAI-compatible endpoints.
	{Name: "anthropic", BaseURL: "https://api.anthropic.com/v1", KeyEnv: "ANTHROPIC_API_KEY"},
	{Name: "gemini", BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai", KeyEnv: "GEMINI_API_KEY"},
	{Name: "groq", BaseURL: "https://api.groq.com/openai/v1", KeyEnv: "GROQ_API_KEY"},
	{Name: "deepseek", BaseURL: "https://api.deepseek.com/v1", KeyEnv: "DEEPSEEK_API_KEY"},
	{Name: "mistral", BaseURL: "https://api.mistral.ai/v1", KeyEnv: "MISTRAL_API_KEY"},
	{Name: "ollama", BaseURL: DefaultBaseURL, Local: true},
	// vLLM takes a key only when started with one (--api-key or this
	// variable); an unset variable sends none.
	{Name: "vllm", BaseURL: "http://127.0.0.1:8000/v1", KeyEnv: "VLLM_API_KEY", Local: true},
	{Name: "lmstudio", BaseURL: "http://127.0.0.1:1234/v1", Local: true},
	{Name: "llamacpp", BaseURL: "http://127.0.0.1:8080/v1", Local: true},
}

// LookupPreset returns the preset of a provider name, in any case.
func LookupPreset(name string) (Preset, bool) {
	i := slices.IndexFunc(presets, func(p Preset) bool { return strings.EqualFold(p.Name, name) })
	if i < 0 {
		return Preset{}, false
	}
	return presets[i], true
}

// Presets lists every preset, in a fixed order.
func Presets() []Preset { return slices.Clone(presets) }

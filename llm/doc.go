// Package llm is the one client for OpenAI-compatible chat-completions
// endpoints (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server, …), built on
// go-openai. It owns retries with backoff (honouring Retry-After), timeouts
// (and, for a streamed call a chain can pass on, the wait for its first
// byte), each model's one record of failures (its cooldown and circuit
// breaker) and per-purpose token usage, and it turns every failure into an
// *Error whose Kind is one of the sentinels in errors.go.
//
// What it sends is what providers accept, not only what go-openai would
// encode: every message carries "content" (an empty string when empty;
// go-openai omits it, and OpenAI and Ollama refuse a user or tool message
// without one), Message.Time is never sent, a tool call without arguments
// goes back as "{}", a tool without parameters gets an empty object schema,
// and a temperature of 0 is really sent. Tool calls a provider returns
// without an id get a generated "call_…" id, so every result can name its
// call. For reasoning models (o1/o3/o4, gpt-5) the token limit goes as
// max_completion_tokens and the temperature is left out. A conversation's
// calls carry OpenAI's prompt_cache_key, a hash of Request.CacheKey, where
// the endpoint is api.openai.com or Config.PromptCacheKey says so; the
// cached prompt tokens a provider reports are counted in Usage.
//
// No error or log line it writes holds the API key, a key-shaped token or
// the user info or query of a URL; RedactURL, RedactURLs and RedactError
// are that one redaction for the layers above (config errors, status, MCP
// servers' logs).
//
// Several models: a Named is a Client under the name the config gives it;
// a Chain is the models that serve one purpose (chat, archive, Dream's
// analysis, Dream's edits) in order of preference, passing a call to the
// next model when one cannot serve — without waiting through the failing
// model's retries — and passing the failed one over, by its record, until a
// later call finds it serving again; a Router sends each call to the chain
// of its Request.Purpose. Chain and Router have the Client's Chat, so the
// layers above take either as their model. Presets name the well-known
// providers' endpoints and key variables.
//
// go-openai's types never leave this package. It imports no other package of
// ours; llm/llmtest is its fake server for tests.
package llm

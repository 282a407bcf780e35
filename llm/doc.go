// Package llm is the one client for OpenAI-compatible chat-completions
// endpoints (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server, …), built on
// go-openai. It owns retries with backoff (honouring Retry-After), the circuit
// breaker, timeouts and per-purpose token usage, and it turns every failure
// into an *Error whose Kind is one of the sentinels in errors.go.
//
// go-openai's types never leave this package. It imports no other package of
// ours; llm/llmtest is its fake server for tests.
package llm

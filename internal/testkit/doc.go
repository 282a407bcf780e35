// Package testkit holds the test helpers that tests in several packages
// need: a slog handler that records what was logged, a buffer that
// goroutines may write to while a test reads it, and file helpers that fail
// the test instead of returning errors.
//
// It is a leaf: it imports nothing of ours, so the tests of any layer may
// use it. Helpers that need our types live beside those types instead
// (the in-process scripted model is llm/llmtest.Model).
package testkit

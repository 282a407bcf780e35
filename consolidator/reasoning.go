package consolidator

import "github.com/dreamgate/dreamgate/internal/reasoning"

// StripReasoning removes reasoning a model leaked into its text
// (<think>…</think>, gpt-oss harmony channels) and returns what is meant
// for the reader, trimmed: reasoning never reaches the archive nor a user.
func StripReasoning(s string) string { return reasoning.Strip(s) }

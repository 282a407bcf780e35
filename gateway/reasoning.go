package gateway

import (
	"strings"

	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/llm"
)

// withoutReasoning returns the turn's final assistant message(s) without
// the reasoning a model leaked into its text (<think> blocks, gpt-oss
// analysis channels). Users must not read the model talking to itself, and
// replaying it in later prompts only feeds it back. A message that would be
// left empty keeps its text: the archive strips it anyway, and an empty
// assistant message is refused by some providers.
func withoutReasoning(final []llm.Message) []llm.Message {
	out := make([]llm.Message, len(final))
	for i, m := range final {
		if m.Role == llm.RoleAssistant {
			// Only text that held reasoning changes: the rest is kept as
			// the model wrote it, space and all.
			if s := consolidator.StripReasoning(m.Content); s != "" && s != strings.TrimSpace(m.Content) {
				m.Content = s
			}
		}
		out[i] = m
	}
	return out
}

// Package reasoning removes the reasoning some models leak into the text of
// their answers, so it reaches neither the archive nor a user. A leaf: it
// imports nothing of dreamgate's; the consolidator (archive and replies)
// and channels (text shown while it streams) both use it.
package reasoning

import "strings"

// Reasoning some models leak into the text of their answers, in the two
// shapes met in practice:
//
//   - <think>…</think> (DeepSeek-R1, Qwen3 and their distillations). When the
//     chat template already opened the block, the answer starts inside it
//     and only the closing tag shows; a cut-off answer may leave it open.
//   - gpt-oss's "harmony" channels, when a server passes its special tokens
//     through: <|channel|>analysis<|message|>…<|end|>, then
//     <|start|>assistant<|channel|>final<|message|>answer<|return|>. Only
//     the final channel is the answer; analysis and commentary (tool-call
//     preambles) are not.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"

	harmonyChannel = "<|channel|>"
	harmonyMessage = "<|message|>"
)

// harmonyEnds end a harmony message's text.
var harmonyEnds = []string{"<|end|>", "<|return|>", "<|call|>", "<|start|>", harmonyChannel}

// harmonyTokens are removed wherever they are left after the channels are
// taken apart.
var harmonyTokens = []string{"<|start|>assistant", "<|start|>", "<|end|>", "<|return|>", "<|call|>", "<|message|>"}

// Strip removes leaked reasoning from a model's text and returns
// what is meant for the reader, trimmed of surrounding space. Nothing is
// kept of a reasoning block that was never closed. Text without any of the
// markers comes back only trimmed. Reasoning must never reach the archive
// (it is the model talking to itself, not evidence) nor a user.
func Strip(s string) string {
	if strings.Contains(s, harmonyChannel) {
		s = harmonyFinal(s)
	}
	return strings.TrimSpace(StripThink(s))
}

// StripThink drops <think> blocks, an unclosed <think> with all after it,
// and, when a closing tag is left without its opening, all before it.
func StripThink(s string) string {
	for {
		i := strings.Index(s, thinkOpen)
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], thinkClose)
		if j < 0 {
			s = s[:i]
			break
		}
		s = s[:i] + s[i+j+len(thinkClose):]
	}
	// A stray closing tag means the template opened the block before the
	// answer began: everything before it is reasoning.
	if j := strings.LastIndex(s, thinkClose); j >= 0 {
		s = s[j+len(thinkClose):]
	}
	return s
}

// harmonyFinal keeps the text of the final channel(s) of a harmony-format
// answer. Without a final channel, the text outside every channel is kept
// (none, usually: an answer that never reached its final channel has
// nothing for the reader).
func harmonyFinal(s string) string {
	parts := strings.Split(s, harmonyChannel)
	outside := []string{parts[0]}
	var final []string
	for _, p := range parts[1:] {
		header, body, ok := strings.Cut(p, harmonyMessage)
		if !ok {
			// A channel name with no message: nothing to keep.
			continue
		}
		end := len(body)
		for _, e := range harmonyEnds {
			if k := strings.Index(body, e); k >= 0 && k < end {
				end = k
			}
		}
		rest := body[end:]
		body = body[:end]
		if name := strings.TrimSpace(header); name == "final" || strings.HasPrefix(name, "final ") || strings.HasPrefix(name, "final<") {
			final = append(final, body)
		}
		outside = append(outside, rest)
	}
	if len(final) > 0 {
		return strings.Join(final, "\n")
	}
	out := strings.Join(outside, "")
	for _, t := range harmonyTokens {
		out = strings.ReplaceAll(out, t, "")
	}
	return out
}

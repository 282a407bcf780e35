package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/gateway/dreamtext"
	"github.com/dreamgate/dreamgate/llm"
)

func cmdStatus() *command {
	return &command{
		name:     "/status",
		help:     "model, conversation size, tokens used, last and next Dream",
		priority: true,
		run: func(_ context.Context, g *Gateway, req cmdRequest) string {
			var b strings.Builder
			if g.deps.Models != nil {
				b.WriteString("Models, by purpose:\n")
				for _, line := range g.deps.Models(req.in.Local) {
					b.WriteString("  " + line + "\n")
				}
			} else {
				fmt.Fprintf(&b, "Model: %s%s\n", g.cfg.ModelName, g.modelNote(req.in))
			}
			sess, err := g.deps.Sessions.Get(req.in.SessionKey)
			if err != nil {
				fmt.Fprintf(&b, "Conversation: unavailable (%s)\n", "see the gateway log")
				g.logger.Error("/status: session", "session", req.in.SessionKey, "err", err)
			} else {
				n, lc := sess.Len(), sess.LastConsolidated()
				var bu consolidator.Budget
				inPrompt := n - lc
				tools, notCounted := g.statusToolText(req.in)
				if g.deps.Consolidator != nil {
					p := consolidator.Prompt{Fixed: g.deps.Prompts.Fixed(g.memoryView(req.in)), Tools: tools}
					bu = g.deps.Consolidator.Status(sess, p)
					// The prompt also keeps the last archived messages in view.
					inPrompt = max(inPrompt, bu.Messages)
				}
				noun := "messages"
				if n == 1 {
					noun = "message"
				}
				fmt.Fprintf(&b, "Conversation: %d %s, %d archived, %d in the prompt\n", n, noun, lc, inPrompt)
				// A zero Limit: the budget is off (no context window).
				if bu.Limit > 0 {
					fmt.Fprintf(&b, "Prompt: about %s tokens of %s usable (%d%%)%s\n",
						kTokens(bu.Estimate), kTokens(bu.Limit), bu.Estimate*100/max(bu.Limit, 1), notCountedNote(notCounted))
				}
			}
			switch {
			case !req.in.Local:
				// Every audience's calls and Dream's make the totals: a
				// conversation reads its own.
				b.WriteString(usageLineFor("Tokens used in this conversation", g.usage.of(req.in.SessionKey)))
			case g.deps.Usage != nil:
				b.WriteString(usageLine(g.deps.Usage()))
			}
			if g.deps.Dream != nil {
				st := g.deps.Dream.Status(g.dreamScopes(req.in))
				if !req.in.Local {
					st = st.Public() // the operator's detail stays in the log
				}
				b.WriteString(dreamtext.Status(st, g.now()) + "\n")
			} else if g.deps.DreamOff != "" {
				b.WriteString(g.deps.DreamOff + "\n")
			} else {
				b.WriteString("Dream: off\n")
			}
			if g.deps.TurnTools != nil {
				b.WriteString(g.deps.TurnTools.StatusText(g.toolTurn(req.in)))
			}
			fmt.Fprintf(&b, "Up: %s", time.Since(g.started).Round(time.Second))
			return b.String()
		},
	}
}

// modelNote is what /status adds to the model's name when the model's
// last call could not reach it (Deps.ModelState): chat turns fail until it
// answers again. The operator at the terminal reads when; a person in
// Slack or Discord reads that the operator knows (the cause is in the log).
func (g *Gateway) modelNote(in channels.Inbound) string {
	if g.deps.ModelState == nil {
		return ""
	}
	st := g.deps.ModelState()
	if !st.Known || st.Reachable {
		return ""
	}
	if !in.Local {
		return " — not answering right now; the operator has been told."
	}
	ago := ""
	if !st.LastErrorAt.IsZero() {
		ago = fmt.Sprintf(" %s ago", max(g.now().Sub(st.LastErrorAt), 0).Round(time.Second))
	}
	return " — unreachable: its last call failed" + ago + "; chat turns fail until it answers again (the cause is in the gateway log)."
}

// notCountedNote says which per-turn tools the prompt's count leaves out.
func notCountedNote(n int) string {
	switch {
	case n < 0:
		return ", not counting MCP tools"
	case n == 1:
		return ", not counting the tools of 1 MCP server that is not running"
	case n > 1:
		return fmt.Sprintf(", not counting the tools of %d MCP servers that are not running", n)
	}
	return ""
}

func kTokens(n int) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.1fk", float64(n)/1000)
}

// usageLine is the operator's line of the gateway's tokens.
func usageLine(u map[string]llm.Usage) string { return usageLineFor("Tokens used", u) }

// usageLineFor says what u, by purpose, used, under label.
func usageLineFor(label string, u map[string]llm.Usage) string {
	if len(u) == 0 {
		return label + ": none yet\n"
	}
	purposes := make([]string, 0, len(u))
	var total llm.Usage
	for p, v := range u {
		purposes = append(purposes, p)
		total = total.Add(v)
	}
	slices.Sort(purposes)
	parts := make([]string, 0, len(purposes))
	for _, p := range purposes {
		parts = append(parts, fmt.Sprintf("%s %s", p, kTokens(u[p].PromptTokens+u[p].CompletionTokens)))
	}
	// Cached input is shown only when the provider reported some: most
	// local servers report none, which is not the same as none cached.
	cached := ""
	if total.CachedTokens > 0 {
		cached = fmt.Sprintf(" (%s from the provider's cache)", kTokens(total.CachedTokens))
	}
	return fmt.Sprintf("%s: %s in%s, %s out in %d calls (%s)\n", label,
		kTokens(total.PromptTokens), cached, kTokens(total.CompletionTokens), total.Calls, strings.Join(parts, ", "))
}

package gateway

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/recall"
)

// whyLimit bounds the lines /why shows: a chat reply, not a report.
const whyLimit = 8

func cmdWhy() *command {
	return &command{
		name: "/why",
		args: "<words>",
		help: "where a remembered fact came from: the memory lines holding those words, with their priority, date and source conversations",
		run: func(ctx context.Context, g *Gateway, req cmdRequest) string {
			if len(whyWords(req.args)) == 0 {
				return "Which fact? Try " + g.commandUsage(req.in, "/why") + " dark mode."
			}
			a := req.in.Audience
			readable := g.readable(a)
			ms, total, err := FindWhy(g.mem, readable, req.args, whyLimit, g.deps.Provenance)
			if err != nil {
				g.logger.Error("/why failed", "session", req.in.SessionKey, "err", err)
				if len(ms) == 0 {
					return "I could not read memory to answer; the error is in the gateway log."
				}
			}
			text := WhyText(req.args, ms, total, func(m WhyMatch) string {
				return whyFileName(m) + ", " + g.mem.Label(m.Scope, a)
			})
			if total == 0 && err == nil && g.deps.Recall != nil {
				said, err := WhySaid(ctx, g.deps.Recall, req.args, readable)
				if err != nil {
					g.logger.Warn("/why: the recall search failed", "err", err)
				}
				text += said
			}
			return text
		},
	}
}

// whySaidLimit bounds what /why shows of past conversations.
const whySaidLimit = 3

// WhySaid is what /why (and `dreamgate why`) adds when no memory line
// holds the words: where they were said before, by the recall index s,
// within the readable scopes; "" without a match.
func WhySaid(ctx context.Context, s recall.Searcher, query string, readable []audience.Scope) (string, error) {
	res, err := s.Search(ctx, query, readable, whySaidLimit)
	if err != nil || len(res.Matches) == 0 {
		return "", err
	}
	var b strings.Builder
	b.WriteString(" What was said before holds it, though (the recall search of past conversations and cold memory):")
	for _, m := range res.Matches {
		when := "undated"
		if !m.Time.IsZero() {
			when = m.Time.In(time.Local).Format("2006-01-02 15:04")
		}
		b.WriteString("\n- " + when + ", ")
		switch m.Kind {
		case recall.KindMessage:
			b.WriteString(m.Who + " in " + m.Conversation)
		case recall.KindHistory:
			b.WriteString("archived from " + cmp.Or(m.Conversation, "a conversation of unknown name"))
		case recall.KindCold:
			b.WriteString("cold memory")
		}
		b.WriteString(": " + m.Text)
	}
	return b.String(), nil
}

package gateway

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
)

// turn answers one chat message: save it, keep the prompt within budget,
// run the agent loop, save and send the reply, and archive again if needed.
// The consolidator is asked twice, before and after; the system prompt is
// the fixed prefix built here, the consolidator's part, then the runtime
// tail, so that its prefix stays stable for prompt caches.
func (g *Gateway) turn(ctx context.Context, in channels.Inbound) Result {
	log := g.logger.With("session", in.SessionKey)
	sess, err := g.deps.Sessions.Get(in.SessionKey)
	if err != nil {
		if msg, ok := sessionLocked(err); ok {
			log.Warn("conversation held by another process; turn refused", "err", err)
			return g.fail(in, err, msg)
		}
		log.Error("cannot open session", "err", err)
		return g.fail(in, err, "I could not open this conversation's record, so I did not answer; the error is in the gateway log.")
	}
	if g.redelivered(sess, in) {
		return Result{}
	}
	g.addContext(sess, in) // a new session's earlier messages, once
	if err := g.recordUser(sess, in); err != nil {
		log.Error("cannot save message", "err", err)
		return g.fail(in, err, "I could not save your message, so I did not answer; the error is in the gateway log.")
	}

	tools, toolsText := g.toolsFor(ctx, in)
	prompt := consolidator.Prompt{Fixed: g.deps.Prompts.Fixed(), Tools: toolsText}
	if g.deps.Consolidator != nil {
		var rep consolidator.Report
		prompt, rep, err = g.deps.Consolidator.Before(ctx, sess, prompt)
		if err != nil {
			log.Error("archiving before the turn failed", "err", err)
		}
		// OverLimit comes from the same check, so the common turn needs no
		// exact count (and no tokenizer) at all.
		if rep.OverLimit {
			log.Warn("prompt over the hard limit after archiving", "estimate", rep.After)
			return g.fail(in, errPromptTooLarge, "This conversation no longer fits the model's context window, even after archiving; start a new one with /new.")
		}
	}

	system := prompt.System() + Runtime(g.now(), in.Channel, in.SessionKey, senderLabel(in))
	// The consolidator may keep the last archived messages in view
	// (prompt.Kept) so that an archive does not cut the conversation off.
	from := sess.LastConsolidated() - prompt.Kept
	msgs := append([]llm.Message{{Role: llm.RoleSystem, Content: system}}, replay(sess, from)...)
	showImages(msgs, in) // this turn only; the session keeps a marker

	stopTyping := g.startTyping(ctx, in)
	model := &promptMeter{m: g.deps.Model, now: g.now}
	loop := agent.Loop{
		Model:         model,
		Tools:         tools,
		Purpose:       llm.PurposeChat,
		MaxIterations: g.cfg.MaxToolIterations,
		RepeatLimit:   chatRepeatLimit,
		Logger:        log,
	}
	st := g.startStream(in)
	if st != nil {
		loop.OnDelta, loop.OnToolCall = st.write, st.toolCall
	}
	res, runErr := loop.Run(ctx, msgs)
	stopTyping()

	sent := consolidator.Sent{PromptTokens: model.last, Messages: g.record(sess, res)}

	var out Result
	switch {
	case runErr != nil && errors.Is(runErr, context.Canceled) && g.turnCtx.Err() == nil:
		out = g.fail(in, errStopped, "Stopped.")
	case runErr != nil && g.turnCtx.Err() != nil:
		out = g.fail(in, runErr, shutdownNotice)
	case runErr != nil:
		out = g.fail(in, runErr, g.turnFailure(log, in, runErr, res.Stop))
	default:
		reply := consolidator.StripReasoning(res.Reply)
		unanswered := reply == ""
		switch {
		case reply != "":
		case res.Stop == agent.StopMaxIterations:
			reply = "I stopped after too many tool steps without finishing; try a narrower request."
		case res.Stop == agent.StopRepeated:
			reply = "I stopped because I kept making the same tool call with the same result; try rephrasing the request."
		case res.Stop == agent.StopToolFailed:
			// The tool's error (agent logged it) may name files; the
			// sender reads where to look instead.
			reply = "I stopped because a tool kept failing the same way; the error is in the gateway log."
		default:
			reply = "(The model returned an empty answer.)"
		}
		o := channels.ReplyTo(in, channels.KindReply, reply)
		o.Streamed = st.shown(reply)
		g.send(o)
		g.markAnswered(in)
		out = Result{Reply: reply, Unanswered: unanswered}
	}

	// A stopped turn is not followed by archiving; After still records
	// the provider's count.
	if g.deps.Consolidator != nil {
		if _, err := g.deps.Consolidator.After(ctx, sess, prompt, sent); err != nil {
			log.Error("archiving after the turn failed", "err", err)
		}
	}
	out.modelTime = model.took
	return out
}

// record saves what the run produced and returns how many messages the
// session held before the final reply: the messages of the last model call,
// with which the provider's prompt count is compared.
func (g *Gateway) record(sess *session.Session, res agent.Result) int {
	msgs := res.Messages
	var final []llm.Message
	if n := len(msgs); n > 0 && msgs[n-1].Role == llm.RoleAssistant && len(msgs[n-1].ToolCalls) == 0 {
		msgs, final = msgs[:n-1], msgs[n-1:]
	}
	if err := sess.Append(msgs...); err != nil {
		g.logger.Error("cannot save the turn's tool steps", "session", sess.Key(), "err", err)
	}
	sent := sess.Len()
	if err := sess.Append(withoutReasoning(final)...); err != nil {
		g.logger.Error("cannot save the reply", "session", sess.Key(), "err", err)
	}
	return sent
}

// chatRepeatLimit ends a chat turn whose tool call (file or MCP) had the
// same outcome three times in one run: the model is going round in
// circles and would otherwise spend every iteration doing so. Dream uses
// the same limit.
const chatRepeatLimit = 3

var errPromptTooLarge = errors.New("prompt exceeds the context window")

// fail sends one sentence to the user and returns the failed Result.
// sessionLocked returns the sentence for a conversation another process
// holds (session.LockedError), and whether err is one.
func sessionLocked(err error) (string, bool) {
	var le *session.LockedError
	if errors.As(err, &le) {
		return le.Sentence(), true
	}
	return "", false
}

func (g *Gateway) fail(in channels.Inbound, err error, userText string) Result {
	g.send(channels.ReplyTo(in, channels.KindError, userText))
	g.markAnswered(in)
	return Result{Reply: userText, Err: err}
}

// toolText renders the tool definitions for counting; they cost prompt
// tokens on every call.
func toolText(tools []agent.Tool) string {
	var b strings.Builder
	for _, t := range tools {
		d := t.Def()
		b.WriteString("\n")
		b.WriteString(d.Name)
		b.WriteString(" ")
		b.WriteString(d.Description)
		b.Write(d.Parameters)
	}
	return b.String()
}

// replay returns the session's messages from index from on (its
// unarchived messages and the consolidator's continuity window) in a form
// every provider accepts: starting at a user message, every tool call
// answered by exactly one result and no result without its call (a crash
// mid-turn could leave either behind).
func replay(sess *session.Session, from int) []llm.Message {
	base, held := sess.Tail()
	tail := held[min(max(from-base, 0), len(held)):]
	i := slices.IndexFunc(tail, func(m llm.Message) bool { return m.Role == llm.RoleUser })
	if i < 0 {
		return nil
	}
	tail = tail[i:]
	answered := map[string]int{}
	for _, m := range tail {
		if m.Role == llm.RoleTool {
			answered[m.ToolCallID]++
		}
	}
	out := make([]llm.Message, 0, len(tail))
	called := map[string]bool{}
	for _, m := range tail {
		switch m.Role {
		case llm.RoleAssistant:
			if len(m.ToolCalls) > 0 && !allAnswered(m.ToolCalls, answered) {
				m.ToolCalls = nil
				if m.Content == "" {
					continue
				}
			}
			for _, tc := range m.ToolCalls {
				called[tc.ID] = true
			}
		case llm.RoleTool:
			if !called[m.ToolCallID] {
				continue
			}
			delete(called, m.ToolCallID)
		}
		out = append(out, m)
	}
	nameSenders(out)
	return out
}

// nameSenders opens each user message with its sender's name, "[Ana] …",
// when the messages come from more than one person (a channel several
// people share): the model otherwise reads them as one user's and cannot
// tell who asked or said what. A conversation with one person is left as
// it is. msgs are the turn's copies, never the session's.
func nameSenders(msgs []llm.Message) {
	first := ""
	several := false
	for _, m := range msgs {
		if m.Role != llm.RoleUser || m.Sender == "" {
			continue
		}
		if first == "" {
			first = m.Sender
		} else if m.Sender != first {
			several = true
			break
		}
	}
	if !several {
		return
	}
	for i, m := range msgs {
		if m.Role == llm.RoleUser && m.Sender != "" {
			msgs[i].Content = "[" + m.SenderLabel() + "] " + m.Content
		}
	}
}

func allAnswered(calls []llm.ToolCall, answered map[string]int) bool {
	for _, tc := range calls {
		if answered[tc.ID] == 0 {
			return false
		}
	}
	return true
}

func senderLabel(in channels.Inbound) string {
	switch {
	case in.SenderName != "" && in.SenderID != "":
		return in.SenderName + " (" + in.SenderID + ")"
	case in.SenderName != "":
		return in.SenderName
	case in.SenderID != "":
		return in.SenderID
	default:
		return "unknown"
	}
}

func (g *Gateway) startTyping(ctx context.Context, in channels.Inbound) func() {
	if t, ok := g.channel(in.Channel).(channels.Typer); ok {
		return t.StartTyping(ctx, in)
	}
	return func() {}
}

// turnStream feeds a channel's Stream from the agent loop and remembers
// what the current model step has shown, so the final reply is not shown
// twice.
type turnStream struct {
	s    channels.Stream
	step strings.Builder // the text streamed since the last tool call
}

func (g *Gateway) startStream(in channels.Inbound) *turnStream {
	if sr, ok := g.channel(in.Channel).(channels.Streamer); ok {
		if s := sr.StartStream(in); s != nil {
			return &turnStream{s: s}
		}
	}
	return nil
}

func (t *turnStream) write(fragment string) {
	t.step.WriteString(fragment)
	t.s.Write(fragment)
}

// toolCall ends the step: the text before a tool call is not the reply.
func (t *turnStream) toolCall(string) {
	if t.step.Len() > 0 {
		t.step.Reset()
		t.s.Break()
	}
}

// shown reports whether reply is what the last step streamed. Channels
// show a stream without its leaked reasoning (channels.Visible), and the
// reply has it stripped, so the two are compared that way.
func (t *turnStream) shown(reply string) bool {
	return t != nil && channels.Visible(t.step.String()) == reply
}

// promptMeter remembers the provider-reported prompt tokens of the last
// successful call of one turn: the consolidator's floor for its estimate.
// It also sums the time the turn's model calls took (metrics).
type promptMeter struct {
	m    Model
	last int
	now  func() time.Time
	took time.Duration
}

func (p *promptMeter) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	start := p.now()
	resp, err := p.m.Chat(ctx, req)
	p.took += p.now().Sub(start)
	if err == nil && resp.Usage.PromptTokens > 0 {
		p.last = resp.Usage.PromptTokens
	}
	return resp, err
}

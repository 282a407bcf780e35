package gateway

import (
	"context"
	"errors"
	"log/slog"
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
// the fixed prefix built here and the consolidator's part, and the time
// and sender open the newest message (runtimeHeader), so that everything
// before it stays byte-identical between turns for prompt caches.
func (g *Gateway) turn(ctx context.Context, in channels.Inbound) Result {
	log := g.logger.With("session", in.SessionKey)
	sess, refused := g.openTurn(log, in)
	if sess == nil {
		return refused
	}
	tools, toolsText, release := g.toolsFor(ctx, in)
	defer release()
	fixed := g.deps.Prompts.Fixed(g.memoryView(in))
	g.askDeep()
	prompt, refused, ok := g.archiveBefore(ctx, log, sess, in, consolidator.Prompt{Fixed: fixed, Tools: toolsText})
	if !ok {
		return refused
	}
	model := &promptMeter{m: g.deps.Model, now: g.now, count: func(u llm.Usage) { g.usage.add(in.SessionKey, llm.PurposeChat, u) }}
	res, shown, runErr := g.runAgent(ctx, log, in, model, tools, g.turnMessages(sess, prompt, in))
	if g.abandoned(in) {
		// This process lost the conversation mid-turn: another answers.
		return Result{Err: errClaimLost}
	}
	sent := consolidator.Sent{PromptTokens: model.last, Messages: g.record(sess, res)}
	out := g.reply(log, in, res, shown, runErr)
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

// askDeep asks Dream, in the background (a running Dream holds its
// ledger), for a deep Dream of each scope the prompt builder found over
// its budget since the last turn.
func (g *Gateway) askDeep() {
	over := g.deps.Prompts.TakeOverBudget()
	if len(over) == 0 || g.deps.Deep == nil {
		return
	}
	g.goBackground(func() {
		for _, s := range over {
			if err := g.deps.Deep.RequestDeep(s); err != nil {
				g.logger.Warn("cannot ask for a deep Dream of a scope over its memory budget", "scope", string(s), "err", err)
			}
		}
	})
}

// openTurn opens the message's session and records the message in it. A
// nil session means the turn ends here with the returned Result: the
// conversation could not be opened or saved to (its sender was told), or
// the message was answered before and is ignored.
func (g *Gateway) openTurn(log *slog.Logger, in channels.Inbound) (*session.Session, Result) {
	sess, err := g.openSession(in, true)
	if err != nil {
		if msg, ok := sessionLocked(err); ok {
			log.Warn("conversation held by another process; turn refused", "err", err)
			return nil, g.fail(in, err, msg)
		}
		log.Error("cannot open session", "err", err)
		return nil, g.fail(in, err, "I could not open this conversation's record, so I did not answer; the error is in the gateway log.")
	}
	if g.redelivered(sess, in) {
		return nil, Result{}
	}
	g.addContext(sess, in) // a new session's earlier messages, once
	if err := g.recordUser(sess, in); err != nil {
		log.Error("cannot save message", "err", err)
		return nil, g.fail(in, err, "I could not save your message, so I did not answer; the error is in the gateway log.")
	}
	return sess, Result{}
}

// archiveBefore lets the consolidator archive before the turn and render
// its part of the prompt. ok is false when the prompt cannot fit even
// after archiving: the sender was told, and the Result says so.
func (g *Gateway) archiveBefore(ctx context.Context, log *slog.Logger, sess *session.Session, in channels.Inbound, prompt consolidator.Prompt) (consolidator.Prompt, Result, bool) {
	if g.deps.Consolidator == nil {
		return prompt, Result{}, true
	}
	prompt, rep, err := g.deps.Consolidator.Before(ctx, sess, prompt)
	if err != nil {
		log.Error("archiving before the turn failed", "err", err)
	}
	// OverLimit comes from the same check, so the common turn needs no
	// exact count (and no tokenizer) at all.
	if rep.OverLimit {
		log.Warn("prompt over the hard limit after archiving", "estimate", rep.After)
		return prompt, g.fail(in, errPromptTooLarge, "This conversation no longer fits the model's context window, even after archiving; start a new one with /new."), false
	}
	return prompt, Result{}, true
}

// turnMessages is what the model is sent: the system prompt, then the
// session's messages from where the prompt starts, the last user message
// opened by the runtime header and carrying this message's images.
func (g *Gateway) turnMessages(sess *session.Session, prompt consolidator.Prompt, in channels.Inbound) []llm.Message {
	// The consolidator may keep the last archived messages in view
	// (prompt.Kept) so that an archive does not cut the conversation off.
	from := sess.LastConsolidated() - prompt.Kept
	msgs := append([]llm.Message{{Role: llm.RoleSystem, Content: prompt.System()}}, replay(sess, from)...)
	stampNewest(msgs, runtimeHeader(g.now(), in)) // this turn only, like the images
	showImages(msgs, in)                          // the session keeps a marker
	return msgs
}

// runAgent runs the tool-calling loop, showing the answer as it comes on
// channels that stream; shown reports whether the last step's stream
// showed the reply (so it is not shown twice).
func (g *Gateway) runAgent(ctx context.Context, log *slog.Logger, in channels.Inbound, model *promptMeter, tools []agent.Tool, msgs []llm.Message) (res agent.Result, shown func(string) bool, err error) {
	stopTyping := g.startTyping(ctx, in)
	defer stopTyping()
	loop := agent.Loop{
		Model:         model,
		Tools:         tools,
		Purpose:       llm.PurposeChat,
		CacheKey:      in.SessionKey,
		MaxIterations: g.cfg.MaxToolIterations,
		RepeatLimit:   chatRepeatLimit,
		Logger:        log,
	}
	st := g.startStream(in)
	if st != nil {
		loop.OnDelta, loop.OnToolCall = st.write, st.toolCall
	}
	res, err = loop.Run(ctx, msgs)
	return res, st.shown, err
}

// reply sends what the turn ends with: the model's answer, a notice when
// it ended without one, or one sentence when it failed or was stopped.
func (g *Gateway) reply(log *slog.Logger, in channels.Inbound, res agent.Result, shown func(string) bool, runErr error) Result {
	switch {
	case runErr != nil && errors.Is(runErr, context.Canceled) && g.turnCtx.Err() == nil:
		return g.fail(in, errStopped, "Stopped.")
	case runErr != nil && g.turnCtx.Err() != nil:
		return g.fail(in, runErr, shutdownNotice)
	case runErr != nil:
		return g.fail(in, runErr, g.turnFailure(log, in, runErr, res.Stop))
	}
	text := consolidator.StripReasoning(res.Reply)
	unanswered := text == ""
	if unanswered {
		text = unansweredNotice(res.Stop)
	}
	o := g.answerOut(in, channels.KindReply, text)
	o.Streamed = shown(text)
	g.send(o)
	g.markAnswered(in)
	return Result{Reply: text, Unanswered: unanswered}
}

// unansweredNotice is what the sender reads when the turn ended without
// the model's answer.
func unansweredNotice(stop agent.Stop) string {
	switch stop {
	case agent.StopMaxIterations:
		return "I stopped after too many tool steps without finishing; try a narrower request."
	case agent.StopRepeated:
		return "I stopped because I kept making the same tool call with the same result; try rephrasing the request."
	case agent.StopToolFailed:
		// The tool's error (agent logged it) may name files; the
		// sender reads where to look instead.
		return "I stopped because a tool kept failing the same way; the error is in the gateway log."
	default:
		return "(The model returned an empty answer.)"
	}
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

// chatRepeatLimit ends a chat turn whose tool call (file or MCP) had the
// same outcome three times in one run: the model is going round in
// circles and would otherwise spend every iteration doing so. Dream uses
// the same limit.
const chatRepeatLimit = 3

var errPromptTooLarge = errors.New("prompt exceeds the context window")

// fail sends one sentence to the user and returns the failed Result.
func (g *Gateway) fail(in channels.Inbound, err error, userText string) Result {
	g.send(g.answerOut(in, channels.KindError, userText))
	g.markAnswered(in)
	return Result{Reply: userText, Err: err}
}

// sessionLocked returns the sentence for a conversation another process
// holds (session.LockedError), and whether err is one.
func sessionLocked(err error) (string, bool) {
	var le *session.LockedError
	if errors.As(err, &le) {
		return le.Sentence(), true
	}
	return "", false
}

// turnFailure logs a turn whose model call failed and returns the sentence
// its sender reads. The terminal's user is the operator and reads the cause
// and what to check (llm.UserMessage); a person in Slack or Discord reads
// one plain sentence (llm.PublicMessage), while the cause, the endpoint and
// the config hints go to the log for the operator.
func (g *Gateway) turnFailure(log *slog.Logger, in channels.Inbound, err error, stop agent.Stop) string {
	cause := llm.UserMessage(err)
	if in.Local {
		log.Warn("turn failed", "cause", cause, "err", err, "stop", stop)
		return cause
	}
	log.Error("turn failed; the sender was told the operator knows", "channel", in.Channel, "cause", cause, "err", err, "stop", stop)
	return llm.PublicMessage(err)
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
// It also sums the time the turn's model calls took (metrics), and counts
// each call's tokens for the conversation (count).
type promptMeter struct {
	m     Model
	last  int
	now   func() time.Time
	took  time.Duration
	count func(llm.Usage)
}

func (p *promptMeter) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	start := p.now()
	resp, err := p.m.Chat(ctx, req)
	p.took += p.now().Sub(start)
	if err == nil && resp.Usage.PromptTokens > 0 {
		p.last = resp.Usage.PromptTokens
	}
	if err == nil && p.count != nil {
		p.count(resp.Usage)
	}
	return resp, err
}

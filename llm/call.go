package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// errTryTimeout is the cancel cause of a try that ran out of time, which
// tells it apart from the caller's own cancellation; errNoFirstByte that of
// a streamed try whose answer did not begin within Config.FirstByte.
var (
	errTryTimeout  = errors.New("try timed out")
	errNoFirstByte = errors.New("no first byte in time")
)

// timer is what time.AfterFunc returns, as the client's clock makes it
// (tests move a fake one).
type timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// call is one Chat: the tries of one request.
type call struct {
	client  *Client
	model   string
	purpose string
	onDelta func(string)
}

func (k *call) run(ctx context.Context, req Request) (Response, error) {
	c := k.client
	wire, mend, err := c.wireRequest(req, k.model)
	if err != nil {
		return Response{}, &Error{
			Kind:   ErrRejected,
			Reason: "the request could not be encoded",
			Err:    fmt.Errorf("encode request for %s: %w", k.model, err),
		}
	}
	stream := k.onDelta != nil
	if stream {
		wire.Stream = true
		wire.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}

	for attempt := 1; ; attempt++ {
		start := time.Now()
		var (
			resp Response
			f    *failure
		)
		if stream {
			resp, f = k.tryStream(ctx, wire, mend, k.firstByte(req))
		} else {
			resp, f = k.try(ctx, wire, mend)
		}
		if f == nil {
			k.logTry(attempt, start, resp, nil)
			return resp, nil
		}
		if ctx.Err() != nil {
			// The try failed because the caller gave up; f describes that
			// cancellation, not the endpoint.
			c.log.Debug("llm call abandoned", "model", k.model, "purpose", k.purpose,
				"attempt", attempt, "duration", time.Since(start))
			return Response{}, fmt.Errorf("chat with %s: %w", k.model, ctx.Err())
		}
		k.logTry(attempt, start, resp, f)
		delay, again := k.retry(req, attempt, f)
		if !again {
			return Response{}, f.final(attempt)
		}
		if err := c.wait(ctx, delay); err != nil {
			return Response{}, fmt.Errorf("chat with %s: wait to retry: %w", k.model, err)
		}
	}
}

// retry decides whether a failed try is tried again, and after what wait.
// With another model of the chain to ask (req.fallback), the chain's wait
// must not be this model's retries: a timeout or a hang passes on at once,
// and another transient failure gets one more try, only when it can follow
// at once (BaseDelay, or a shorter Retry-After).
func (k *call) retry(req Request, attempt int, f *failure) (time.Duration, bool) {
	c := k.client
	maxTries := c.cfg.MaxTries
	if req.tries > 0 {
		maxTries = min(maxTries, req.tries)
	}
	if req.fallback {
		maxTries = min(maxTries, 2)
	}
	if !f.retryable || attempt >= maxTries || req.fallback && f.timeout {
		return 0, false
	}
	delay := c.backoff(attempt)
	if f.hasRetryAfter {
		delay = min(f.retryAfter, c.cfg.MaxDelay)
	}
	if req.fallback && delay > c.cfg.BaseDelay {
		return 0, false
	}
	return delay, true
}

func (k *call) logTry(attempt int, start time.Time, resp Response, f *failure) {
	log := k.client.log
	args := []any{
		"model", k.model, "purpose", k.purpose, "attempt", attempt,
		"stream", k.onDelta != nil, "duration", time.Since(start),
	}
	if f == nil {
		log.Debug("llm try", append(args, "status", 200,
			"prompt_tokens", resp.Usage.PromptTokens,
			"cached_tokens", resp.Usage.CachedTokens,
			"completion_tokens", resp.Usage.CompletionTokens)...)
		return
	}
	// Only the safe reason: the chain may quote a provider body.
	log.Debug("llm try failed", append(args, "status", f.status,
		"kind", f.kind.Error(), "reason", f.reason, "retryable", f.retryable)...)
}

// try makes one unstreamed request.
func (k *call) try(ctx context.Context, wire openai.ChatCompletionRequest, mend bodyMend) (Response, *failure) {
	c := k.client
	d := c.newDoer(mend)
	cl := openai.NewClientWithConfig(c.openaiConfig(d))
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	limit := c.afterFunc(c.cfg.Timeout, func() { cancel(errTryTimeout) })
	defer limit.Stop()

	out, err := cl.CreateChatCompletion(tctx, wire)
	if err != nil {
		return Response{}, c.classify(err, d, tctx, c.cfg.Timeout)
	}
	if len(out.Choices) == 0 {
		return Response{}, &failure{
			kind: ErrMalformed, status: d.status,
			reason: "the response held no choices",
			err:    errors.New("chat completion without choices"),
		}
	}
	ch := out.Choices[0]
	resp := Response{
		Content:      ch.Message.Content,
		ToolCalls:    fromWireToolCalls(ch.Message.ToolCalls),
		FinishReason: string(ch.FinishReason),
		Model:        out.Model,
		Usage:        fromWireUsage(out.Usage),
	}
	if resp.Model == "" {
		resp.Model = k.model
	}
	return resp, nil
}

// tryStream makes one streamed request. A failure after a fragment reached
// OnDelta is never retried: the caller has shown it already. firstByte,
// when > 0, bounds the wait for the answer's first byte.
func (k *call) tryStream(ctx context.Context, wire openai.ChatCompletionRequest, mend bodyMend, firstByte time.Duration) (Response, *failure) {
	c := k.client
	d := c.newDoer(mend)
	cl := openai.NewClientWithConfig(c.openaiConfig(d))
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := c.afterFunc(c.cfg.Timeout, func() { cancel(errTryTimeout) })
	defer idle.Stop()
	if firstByte > 0 {
		first := c.afterFunc(firstByte, func() { cancel(errNoFirstByte) })
		defer first.Stop()
		d.onFirstByte = func() { first.Stop() }
	}

	st, err := cl.CreateChatCompletionStream(tctx, wire)
	if err != nil {
		return Response{}, c.classify(err, d, tctx, c.cfg.Timeout)
	}
	defer st.Close()

	var acc streamAcc
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			f := c.classify(err, d, tctx, c.cfg.Timeout)
			if acc.delivered {
				f.retryable = false
				if f.kind == ErrUnavailable && !f.timeout {
					f.reason = "the answer broke off mid-stream"
				}
			}
			return Response{}, f
		}
		idle.Reset(c.cfg.Timeout)
		acc.add(chunk, k.onDelta)
	}

	switch {
	case !acc.sawChoice:
		return Response{}, &failure{
			kind: ErrMalformed, status: d.status,
			reason: "the stream held no completion",
			err:    errors.New("stream ended without a choice chunk"),
		}
	case acc.finish == "":
		// go-openai reports a connection closed before [DONE] as a plain
		// EOF; a missing finish_reason is how a cut-off answer shows.
		return Response{}, &failure{
			kind: ErrUnavailable, status: d.status,
			reason:    "the answer broke off mid-stream",
			retryable: !acc.delivered,
			err:       errors.New("stream ended without finish_reason"),
		}
	}
	resp := acc.response()
	if resp.Model == "" {
		resp.Model = k.model
	}
	return resp, nil
}

// firstByte is the limit on the wait for a streamed answer's first byte:
// Config.FirstByte when another model of the chain can be asked (and the
// limit is below the whole timeout), else none.
func (k *call) firstByte(req Request) time.Duration {
	if fb := k.client.cfg.FirstByte; req.fallback && fb < k.client.cfg.Timeout {
		return fb
	}
	return 0
}

// streamAcc assembles a streamed answer into a Response.
type streamAcc struct {
	content   strings.Builder
	calls     []ToolCall
	byIndex   map[int]int // wire tool-call index -> position in calls
	finish    string
	model     string
	usage     Usage
	sawChoice bool
	delivered bool
}

func (a *streamAcc) add(chunk openai.ChatCompletionStreamResponse, onDelta func(string)) {
	if chunk.Model != "" {
		a.model = chunk.Model
	}
	if chunk.Usage != nil {
		a.usage = fromWireUsage(*chunk.Usage)
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue
		}
		a.sawChoice = true
		if frag := ch.Delta.Content; frag != "" {
			a.content.WriteString(frag)
			a.delivered = true
			onDelta(frag)
		}
		for _, tc := range ch.Delta.ToolCalls {
			a.addToolDelta(tc)
		}
		if ch.FinishReason != "" && ch.FinishReason != openai.FinishReasonNull {
			a.finish = string(ch.FinishReason)
		}
	}
}

// addToolDelta merges one tool-call fragment: the first fragment of a call
// carries its id and name, later ones pieces of the arguments. Providers
// that send no index are matched by id, else to the latest call.
func (a *streamAcc) addToolDelta(tc openai.ToolCall) {
	pos := -1
	switch {
	case tc.Index != nil:
		if a.byIndex == nil {
			a.byIndex = make(map[int]int)
		}
		if p, ok := a.byIndex[*tc.Index]; ok {
			pos = p
		} else {
			a.byIndex[*tc.Index] = len(a.calls)
		}
	case len(a.calls) > 0 && (tc.ID == "" || tc.ID == a.calls[len(a.calls)-1].ID):
		pos = len(a.calls) - 1
	}
	if pos < 0 {
		a.calls = append(a.calls, ToolCall{})
		pos = len(a.calls) - 1
	}
	cur := &a.calls[pos]
	if tc.ID != "" {
		cur.ID = tc.ID
	}
	// Some servers repeat the name on every fragment; the first one counts.
	if cur.Name == "" {
		cur.Name = tc.Function.Name
	}
	cur.Arguments += tc.Function.Arguments
}

func (a *streamAcc) response() Response {
	return Response{
		Content:      a.content.String(),
		ToolCalls:    fillToolCallIDs(a.calls),
		FinishReason: a.finish,
		Model:        a.model,
		Usage:        a.usage,
	}
}

package discord

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/dreamgate/dreamgate/channels"
)

// messageBody is POST /channels/{id}/messages. discordgo's MessageSend has
// no nonce; with enforce_nonce Discord answers a repeated nonce with the
// message it already created, so a retry after a lost response cannot post
// the part twice.
type messageBody struct {
	Content          string            `json:"content"`
	Nonce            string            `json:"nonce,omitempty"`
	EnforceNonce     bool              `json:"enforce_nonce,omitempty"`
	AllowedMentions  allowedMentions   `json:"allowed_mentions"`
	MessageReference *messageReference `json:"message_reference,omitempty"`
}

// allowedMentions lets a reply ping the users it names but never @everyone,
// @here or roles (the text comes from a model), and not the author of the
// message it answers.
type allowedMentions struct {
	Parse       []string `json:"parse"`
	RepliedUser bool     `json:"replied_user"`
}

type messageReference struct {
	MessageID       string `json:"message_id"`
	ChannelID       string `json:"channel_id,omitempty"`
	FailIfNotExists bool   `json:"fail_if_not_exists"`
}

// Send implements channels.Channel: out.Text is split at 2000 characters
// with code fences balanced, the parts are posted in order to the thread
// (out.ThreadID) or channel (out.ChatID), the first one as a reply to
// out.ReplyTo without pinging its author. A 429 is waited out (retry_after)
// and retried, network errors and 5xx are retried with backoff, until the
// send retry window (Config.SendRetry) has passed since the first attempt;
// then the message is dropped with one ERROR line and the error wraps
// channels.ErrDropped. Other 4xx fail at once (ErrRejected). Send blocks
// meanwhile, which holds the conversation's later messages behind this
// one; Discord limits each channel's messages on its own, so other
// channels' sends go on. The error names the part and channel that failed.
func (a *Adapter) Send(ctx context.Context, out channels.Outbound) error {
	target := out.ThreadID
	if target == "" {
		target = out.ChatID
	}
	if target == "" {
		return fmt.Errorf("send discord message: %w", ErrNoTarget)
	}
	if strings.TrimSpace(out.Text) == "" {
		return fmt.Errorf("send discord message to %s: %w", target, ErrEmptyMessage)
	}
	r := a.retryPolicy().Start(out)
	if it := a.interactionFor(out.ReplyTo); it != nil {
		return a.sendInteraction(ctx, r, it, channels.SplitMessage(out.Text, MaxMessageLen))
	}
	if strings.HasPrefix(out.ReplyTo, interactionPrefix) {
		out.ReplyTo = "" // an expired slash command: answer in the channel
	}
	if st := a.takeStream(out); st != nil {
		if handled, err := st.finish(ctx, r, out); handled {
			return err
		}
	}
	parts := channels.SplitMessage(out.Text, MaxMessageLen)
	endpoint := discordgo.EndpointChannelMessages(target)
	for i, part := range parts {
		if strings.TrimSpace(part) == "" {
			continue
		}
		body := messageBody{
			Content:         part,
			Nonce:           newNonce(),
			EnforceNonce:    true,
			AllowedMentions: allowedMentions{Parse: []string{"users"}},
		}
		if out.Key != "" {
			// Every process derives the same nonce for this part, so
			// Discord answers a second post of it with the first.
			body.Nonce = channels.PostKey(out.Key, i)
			if out.Again && a.postedBefore(body.Nonce) {
				a.log.Info("discord: this part was posted before (another process, or before a restart); not posting it again", "session", out.SessionKey, "chat", target)
				continue
			}
		}
		if i == 0 && out.ReplyTo != "" {
			body.MessageReference = &messageReference{MessageID: out.ReplyTo, ChannelID: target}
		}
		var posted []byte
		err := a.retry(ctx, r, func(ctx context.Context) error {
			var err error
			posted, err = a.session.RequestWithBucketID(http.MethodPost, endpoint, body, endpoint, discordgo.WithContext(ctx))
			return err
		})
		if err != nil {
			return fmt.Errorf("send part %d/%d (%d chars) to discord channel %s: %w", i+1, len(parts), len(part), target, err)
		}
		if out.Key != "" {
			a.recordPost(body.Nonce, posted)
		}
	}
	a.log.Debug("discord: sent", "session", out.SessionKey, "chat", target, "parts", len(parts), "len", len(out.Text))
	return nil
}

// postedBefore reports whether the post record holds the part under
// nonce. Discord itself answers a nonce it saw within a few minutes with
// the message it made; the record covers what is older.
func (a *Adapter) postedBefore(nonce string) bool {
	if a.posts == nil {
		return false
	}
	posted, err := a.posts.Posted(nonce)
	if err != nil {
		a.log.Warn("discord: cannot read the post record; the nonce guards a repeat", "err", err)
	}
	return posted
}

// recordPost notes in the post record that the part under nonce went out
// as the message Discord answered with.
func (a *Adapter) recordPost(nonce string, resp []byte) {
	if a.posts == nil {
		return
	}
	var m struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(resp, &m)
	if err := a.posts.Record(nonce, m.ID); err != nil {
		a.log.Warn("discord: cannot record a post", "err", err)
	}
}

// newNonce returns 24 random hex characters (Discord allows 25).
func newNonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// retryPolicy is the send retry policy with this adapter's window, backoff
// and log.
func (a *Adapter) retryPolicy() channels.SendRetry {
	p := a.sendRetry
	p.Log = a.log
	if p.Base == 0 {
		p.Base = a.tune.sendBackoff
	}
	return p
}

// retry runs call until it succeeds, waiting out 429s and retrying
// transient failures with backoff, for as long as r allows.
func (a *Adapter) retry(ctx context.Context, r *channels.Retry, call func(context.Context) error) error {
	for {
		err := call(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var rl *discordgo.RateLimitError
		switch {
		case errors.As(err, &rl):
			a.health.RateLimitWait()
			// retry_after <= 0 is waited as the backoff's base.
			err = r.RateLimited(ctx, rl.RetryAfter, err)
		case transient(err):
			err = r.Failed(ctx, err)
		default:
			return rejected(err)
		}
		if err != nil {
			return err
		}
	}
}

// transient reports whether a failed request may succeed when repeated:
// anything but a 4xx answer.
func transient(err error) bool {
	if err == nil {
		return false
	}
	var rest *discordgo.RESTError
	if errors.As(err, &rest) && rest.Response != nil {
		return rest.Response.StatusCode >= 500
	}
	return true
}

// rejected describes a refused request without discordgo's types.
func rejected(err error) error {
	var rest *discordgo.RESTError
	if !errors.As(err, &rest) || rest.Response == nil {
		return err
	}
	if m := rest.Message; m != nil && m.Message != "" {
		return fmt.Errorf("%w: HTTP %d, code %d: %s", ErrRejected, rest.Response.StatusCode, m.Code, m.Message)
	}
	return fmt.Errorf("%w: HTTP %d", ErrRejected, rest.Response.StatusCode)
}

// StartTyping implements channels.Typer: POST /channels/{id}/typing now and
// every 8 s until stop is called or ctx ends. Failures are logged at debug;
// stop returns at once and is safe to call more than once.
//
// Typing must never hold a reply up. So a typing call is not cancelled by
// stop (it runs detached from ctx, bounded by its own timeout) and does not
// go through discordgo's rate-limit buckets: discordgo takes a call from a
// bucket before a request and gives it back only from the answer's headers,
// so cancelled calls drained the bucket, and the next typing call then slept
// uncancellably until the bucket reset while the turn's stop waited for it.
// A typing call that Discord answers with 429 is simply skipped.
func (a *Adapter) StartTyping(ctx context.Context, in channels.Inbound) (stop func()) {
	target := in.ThreadID
	if target == "" {
		target = in.ChatID
	}
	if target == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	// The loop ends on stop or ctx; a call in flight then ends within
	// typingTimeout.
	go func() {
		tick := time.NewTicker(a.tune.typingEvery)
		defer tick.Stop()
		for ctx.Err() == nil {
			// Detached: stop ends the loop, never the call in flight.
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), a.tune.typingTimeout)
			err := a.typing(rctx, target)
			rcancel()
			if err != nil {
				a.log.Debug("discord: typing indicator failed", "chat", target, "err", err)
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	return sync.OnceFunc(cancel)
}

// typing is one POST /channels/{id}/typing, outside discordgo's rate
// limiter (see StartTyping).
func (a *Adapter) typing(ctx context.Context, channelID string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, discordgo.EndpointChannelTyping(channelID), nil)
	if err != nil {
		return fmt.Errorf("typing request: %w", err)
	}
	req.Header.Set("Authorization", a.session.Token)
	req.Header.Set("User-Agent", a.session.UserAgent)
	resp, err := a.session.Client.Do(req)
	if err != nil {
		return fmt.Errorf("typing: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("typing: HTTP %d", resp.StatusCode)
	}
	return nil
}

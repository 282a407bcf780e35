package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/dreamgate/dreamgate/channels"
)

// Slash commands: Slack takes "/dream" typed into its message box for
// itself, so the app declares the gateway's commands (manifest.yaml) and
// Slack sends each use as a slash_commands envelope. The envelope is acked
// at once (Slack wants it within 3 s); the command then goes to the
// gateway as the text "/dream args", like "@bot /dream args", and its
// replies go back through the command's response_url as ephemeral
// messages: a command is one person's errand (a memory diff, a session's
// status), the channel need not read it, and a response_url works also in
// channels the bot was never invited to.

const (
	// slashIDPrefix marks the MessageID of a slash command's Inbound: it
	// names no Slack message (no reaction, no thread, no stream).
	slashIDPrefix = "slash:"
	// responseURLUses is how often Slack accepts one response_url, and
	// responseURLTTL for how long.
	responseURLUses = 5
	responseURLTTL  = 30 * time.Minute
	// progressUses is how many of those uses progress lines may take (a
	// /dream says up to three: archiving, reading, editing), so that the
	// answer itself still fits.
	progressUses = 3
)

// slashTarget is where the replies to one slash command go. It is kept
// in the reply handles (Config.Handles) under the command's MessageID, as
// JSON, so that the process answering the command — this one, restarted
// or not, or another on the same store — answers through its
// response_url; the handles count its uses once for all of them.
type slashTarget struct {
	URL     string `json:"url"`
	Channel string `json:"channel"`
	User    string `json:"user"`
	// Expires is when the response_url stops working; the target is kept
	// an hour longer (slashKeep), for an answer that comes late to go by
	// chat.postEphemeral.
	Expires time.Time `json:"expires"`

	// handles is where it was found: its uses are booked there.
	handles channels.ReplyHandles
	id      string
}

// slashKeep is how long a slash command's target is kept.
const slashKeep = responseURLTTL + time.Hour

// keepSlash keeps t under id. When the store cannot keep it, this process
// keeps it in its memory, so it can still answer (a restart then cannot),
// and says so.
func (a *Adapter) keepSlash(id string, t slashTarget) {
	data, err := json.Marshal(t)
	if err != nil {
		a.log.Warn("slack: cannot record a slash command's response_url", "err", err)
		return
	}
	expires := t.Expires.Add(slashKeep - responseURLTTL)
	if err := a.handles.Keep(id, data, expires); err != nil {
		a.log.Warn("slack: the store could not keep a slash command's response_url; only this process can answer through it", "err", err)
		_ = a.localHandles.Keep(id, data, expires)
	}
}

// slashTarget returns the target of the slash command id names, nil when
// id names no slash command or its target is no longer kept.
func (a *Adapter) slashTarget(id string) *slashTarget {
	if !isSlashID(id) {
		return nil
	}
	now := a.now()
	for _, h := range []channels.ReplyHandles{a.handles, &a.localHandles} {
		data, _, ok, err := h.Handle(id, now)
		if err != nil {
			a.log.Warn("slack: cannot read a slash command's response_url from the store", "err", err)
			continue
		}
		if !ok {
			continue
		}
		t := &slashTarget{handles: h, id: id}
		if err := json.Unmarshal(data, t); err != nil {
			a.log.Warn("slack: a slash command's response_url record does not parse", "err", err)
			return nil
		}
		return t
	}
	return nil
}

// take books one use of t's response_url, or reports that it cannot take
// another (spent, expired, or kept for the answer when progress).
func (a *Adapter) take(t *slashTarget, progress bool) bool {
	now := a.now()
	if t.URL == "" || !now.Before(t.Expires) {
		return false
	}
	limit := responseURLUses
	if progress {
		limit = progressUses
	}
	ok, err := t.handles.Use(t.id, limit, now)
	if err != nil {
		a.log.Warn("slack: cannot book a use of a slash command's response_url; posting ephemeral instead", "err", err)
	}
	return ok
}

// slashNameRE is a command word the gateway's parser takes as a command.
var slashNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/[a-z][a-z0-9_-]*$`) })

func isSlashID(id string) bool { return strings.HasPrefix(id, slashIDPrefix) }

// slashCommand is the part of a slash_commands payload the adapter needs.
type slashCommand struct {
	command, text, team, channel, user, responseURL, triggerID string
}

// commandName maps what Slack sent ("/dg-dream") to the gateway's command
// ("/dream"): the configured prefix is taken off.
func (a *Adapter) commandName(command string) string {
	name := strings.ToLower(strings.TrimPrefix(command, "/"))
	name = strings.TrimPrefix(name, a.cfg.CommandPrefix)
	return "/" + name
}

// handleSlash turns one slash command into an Inbound for the gateway.
// The envelope was acked already.
func (r *runner) handleSlash(ctx context.Context, sc slashCommand) {
	a := r.a
	if sc.channel == "" || sc.user == "" || sc.triggerID == "" {
		a.log.Warn("slack slash command without channel, user or trigger id; ignored", "command", sc.command)
		return
	}
	if !a.seen.Add("slash/" + sc.triggerID) {
		return
	}
	id := slashIDPrefix + sc.triggerID
	a.keepSlash(id, slashTarget{URL: sc.responseURL, Channel: sc.channel, User: sc.user, Expires: a.now().Add(responseURLTTL)})
	dm := strings.HasPrefix(sc.channel, "D")
	in := channels.Inbound{
		Channel:    Name,
		ChatID:     sc.channel,
		SessionKey: Name + ":" + sc.channel,
		SenderID:   sc.user,
		MessageID:  id,
		Text:       strings.TrimSpace(a.commandName(sc.command) + " " + unescaper.Replace(sc.text)),
		Time:       time.Now(),
	}
	a.log.Debug("slack slash command", "command", sc.command, "chat", sc.channel, "user", sc.user)
	switch {
	case !slashNameRE().MatchString(a.commandName(sc.command)):
		// Never a chat turn: the gateway would take text that is not a
		// command word for the model.
		r.out.Notify(ctx, channels.ReplyTo(in, channels.KindError, "I don't know the command "+sc.command+". Try "+a.CommandForm("/help")+"."))
	case len(a.allowFrom) > 0 && !a.allowFrom[sc.user]:
		r.out.Notify(ctx, channels.ReplyTo(in, channels.KindError, channels.NotAllowedNotice))
	case !dm && len(a.allowChannels) > 0 && !a.allowChannels[sc.channel]:
		r.out.Notify(ctx, channels.ReplyTo(in, channels.KindError, "I don't answer in this channel."))
	default:
		r.out.Put(ctx, pending{in: in, where: where{team: sc.team}})
	}
}

// respond sends out, the answer to a slash command, through its
// response_url as ephemeral messages, part by part. Parts the response_url
// can no longer take (spent after 5 uses, expired after 30 minutes: a long
// /dream) go by chat.postEphemeral instead; progress lines past their
// share are dropped.
func (a *Adapter) respond(ctx context.Context, t *slashTarget, out channels.Outbound) error {
	progress := out.Kind == channels.KindProgress
	r := a.retryPolicy().Start(out)
	text := toMrkdwn(out.Text)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	for i, part := range channels.SplitMessage(text, MaxMessageLen) {
		if a.take(t, progress) {
			err := a.respondOnce(ctx, t.URL, part)
			if err == nil {
				continue
			}
			if ctx.Err() != nil {
				return err
			}
			a.log.Info("slack response_url refused; posting ephemeral instead", "chat", t.Channel, "err", err)
		} else if progress {
			a.log.Debug("slack progress line dropped: response_url uses kept for the answer", "chat", t.Channel)
			return nil
		}
		if err := a.postEphemeral(ctx, r, t, part); err != nil {
			return fmt.Errorf("slack: answer part %d of slash command in %s: %w", i+1, t.Channel, err)
		}
	}
	return nil
}

func (a *Adapter) respondOnce(ctx context.Context, url, text string) error {
	var err error
	for try := 0; try < a.sendTries; try++ {
		callCtx, cancel := context.WithTimeout(ctx, a.apiTimeout)
		_, _, err = a.api.PostMessageContext(callCtx, "", slack.MsgOptionText(text, false), slack.MsgOptionResponseURL(url, slack.ResponseTypeEphemeral))
		cancel()
		if err == nil || !transient(err) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("post to response_url: %w", err)
	}
	return nil
}

// postEphemeral posts one part of a slash command's answer for its user
// only, waiting out rate limits and retrying server errors with r, as a
// reply is (a lost answer is worse than a late one; an ephemeral message
// that went through despite an error may show twice).
func (a *Adapter) postEphemeral(ctx context.Context, r *channels.Retry, t *slashTarget, text string) error {
	for {
		callCtx, cancel := context.WithTimeout(ctx, a.apiTimeout)
		_, err := a.api.PostEphemeralContext(callCtx, t.Channel, t.User, slack.MsgOptionText(text, false))
		cancel()
		switch rl, limited := errors.AsType[*slack.RateLimitedError](err); {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case limited:
			a.health.RateLimitWait()
			err = r.RateLimited(ctx, max(rl.RetryAfter, time.Second), fmt.Errorf("chat.postEphemeral: %w", err))
		case transient(err):
			err = r.Failed(ctx, fmt.Errorf("chat.postEphemeral: %w", err))
		default:
			if code := slackErrorCode(err); code == "channel_not_found" || code == "not_in_channel" {
				return fmt.Errorf("chat.postEphemeral (the bot is not in the channel): %w", err)
			}
			return fmt.Errorf("chat.postEphemeral: %w", err)
		}
		if err != nil {
			return err
		}
	}
}

// CommandForm returns how a person types the gateway command name
// ("/dream-log") on Slack: the declared slash command ("/dg-dream-log"
// with a prefix), or "@bot /status" for a command that has no slash
// command of its own (Slack's own /status without a prefix, or one the
// gateway did not declare).
func (a *Adapter) CommandForm(name string) string {
	bare := strings.TrimPrefix(name, "/")
	declared := false
	for _, c := range a.cfg.Commands {
		declared = declared || c.Name == bare
	}
	if !declared || (a.cfg.CommandPrefix == "" && slackOwnCommands[bare]) {
		return "@" + a.botName() + " " + name
	}
	return "/" + a.cfg.CommandPrefix + bare
}

// slackOwnCommands are Slack's built-in commands among the gateway's:
// Slack answers them itself, so they reach the bot only after a mention
// or under a prefix.
var slackOwnCommands = map[string]bool{"status": true}

func (a *Adapter) botName() string {
	if n, _ := a.botHandle.Load().(string); n != "" {
		return n
	}
	return "dreamgate"
}

// CommandNote ends /help on Slack: a slash command cannot say which thread
// it was typed in, so in a thread the mention form is the one that acts on
// that thread's conversation.
func (a *Adapter) CommandNote() string {
	return "In a thread, mention me instead — @" + a.botName() + " /new — to act on that thread's conversation."
}

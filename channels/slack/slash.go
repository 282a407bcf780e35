package slack

import (
	"context"
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

// slashTarget is where the replies to one slash command go.
type slashTarget struct {
	url, channel, user string
	expires            time.Time
	used               int
}

// slashTargets maps a slash command's MessageID to its response_url.
type slashTargets struct {
	mu sync.Mutex
	m  map[string]*slashTarget
}

func (s *slashTargets) put(id string, t *slashTarget) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*slashTarget{}
	}
	now := time.Now()
	for k, v := range s.m {
		if now.After(v.expires.Add(time.Hour)) {
			delete(s.m, k) // a late /dream reply falls back to chat.postEphemeral
		}
	}
	s.m[id] = t
}

func (s *slashTargets) get(id string) *slashTarget {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

// take books one use of t's response_url, or reports that it cannot take
// another (spent, expired, or kept for the answer when progress).
func (s *slashTargets) take(t *slashTarget, progress bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := responseURLUses
	if progress {
		limit = progressUses
	}
	if t.used >= limit || time.Now().After(t.expires) {
		return false
	}
	t.used++
	return true
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
	a.slash.put(id, &slashTarget{url: sc.responseURL, channel: sc.channel, user: sc.user, expires: time.Now().Add(responseURLTTL)})
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
		if t.url != "" && a.slash.take(t, progress) {
			err := a.respondOnce(ctx, t.url, part)
			if err == nil {
				continue
			}
			if ctx.Err() != nil {
				return err
			}
			a.log.Info("slack response_url refused; posting ephemeral instead", "chat", t.channel, "err", err)
		} else if progress {
			a.log.Debug("slack progress line dropped: response_url uses kept for the answer", "chat", t.channel)
			return nil
		}
		if err := a.postEphemeral(ctx, r, t, part); err != nil {
			return fmt.Errorf("slack: answer part %d of slash command in %s: %w", i+1, t.channel, err)
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
		_, err := a.api.PostEphemeralContext(callCtx, t.channel, t.user, slack.MsgOptionText(text, false))
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

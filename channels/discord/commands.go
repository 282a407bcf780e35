package discord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/internal/textcut"
)

// DreamCommit is one recent Dream commit, offered when a person types the
// sha option of a slash command.
type DreamCommit struct {
	SHA     string
	Subject string
}

// Interaction bounds.
const (
	interactionTTL    = 14 * time.Minute // Discord accepts follow-ups for 15 minutes
	maxInteractions   = 1024             // interactions remembered for their replies
	maxChoices        = 25               // Discord's limit
	interactionPrefix = "interaction:"   // Inbound.MessageID of a slash command
)

// interaction is a slash command being answered: its replies go through
// the interaction's webhook, the first one replacing the deferred
// "thinking…" response.
type interaction struct {
	i       *discordgo.Interaction
	created time.Time
	acked   chan struct{} // closed once the deferral was answered (or failed)

	// ephemeral: the answer is shown to the person who ran the command
	// only (set with the deferral, before acked is closed).
	ephemeral bool

	mu          sync.Mutex
	originalSet bool
}

// privateCommand reports a command answered to the person who ran it
// only: /help lists what they may run, /status reports on the conversation
// for them; posting either for the whole channel is noise. (A function, not
// a map: a package-level map is built at every start of every command.)
func privateCommand(name string) bool { return name == "help" || name == "status" }

// commandSpecs turns the gateway's commands into Discord application
// commands: lower-case names, descriptions of at most 100 characters, one
// optional string option per argument, autocompleted for "sha".
func (a *Adapter) commandSpecs() []*discordgo.ApplicationCommand {
	var out []*discordgo.ApplicationCommand
	for _, c := range a.commands {
		name := strings.ToLower(strings.TrimPrefix(c.Name, "/"))
		desc := c.Description
		if c.Admin {
			desc += " (admins)"
		}
		ac := &discordgo.ApplicationCommand{
			Type:        discordgo.ChatApplicationCommand,
			Name:        name,
			Description: fitText(desc),
			Options:     []*discordgo.ApplicationCommandOption{},
		}
		if c.Arg != "" {
			ac.Options = append(ac.Options, &discordgo.ApplicationCommandOption{
				Type:         discordgo.ApplicationCommandOptionString,
				Name:         strings.ToLower(c.Arg),
				Description:  fitText(argDescription(c.Arg)),
				Autocomplete: c.Arg == "sha" && a.dreamLog != nil,
			})
		}
		out = append(out, ac)
	}
	return out
}

func argDescription(arg string) string {
	if arg == "sha" {
		return "a Dream commit (leave empty for the latest or the list)"
	}
	return arg
}

// fitText cuts s to Discord's limit on a command's or option's description
// and a choice's name: 100 characters, the ellipsis included.
func fitText(s string) string {
	s, _ = textcut.Limit{Max: 100, Mark: "…", MarkWithin: true}.Cut(s)
	return s
}

// registerCommands declares the commands to Discord, globally or in each
// configured guild, and only where the registered set differs (a bulk
// overwrite resets Discord's command cache for every client).
func (a *Adapter) registerCommands(ctx context.Context) error {
	if len(a.commands) == 0 {
		return nil
	}
	app, err := a.session.Application("@me")
	if err != nil {
		return fmt.Errorf("get application: %w", err)
	}
	a.appID.Store(app.ID)
	want := a.commandSpecs()
	scopes := a.commandGuilds
	if len(scopes) == 0 {
		scopes = []string{""}
	}
	var errs []error
	for _, guild := range scopes {
		have, err := a.session.ApplicationCommands(app.ID, guild, discordgo.WithContext(ctx))
		if err != nil {
			errs = append(errs, fmt.Errorf("list commands of %q: %w", guild, err))
			continue
		}
		if sameCommands(have, want) {
			a.log.Debug("discord: application commands up to date", "guild", guild)
			continue
		}
		if _, err := a.session.ApplicationCommandBulkOverwrite(app.ID, guild, want, discordgo.WithContext(ctx)); err != nil {
			errs = append(errs, fmt.Errorf("register commands in %q: %w", guild, err))
			continue
		}
		a.log.Info("discord: application commands registered", "guild", guild, "count", len(want))
	}
	return errors.Join(errs...)
}

// sameCommands compares what is registered with what would be, on the
// fields this adapter sets.
func sameCommands(have, want []*discordgo.ApplicationCommand) bool {
	if len(have) != len(want) {
		return false
	}
	byName := map[string]*discordgo.ApplicationCommand{}
	for _, c := range have {
		byName[c.Name] = c
	}
	for _, w := range want {
		h := byName[w.Name]
		if h == nil || h.Description != w.Description || len(h.Options) != len(w.Options) {
			return false
		}
		for i, wo := range w.Options {
			ho := h.Options[i]
			if ho.Type != wo.Type || ho.Name != wo.Name || ho.Description != wo.Description ||
				ho.Required != wo.Required || ho.Autocomplete != wo.Autocomplete {
				return false
			}
		}
	}
	return true
}

// onInteraction is the INTERACTION_CREATE handler; it runs in discordgo's
// read loop, so the REST calls go to goroutines Run waits for. A slash
// command is deferred at once (Discord wants an answer within 3 s) and
// queued like a message; an autocomplete is answered from the Dream log.
func (a *Adapter) onInteraction(ctx context.Context, i *discordgo.Interaction, out *channels.Delivery[item]) {
	if i == nil || !a.seen.Add(interactionPrefix+i.ID) {
		return
	}
	switch i.Type {
	case discordgo.InteractionApplicationCommand:
		it := &interaction{i: i, created: a.now(), acked: make(chan struct{})}
		a.rememberInteraction(it)
		resp := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}
		if i.ApplicationCommandData().Name == "stop" {
			// A /stop that stops a turn is answered by that turn
			// ("Stopped." under the message it was answering), not on the
			// interaction, whose "thinking…" would then never end. A later
			// answer ("Nothing is running here.") replaces this one.
			resp = &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
				Data: &discordgo.InteractionResponseData{Content: "Stopping…"}}
		}
		a.bg.Go(func() {
			defer close(it.acked)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.tune.streamCallTimeout)
			defer cancel()
			if resp.Type == discordgo.InteractionResponseDeferredChannelMessageWithSource && a.answersPrivately(rctx, i) {
				// Whether the answer is ephemeral is fixed here: the
				// edit that replaces "thinking…" cannot change it.
				it.ephemeral = true
				resp.Data = &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral}
			}
			err := a.session.InteractionRespond(i, resp, discordgo.WithContext(rctx))
			if err != nil {
				a.log.Warn("discord: deferring a slash command failed", "interaction", i.ID, "err", err)
				return
			}
			a.keepInteraction(it)
		})
		out.Put(ctx, item{i: i})
	case discordgo.InteractionApplicationCommandAutocomplete:
		a.bg.Go(func() { a.autocomplete(context.WithoutCancel(ctx), i) })
	}
}

// autocomplete offers recent Dream commits whose sha or subject matches
// what was typed, of those the asker's audience may see: none when it
// cannot be told.
func (a *Adapter) autocomplete(ctx context.Context, i *discordgo.Interaction) {
	var typed string
	for _, o := range i.ApplicationCommandData().Options {
		if o.Focused {
			typed, _ = o.Value.(string)
		}
	}
	typed = strings.ToLower(strings.TrimSpace(typed))
	choices := []*discordgo.ApplicationCommandOptionChoice{}
	if aud, ok := a.interactionAudience(ctx, i); ok && a.dreamLog != nil {
		lctx, cancel := context.WithTimeout(ctx, a.tune.autocompleteTimeout)
		commits, err := a.dreamLog(lctx, aud, maxChoices)
		cancel()
		if err != nil {
			a.log.Warn("discord: listing Dream commits for autocomplete failed", "err", err)
		}
		for _, c := range commits {
			if typed != "" && !strings.HasPrefix(strings.ToLower(c.SHA), typed) && !strings.Contains(strings.ToLower(c.Subject), typed) {
				continue
			}
			short := c.SHA[:min(8, len(c.SHA))]
			choices = append(choices, &discordgo.ApplicationCommandOptionChoice{
				Name: fitText(short + " " + c.Subject), Value: c.SHA,
			})
			if len(choices) == maxChoices {
				break
			}
		}
	}
	rctx, cancel := context.WithTimeout(ctx, a.tune.streamCallTimeout)
	defer cancel()
	err := a.session.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionApplicationCommandAutocompleteResult,
		Data: &discordgo.InteractionResponseData{Choices: choices},
	}, discordgo.WithContext(rctx))
	if err != nil {
		a.log.Debug("discord: autocomplete answer failed", "interaction", i.ID, "err", err)
	}
}

// interactionUser is who ran a slash command (nil when Discord said not).
func interactionUser(i *discordgo.Interaction) *discordgo.User {
	if i.Member != nil && i.Member.User != nil {
		return i.Member.User
	}
	return i.User
}

// place is where a message was said or a slash command run: the
// conversation's channel (a thread's parent), its thread, what is known of
// the channel, and whether the bot is apart from it (a person's own
// installation of the app reached a command; see apart).
type place struct {
	chatID, threadID string
	info             chanInfo
	known, apart     bool
}

// interactionPlace says where a slash command was run. Where the bot is
// apart it cannot read the channel, and does not ask.
func (a *Adapter) interactionPlace(ctx context.Context, i *discordgo.Interaction) place {
	p := place{chatID: i.ChannelID, known: true, apart: apart(i)}
	if i.GuildID != "" && !p.apart {
		p.info, p.known = a.channelInfo(ctx, i.ChannelID)
		if p.info.thread && p.info.parentID != "" {
			p.chatID, p.threadID = p.info.parentID, i.ChannelID
		}
	}
	return p
}

// placeAudience is the audience of the conversation at p, for user.
func (a *Adapter) placeAudience(ctx context.Context, i *discordgo.Interaction, p place, user string) (audience.Audience, bool) {
	if p.apart {
		return a.apartAudience(i, user)
	}
	return a.audienceOf(ctx, i.GuildID, i.ChannelID, user, p.info, p.known)
}

// interactionAudience is the audience of the conversation an interaction
// came from; ok is false when it cannot be told.
func (a *Adapter) interactionAudience(ctx context.Context, i *discordgo.Interaction) (audience.Audience, bool) {
	user := interactionUser(i)
	if user == nil {
		return audience.Audience{}, false
	}
	return a.placeAudience(ctx, i, a.interactionPlace(ctx, i), user.ID)
}

// allowListRefusal is what a slash command that allowFrom or allowChannels
// refuses is answered, "" when they let it through.
func (a *Adapter) allowListRefusal(i *discordgo.Interaction, user *discordgo.User, chatID, threadID string) string {
	if a.allowFrom != nil && !a.allowFrom[user.ID] {
		return channels.NotAllowedNotice
	}
	if i.GuildID != "" && a.allowChannels != nil && !a.allowChannels[i.ChannelID] && !(threadID != "" && a.allowChannels[chatID]) {
		return "I don't answer in this channel."
	}
	return ""
}

// answersPrivately reports a slash command whose answer only the person
// who ran it sees: a private command, or one the allow lists refuse (the
// refusal is theirs, not the channel's).
func (a *Adapter) answersPrivately(ctx context.Context, i *discordgo.Interaction) bool {
	if privateCommand(i.ApplicationCommandData().Name) {
		return true
	}
	user := interactionUser(i)
	if user == nil {
		return false
	}
	p := a.interactionPlace(ctx, i)
	return a.allowListRefusal(i, user, p.chatID, p.threadID) != ""
}

// acceptInteraction turns a slash command into the Inbound "/name arg",
// after allowFrom and allowChannels; the mention policy does not apply (a
// slash command is addressed to the bot by nature).
func (a *Adapter) acceptInteraction(ctx context.Context, i *discordgo.Interaction, notify func(context.Context, channels.Outbound)) (channels.Inbound, bool) {
	user := interactionUser(i)
	if user == nil {
		return channels.Inbound{}, false
	}
	msgID := interactionPrefix + i.ID
	p := a.interactionPlace(ctx, i)
	chatID, threadID := p.chatID, p.threadID
	key := Name + ":" + chatID
	if threadID != "" {
		key += ":thread:" + threadID
	}
	refuse := func(text string) (channels.Inbound, bool) {
		// The person sees "thinking…" until something answers it.
		notify(ctx, channels.Outbound{Channel: Name, ChatID: chatID, ThreadID: threadID, SessionKey: key,
			ReplyTo: msgID, Kind: channels.KindError, Text: text})
		return channels.Inbound{}, false
	}
	if text := a.allowListRefusal(i, user, chatID, threadID); text != "" {
		a.log.Info("discord: slash command refused by the allow lists", "user", user.ID, "channel", i.ChannelID)
		return refuse(text)
	}
	aud, ok := a.placeAudience(ctx, i, p, user.ID)
	if !ok {
		return refuse("I can't tell who can read this conversation, so I won't answer here.")
	}
	data := i.ApplicationCommandData()
	text := "/" + data.Name
	for _, o := range data.Options {
		if v, ok := o.Value.(string); ok && strings.TrimSpace(v) != "" {
			text += " " + strings.TrimSpace(v)
		}
	}
	name := user.Username
	if i.Member != nil && i.Member.Nick != "" {
		name = i.Member.Nick
	} else if user.GlobalName != "" {
		name = user.GlobalName
	}
	return channels.Inbound{
		Channel: Name, ChatID: chatID, ThreadID: threadID, SessionKey: key,
		SenderID: user.ID, SenderName: name, Audience: aud, MessageID: msgID, Text: text, Time: time.Now(),
	}, true
}

func (a *Adapter) rememberInteraction(it *interaction) {
	a.ixMu.Lock()
	defer a.ixMu.Unlock()
	if len(a.interactions) >= maxInteractions {
		for k, old := range a.interactions {
			if a.now().Sub(old.created) > interactionTTL {
				delete(a.interactions, k)
			}
		}
		if len(a.interactions) >= maxInteractions {
			clear(a.interactions)
		}
	}
	a.interactions[interactionPrefix+it.i.ID] = it
}

// interactionFor returns the interaction a reply answers: this process's
// own, or one deferred by another process (or before a restart) and kept
// in the handles; nil when replyTo is a message, or the interaction's
// token has expired.
func (a *Adapter) interactionFor(replyTo string) *interaction {
	if !strings.HasPrefix(replyTo, interactionPrefix) {
		return nil
	}
	a.ixMu.Lock()
	it := a.interactions[replyTo]
	a.ixMu.Unlock()
	if it != nil {
		if a.now().Sub(it.created) > interactionTTL {
			return nil
		}
		return it
	}
	return a.keptInteraction(replyTo)
}

// sendInteraction posts parts through the interaction's webhook: the first
// message of the answer replaces the deferred response, later ones follow
// up. It waits for the deferral to have been answered.
func (a *Adapter) sendInteraction(ctx context.Context, r *channels.Retry, it *interaction, parts []string) error {
	select {
	case <-it.acked:
	case <-ctx.Done():
		return ctx.Err()
	}
	mentions := &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers}}
	for n, part := range parts {
		if strings.TrimSpace(part) == "" {
			continue
		}
		it.mu.Lock()
		original := !it.originalSet
		it.mu.Unlock()
		err := a.retry(ctx, r, func(ctx context.Context) error {
			if original {
				content := part
				_, err := a.session.InteractionResponseEdit(it.i, &discordgo.WebhookEdit{Content: &content, AllowedMentions: mentions}, discordgo.WithContext(ctx))
				return err
			}
			params := &discordgo.WebhookParams{Content: part, AllowedMentions: mentions}
			if it.ephemeral {
				params.Flags = discordgo.MessageFlagsEphemeral
			}
			_, err := a.session.FollowupMessageCreate(it.i, true, params, discordgo.WithContext(ctx))
			return err
		})
		if err != nil {
			return fmt.Errorf("send part %d/%d (%d chars) of slash command answer: %w", n+1, len(parts), len(part), err)
		}
		if original {
			it.mu.Lock()
			it.originalSet = true
			it.mu.Unlock()
		}
		a.usedInteraction(it)
	}
	return nil
}

// CommandForm is how a command is typed in Discord: as everywhere, by its
// name (a slash command or after a mention).
func (a *Adapter) CommandForm(name string) string { return name }

// CommandNote tells /help how commands are typed in Discord.
func (a *Adapter) CommandNote() string {
	mention := "@bot /dream-log"
	if bot := a.bot(); bot != "" {
		mention = "<@" + bot + "> /dream-log"
	}
	if len(a.commands) == 0 {
		return "In Discord, mention me first: " + mention + " (in a direct message, just /dream-log)."
	}
	return "In Discord, type / and pick one of my commands (options like sha autocomplete), or mention me first: " + mention + "."
}

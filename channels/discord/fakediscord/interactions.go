package fakediscord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Interaction types and callback types (Discord's numbering).
const (
	InteractionApplicationCommand = 2
	InteractionAutocomplete       = 4

	CallbackMessage      = 4 // CHANNEL_MESSAGE_WITH_SOURCE
	CallbackDeferred     = 5 // DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE
	CallbackAutocomplete = 8 // APPLICATION_COMMAND_AUTOCOMPLETE_RESULT
)

// FlagEphemeral is the message flag (1<<6) that shows a message to the
// person who ran the command only. On a deferral it makes the original
// response (the edit replacing "thinking…") ephemeral; on a follow-up,
// that message.
const FlagEphemeral = 64

// interactionTTL is how long an interaction token accepts follow-ups.
const interactionTTL = 15 * time.Minute

// Command is a registered application command, as the client sent it.
type Command struct {
	Name        string
	Description string
	Options     []CommandOption
}

// CommandOption is one option of a registered command.
type CommandOption struct {
	Type         int
	Name         string
	Description  string
	Required     bool
	Autocomplete bool
}

// Interaction is a slash command use (or an autocomplete request) injected
// with InjectInteraction.
type Interaction struct {
	Type      int // InteractionApplicationCommand unless set
	ChannelID string
	User      User
	Command   string
	// Options are the string options given; Focused names the one being
	// typed for an autocomplete.
	Options map[string]string
	Focused string
}

// Callback is one POST /interactions/{id}/{token}/callback.
type Callback struct {
	InteractionID string
	Type          int
	Content       string
	Choices       []Choice
	Flags         int // data.flags
}

// Choice is one autocomplete choice.
type Choice struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Followup is one message sent through an interaction's webhook: the edit
// of the deferred original response, or a follow-up message.
type Followup struct {
	InteractionID string
	Original      bool // PATCH .../messages/@original
	Content       string
	// Ephemeral: only the person who ran the command sees it. The
	// original response is as its callback made it (the flags of the
	// deferral or of the message), whatever the edit says; a follow-up is
	// as its own flags say.
	Ephemeral bool
}

type interaction struct {
	id, token, channelID string
	created              time.Time
	acked                bool
	ephemeral            bool // the callback's flags had FlagEphemeral
}

var commandName = regexp.MustCompile(`^[-_\p{Ll}\p{N}]{1,32}$`)

// CommandPuts counts the bulk overwrites of commands (global and per guild).
func (s *Server) CommandPuts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commandPuts
}

// Commands returns the commands registered globally (guild "") or for a
// guild.
func (s *Server) Commands(guild string) []Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Command
	for _, raw := range s.commands[guild] {
		var c Command
		c.Name, _ = raw["name"].(string)
		c.Description, _ = raw["description"].(string)
		opts, _ := raw["options"].([]any)
		for _, o := range opts {
			m, _ := o.(map[string]any)
			var co CommandOption
			t, _ := m["type"].(float64)
			co.Type = int(t)
			co.Name, _ = m["name"].(string)
			co.Description, _ = m["description"].(string)
			co.Required, _ = m["required"].(bool)
			co.Autocomplete, _ = m["autocomplete"].(bool)
			c.Options = append(c.Options, co)
		}
		out = append(out, c)
	}
	return out
}

// Callbacks returns the interaction callbacks, in order.
func (s *Server) Callbacks() []Callback {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Callback(nil), s.callbacks...)
}

// Followups returns the webhook messages of interactions, in order.
func (s *Server) Followups() []Followup {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Followup(nil), s.followups...)
}

// WaitCallbacks waits until n interaction callbacks arrived.
func (s *Server) WaitCallbacks(ctx context.Context, n int) ([]Callback, error) {
	var out []Callback
	err := s.waitFor(ctx, func() bool {
		if len(s.callbacks) < n {
			return false
		}
		out = append([]Callback(nil), s.callbacks...)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("wait for %d interaction callbacks: %w", n, err)
	}
	return out, nil
}

// WaitFollowups waits until n webhook messages of interactions arrived.
func (s *Server) WaitFollowups(ctx context.Context, n int) ([]Followup, error) {
	var out []Followup
	err := s.waitFor(ctx, func() bool {
		if len(s.followups) < n {
			return false
		}
		out = append([]Followup(nil), s.followups...)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("wait for %d interaction follow-ups: %w", n, err)
	}
	return out, nil
}

// InjectInteraction dispatches INTERACTION_CREATE for a use of a registered
// command, as Discord does when someone runs it; it returns the
// interaction id.
func (s *Server) InjectInteraction(in Interaction) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[in.ChannelID]
	if !ok {
		return "", fmt.Errorf("inject interaction: unknown channel %q", in.ChannelID)
	}
	var cmd map[string]any
	for _, list := range []string{c.GuildID, ""} {
		for _, raw := range s.commands[list] {
			if raw["name"] == in.Command {
				cmd = raw
			}
		}
		if cmd != nil {
			break
		}
	}
	if cmd == nil {
		return "", fmt.Errorf("inject interaction: command %q is not registered", in.Command)
	}
	if in.Type == 0 {
		in.Type = InteractionApplicationCommand
	}
	if in.User.Username == "" {
		in.User.Username = in.User.ID
	}
	s.users[in.User.ID] = in.User
	id := s.newIDLocked()
	token := "itoken-" + id
	s.interactions[id] = &interaction{id: id, token: token, channelID: in.ChannelID, created: time.Now()}
	opts := []any{}
	for name, value := range in.Options {
		o := map[string]any{"name": name, "type": 3, "value": value}
		if name == in.Focused {
			o["focused"] = true
		}
		opts = append(opts, o)
	}
	obj := map[string]any{
		"id": id, "application_id": s.cfg.BotID, "type": in.Type, "token": token, "version": 1,
		"channel_id": in.ChannelID, "locale": "en-US", "app_permissions": "274877975552",
		"data": map[string]any{"id": cmd["id"], "name": in.Command, "type": 1, "options": opts},
	}
	where, owners := s.interactionContextLocked(c, in.User.ID)
	if err := usableIn(cmd, where, owners); err != nil {
		return "", fmt.Errorf("inject interaction: /%s: %w", in.Command, err)
	}
	obj["context"], obj["authorizing_integration_owners"] = where, owners
	if c.GuildID != "" {
		obj["guild_id"] = c.GuildID
		obj["member"] = map[string]any{"user": s.userObjectLocked(in.User.ID), "roles": s.memberRolesLocked(c.GuildID, in.User.ID),
			"joined_at": "2024-01-01T00:00:00Z", "deaf": false, "mute": false, "permissions": "0"}
	} else {
		obj["user"] = s.userObjectLocked(in.User.ID)
	}
	route := c.GuildID
	if !s.joinedLocked(route) {
		route = "" // no shard holds a guild the bot is not in
	}
	s.dispatchLocked(route, "INTERACTION_CREATE", obj)
	return id, nil
}

// Interaction contexts (Discord's numbering): where a command was run.
const (
	ContextGuild          = 0 // a guild channel
	ContextBotDM          = 1 // a DM with the bot
	ContextPrivateChannel = 2 // a DM or group DM between people, the bot not in it
)

// Installation types, the keys of authorizing_integration_owners.
const (
	installGuild = "0"
	installUser  = "1"
)

// interactionContextLocked is where a command run in c by user comes from,
// as Discord tells it: the context, and the installations that let the
// command run there. A guild the bot is in authorised it by the guild's
// installation; anywhere else the bot is not (a guild that did not add
// it, a DM between people) only the user's own installation of the app
// can have.
func (s *Server) interactionContextLocked(c Channel, user string) (int, map[string]any) {
	switch {
	case c.GuildID != "" && s.joinedLocked(c.GuildID):
		return ContextGuild, map[string]any{installGuild: c.GuildID}
	case c.GuildID != "":
		return ContextGuild, map[string]any{installUser: user}
	case s.botSeesLocked(c):
		return ContextBotDM, map[string]any{installGuild: "0"}
	}
	return ContextPrivateChannel, map[string]any{installUser: user}
}

// usableIn refuses a command whose registration excludes the context or
// the installation it would run by ("contexts", "integration_types";
// absent, every one is allowed, as for an app installable both ways).
func usableIn(cmd map[string]any, where int, owners map[string]any) error {
	if list, ok := cmd["contexts"].([]any); ok && !slices.Contains(list, any(float64(where))) {
		return fmt.Errorf("not available in context %d", where)
	}
	if _, byGuild := owners[installGuild]; !byGuild {
		if list, ok := cmd["integration_types"].([]any); ok && !slices.Contains(list, any(float64(1))) {
			return errors.New("not available to user installations")
		}
	}
	return nil
}

// getApplication answers GET /oauth2/applications/@me.
func (s *Server) getApplication(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"id": s.cfg.BotID, "name": s.cfg.BotName, "bot_public": false,
		"bot": s.userObjectLocked(s.cfg.BotID), "flags": 0})
}

func (s *Server) commandsScope(w http.ResponseWriter, r *http.Request) (string, bool) {
	if r.PathValue("app") != s.cfg.BotID {
		writeError(w, http.StatusForbidden, 50001, "Missing Access")
		return "", false
	}
	return r.PathValue("guild"), true
}

// getCommands answers GET /applications/{app}/commands and the guild form.
func (s *Server) getCommands(w http.ResponseWriter, r *http.Request) {
	guild, ok := s.commandsScope(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []any{}
	for _, c := range s.commands[guild] {
		out = append(out, c)
	}
	writeJSON(w, http.StatusOK, out)
}

// putCommands answers PUT /applications/{app}/commands (bulk overwrite),
// validating what Discord validates.
func (s *Server) putCommands(w http.ResponseWriter, r *http.Request) {
	guild, ok := s.commandsScope(w, r)
	if !ok {
		return
	}
	var list []map[string]any
	if err := json.NewDecoder(r.Body).Decode(&list); err != nil {
		writeError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	if len(list) > 100 {
		writeError(w, http.StatusBadRequest, 30032, "Maximum number of application commands reached (100)")
		return
	}
	for i, c := range list {
		name, _ := c["name"].(string)
		desc, _ := c["description"].(string)
		if !commandName.MatchString(name) || desc == "" || utf8.RuneCountInString(desc) > 100 {
			writeError(w, http.StatusBadRequest, 50035, fmt.Sprintf("Invalid Form Body (%d: name or description)", i))
			return
		}
		opts, _ := c["options"].([]any)
		for _, o := range opts {
			m, _ := o.(map[string]any)
			on, _ := m["name"].(string)
			od, _ := m["description"].(string)
			if !commandName.MatchString(on) || od == "" || utf8.RuneCountInString(od) > 100 {
				writeError(w, http.StatusBadRequest, 50035, fmt.Sprintf("Invalid Form Body (%d: option)", i))
				return
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, 0, len(list))
	for _, c := range list {
		c["id"] = s.newIDLocked()
		c["application_id"] = s.cfg.BotID
		c["version"] = s.newIDLocked()
		if c["type"] == nil {
			c["type"] = 1
		}
		if guild != "" {
			c["guild_id"] = guild
		}
		out = append(out, c)
	}
	s.commands[guild] = out
	s.commandPuts++
	s.notifyLocked()
	writeJSON(w, http.StatusOK, out)
}

// postCallback answers POST /interactions/{id}/{token}/callback: one
// response per interaction, within its lifetime.
func (s *Server) postCallback(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Type int `json:"type"`
		Data *struct {
			Content string   `json:"content"`
			Choices []Choice `json:"choices"`
			Flags   int      `json:"flags"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.interactions[r.PathValue("id")]
	switch {
	case !ok || it.token != r.PathValue("token"):
		writeError(w, http.StatusNotFound, 10062, "Unknown interaction")
		return
	case it.acked:
		writeError(w, http.StatusBadRequest, 40060, "Interaction has already been acknowledged.")
		return
	}
	cb := Callback{InteractionID: it.id, Type: body.Type}
	if body.Data != nil {
		cb.Content = body.Data.Content
		cb.Choices = body.Data.Choices
		cb.Flags = body.Data.Flags
		if len(cb.Choices) > 25 {
			writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body (choices: at most 25)")
			return
		}
	}
	switch body.Type {
	case CallbackMessage, CallbackDeferred, CallbackAutocomplete:
	default:
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body (type)")
		return
	}
	it.acked = true
	it.ephemeral = cb.Flags&FlagEphemeral != 0
	s.callbacks = append(s.callbacks, cb)
	s.notifyLocked()
	w.WriteHeader(http.StatusNoContent)
}

// webhookMessage answers the interaction webhook: PATCH
// /webhooks/{app}/{token}/messages/@original and POST /webhooks/{app}/{token}.
func (s *Server) webhookMessage(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Content string `json:"content"`
		Flags   int    `json:"flags"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	original := r.Method == http.MethodPatch
	s.mu.Lock()
	defer s.mu.Unlock()
	var it *interaction
	for _, x := range s.interactions {
		if x.token == r.PathValue("token") {
			it = x
		}
	}
	switch {
	case r.PathValue("app") != s.cfg.BotID || it == nil || time.Since(it.created) > interactionTTL:
		writeError(w, http.StatusNotFound, 10015, "Unknown Webhook")
		return
	case !it.acked:
		writeError(w, http.StatusBadRequest, 40060, "Interaction has not been acknowledged.")
		return
	case strings.TrimSpace(body.Content) == "":
		writeError(w, http.StatusBadRequest, 50006, "Cannot send an empty message")
		return
	case utf8.RuneCountInString(body.Content) > maxContent:
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body (content: Must be 2000 or fewer in length.)")
		return
	}
	ephemeral := body.Flags&FlagEphemeral != 0
	if original {
		ephemeral = it.ephemeral // an edit cannot change it
	}
	s.followups = append(s.followups, Followup{InteractionID: it.id, Original: original, Content: body.Content, Ephemeral: ephemeral})
	s.notifyLocked()
	id := s.newIDLocked()
	if original {
		id = "@original-" + it.id
	}
	flags := 0
	if ephemeral {
		flags = FlagEphemeral
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "channel_id": it.channelID, "content": body.Content, "flags": flags,
		"author": s.userObjectLocked(s.cfg.BotID), "type": 20, "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"attachments": []any{}, "embeds": []any{}, "mentions": []any{}, "mention_roles": []any{}})
}

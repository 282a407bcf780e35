package fakediscord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// AddGuild registers a guild and its channels (threads included); for a
// guild it knows, it adds or replaces channels. A guild added before the
// bot connects is announced with GUILD_CREATE after READY; one added later
// is dispatched at once.
func (s *Server) AddGuild(id string, chans ...Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.guilds, id) {
		s.guilds = append(s.guilds, id)
	}
	for _, c := range chans {
		c.GuildID = id
		s.channels[c.ID] = c
	}
	if sh := s.shards[ShardOf(id, s.shardCount)]; sh != nil && sh.conn != nil && sh.conn.isReady() {
		s.dispatchLocked(id, "GUILD_CREATE", s.guildObjectLocked(id))
	}
}

// AddChannel registers a channel silently: REST knows it (GET
// /channels/{id}), the gateway announces nothing. Use it for DMs and for
// threads the client has to look up.
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[c.ID] = c
}

// UpdateChannel replaces what the fake knows of a channel (its
// overwrites: a channel made private) and dispatches CHANNEL_UPDATE, or
// THREAD_UPDATE for a thread.
func (s *Server) UpdateChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[c.ID] = c
	event := "CHANNEL_UPDATE"
	if isThread(c.Type) {
		event = "THREAD_UPDATE"
	}
	s.dispatchLocked(c.GuildID, event, channelObject(c))
}

// SetEveryone sets the permissions of guild's @everyone role (its id is
// the guild's): without PermViewChannel, only channels that allow it to
// @everyone (or to a role) are seen. For a guild already added it
// dispatches GUILD_ROLE_UPDATE.
func (s *Server) SetEveryone(guild string, perms int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.everyone == nil {
		s.everyone = map[string]int64{}
	}
	s.everyone[guild] = perms
	if slices.Contains(s.guilds, guild) {
		s.dispatchLocked(guild, "GUILD_ROLE_UPDATE", map[string]any{"guild_id": guild, "role": s.everyoneRoleLocked(guild)})
	}
}

func (s *Server) everyoneRoleLocked(guild string) map[string]any {
	perms, ok := s.everyone[guild]
	if !ok {
		perms = DefaultEveryone
	}
	return map[string]any{"id": guild, "name": "@everyone", "managed": false, "mentionable": false,
		"permissions": strconv.FormatInt(perms, 10), "position": 0, "color": 0, "hoist": false}
}

// FailChannelLookup makes GET /channels/{id} answer status for channel id
// (403 Missing Access, 500, …) until it is called again with status 0.
func (s *Server) FailChannelLookup(id string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lookupFails == nil {
		s.lookupFails = map[string]int{}
	}
	if status == 0 {
		delete(s.lookupFails, id)
		return
	}
	s.lookupFails[id] = status
}

// CreateThread registers a thread and dispatches THREAD_CREATE.
func (s *Server) CreateThread(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Type == 0 {
		c.Type = ChannelPublicThread
	}
	if c.GuildID == "" {
		c.GuildID = s.channels[c.ParentID].GuildID
	}
	s.channels[c.ID] = c
	obj := channelObject(c)
	obj["newly_created"] = true
	s.dispatchLocked(c.GuildID, "THREAD_CREATE", obj)
}

// InjectMessage posts m as a user would: the message is stored and a
// MESSAGE_CREATE is dispatched (queued for replay when no client is
// connected). It returns the message id.
func (s *Server) InjectMessage(m Message) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[m.ChannelID]
	if !ok {
		return "", fmt.Errorf("inject message: unknown channel %q", m.ChannelID)
	}
	if !s.botSeesLocked(c) {
		// Discord sends the bot nothing of a guild it is not in, or of a
		// DM between other people.
		return "", fmt.Errorf("inject message: the bot is not in channel %q", m.ChannelID)
	}
	if m.ID == "" {
		m.ID = s.newIDLocked()
	}
	if m.Author.Username == "" {
		m.Author.Username = m.Author.ID
	}
	s.users[m.Author.ID] = m.Author
	obj := s.messageObjectLocked(m, c)
	if c.GuildID != "" && s.shardLocked(ShardOf(c.GuildID, s.shardCount)).intents&IntentMessageContent == 0 && !mentions(obj, s.cfg.BotID) && m.Author.ID != s.cfg.BotID {
		// Without the privileged intent Discord blanks the content of guild
		// messages that do not mention the bot.
		obj["content"] = ""
	}
	s.storeLocked(obj)
	s.dispatchLocked(c.GuildID, "MESSAGE_CREATE", obj)
	return m.ID, nil
}

// Redeliver dispatches MESSAGE_CREATE for an already delivered message again,
// as Discord may after a resume.
func (s *Server) Redeliver(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.messages[id]
	if !ok {
		return fmt.Errorf("redeliver: unknown message %q", id)
	}
	g, _ := obj["guild_id"].(string)
	s.dispatchLocked(g, "MESSAGE_CREATE", obj)
	return nil
}

// Inject429 makes the next POST /channels/{id}/messages answer 429 with this
// retry_after (global when global is set), without creating the message.
func (s *Server) Inject429(retryAfter time.Duration, global bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, failure{status: http.StatusTooManyRequests, retryAfter: retryAfter, global: global})
}

// RateLimitChannel answers the next n POST /channels/{id}/messages to
// channelID (n < 0: every one, until RateLimitChannel is called again) with
// a 429 of this retry_after, as Discord limits each channel's message route
// on its own; sends to other channels go through. n == 0 ends the storm.
// Failures queued by Inject429 and InjectSendError come first.
func (s *Server) RateLimitChannel(channelID string, n int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == 0 {
		delete(s.storms, channelID)
		return
	}
	if s.storms == nil {
		s.storms = map[string]*storm{}
	}
	s.storms[channelID] = &storm{left: n, retryAfter: retryAfter}
}

// InjectSendError makes the next POST /channels/{id}/messages answer status.
// With afterCreate the message is created first and only the answer is lost,
// as when a response times out.
func (s *Server) InjectSendError(status int, afterCreate bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, failure{status: status, afterCreate: afterCreate})
}

// DropConnection cuts the current websocket (of shard 0) without a close
// frame, as a network failure would. The session stays resumable.
func (s *Server) DropConnection() error {
	s.mu.Lock()
	sh := s.shardLocked(0)
	c := sh.conn
	sh.conn = nil
	s.mu.Unlock()
	if c == nil {
		return errors.New("drop connection: no client connected")
	}
	c.abort()
	return nil
}

// RequestReconnect sends op 7 RECONNECT on the current websocket.
func (s *Server) RequestReconnect() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.shardLocked(0).conn
	if c == nil {
		return errors.New("request reconnect: no client connected")
	}
	c.enqueue(mustJSON(map[string]any{"op": 7, "d": nil}))
	return nil
}

// InvalidateSession makes the next RESUME fail with op 9 INVALID_SESSION
// (d=false), so the client has to IDENTIFY again.
func (s *Server) InvalidateSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shardLocked(0).invalidateNext = true
}

// ReplayOverlap makes the next successful RESUME also replay the last n
// dispatches the client had already received, as Discord's at-least-once
// delivery may.
func (s *Server) ReplayOverlap(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shardLocked(0).overlap = n
}

// StallGateway makes new websocket connections hang before HELLO while on,
// as an overloaded or half-broken gateway would.
func (s *Server) StallGateway(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stall = on
}

// HoldTyping makes typing calls wait, unanswered, until ReleaseTyping (or
// until the client gives up on them), as a slow Discord would.
func (s *Server) HoldTyping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.typingGate == nil {
		s.typingGate = make(chan struct{})
	}
}

// ReleaseTyping answers the held typing calls and stops holding new ones.
func (s *Server) ReleaseTyping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.typingGate != nil {
		close(s.typingGate)
		s.typingGate = nil
	}
}

// WaitTypingHeld waits until n typing calls are held at once.
func (s *Server) WaitTypingHeld(ctx context.Context, n int) error {
	err := s.waitFor(ctx, func() bool { return s.typingHeld >= n })
	if err != nil {
		return fmt.Errorf("wait for %d held typing calls: %w", n, err)
	}
	return nil
}

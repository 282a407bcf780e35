package fakediscord

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"time"
)

var (
	mentionRE     = regexp.MustCompile(`<@!?([0-9A-Za-z_]+)>`)
	roleMentionRE = regexp.MustCompile(`<@&([0-9A-Za-z_]+)>`)
)

// BotRoleID is the id of the role Discord makes for the bot in a guild it
// joins ("managed", tagged with the bot's id); GUILD_CREATE carries it and
// the bot's member holding it.
func (s *Server) BotRoleID(guild string) string { return "R" + guild }

func (s *Server) userObjectLocked(id string) map[string]any {
	u, ok := s.users[id]
	if !ok {
		u = User{ID: id, Username: id}
	}
	obj := map[string]any{"id": u.ID, "username": u.Username, "global_name": nil, "discriminator": "0", "avatar": nil}
	if u.GlobalName != "" {
		obj["global_name"] = u.GlobalName
	}
	if u.Bot {
		obj["bot"] = true
	}
	return obj
}

func (s *Server) messageObjectLocked(m Message, c Channel) map[string]any {
	seen := map[string]bool{}
	var ments []any
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			ments = append(ments, s.userObjectLocked(id))
		}
	}
	for _, sub := range mentionRE.FindAllStringSubmatch(m.Content, -1) {
		add(sub[1])
	}
	for _, id := range m.Mentions {
		add(id)
	}
	if ments == nil {
		ments = []any{}
	}
	typ := m.Type
	if m.ReplyTo != "" && typ == MessageDefault {
		typ = MessageReply
	}
	atts := []any{}
	for _, f := range m.Attachments {
		id := s.newIDLocked()
		s.files[id] = f
		size := f.Size
		if size == 0 {
			size = len(f.Data)
		}
		u := s.http.URL + "/attachments/" + m.ChannelID + "/" + id + "/" + url.PathEscape(f.Name)
		att := map[string]any{"id": id, "filename": f.Name, "size": size, "url": u, "proxy_url": u}
		if f.ContentType != "" {
			att["content_type"] = f.ContentType
		}
		atts = append(atts, att)
	}
	obj := map[string]any{
		"id":               m.ID,
		"channel_id":       m.ChannelID,
		"author":           s.userObjectLocked(m.Author.ID),
		"content":          m.Content,
		"timestamp":        time.Now().UTC().Format(time.RFC3339Nano),
		"edited_timestamp": nil,
		"tts":              false,
		"mention_everyone": false,
		"mentions":         ments,
		"mention_roles":    roleMentions(m.Content),
		"attachments":      atts,
		"embeds":           []any{},
		"pinned":           false,
		"type":             typ,
	}
	if c.GuildID != "" {
		obj["guild_id"] = c.GuildID
		obj["member"] = map[string]any{"roles": s.memberRolesLocked(c.GuildID, m.Author.ID), "joined_at": "2024-01-01T00:00:00Z", "deaf": false, "mute": false}
	}
	if m.ReplyTo != "" {
		ref := map[string]any{"type": 0, "message_id": m.ReplyTo, "channel_id": m.ChannelID}
		if c.GuildID != "" {
			ref["guild_id"] = c.GuildID
		}
		obj["message_reference"] = ref
		if orig, ok := s.messages[m.ReplyTo]; ok {
			// Discord nests one level only.
			cp := make(map[string]any, len(orig))
			for k, v := range orig {
				cp[k] = v
			}
			delete(cp, "referenced_message")
			obj["referenced_message"] = cp
		} else {
			obj["referenced_message"] = nil
		}
	}
	return obj
}

// storeLocked keeps a message object for REST reads and replies.
func (s *Server) storeLocked(obj map[string]any) {
	id, _ := obj["id"].(string)
	ch, _ := obj["channel_id"].(string)
	if _, ok := s.messages[id]; !ok {
		s.history[ch] = append(s.history[ch], id)
	}
	s.messages[id] = obj
}

// roleMentions lists the roles mentioned in content, as Discord fills
// mention_roles.
func roleMentions(content string) []any {
	out := []any{}
	for _, sub := range roleMentionRE.FindAllStringSubmatch(content, -1) {
		out = append(out, sub[1])
	}
	return out
}

func mentions(obj map[string]any, id string) bool {
	ms, _ := obj["mentions"].([]any)
	for _, m := range ms {
		if u, ok := m.(map[string]any); ok && u["id"] == id {
			return true
		}
	}
	return false
}

func channelObject(c Channel) map[string]any {
	obj := map[string]any{"id": c.ID, "type": c.Type, "name": c.Name}
	if c.GuildID != "" {
		obj["guild_id"] = c.GuildID
	}
	if c.ParentID != "" {
		obj["parent_id"] = c.ParentID
	}
	if len(c.Recipients) > 0 {
		rs := []any{}
		for _, id := range c.Recipients {
			rs = append(rs, map[string]any{"id": id, "username": id, "discriminator": "0"})
		}
		obj["recipients"] = rs
	}
	if isThread(c.Type) {
		obj["thread_metadata"] = map[string]any{"archived": false, "auto_archive_duration": 1440, "locked": false}
	}
	if c.GuildID != "" && !isThread(c.Type) {
		ows := []any{}
		for _, o := range c.Overwrites {
			ows = append(ows, map[string]any{"id": o.ID, "type": o.Type,
				"allow": strconv.FormatInt(o.Allow, 10), "deny": strconv.FormatInt(o.Deny, 10)})
		}
		obj["permission_overwrites"] = ows
	}
	return obj
}

// guildChannelObject is a channel as GUILD_CREATE lists it: without its
// guild_id, which the guild around it gives.
func guildChannelObject(c Channel) map[string]any {
	obj := channelObject(c)
	delete(obj, "guild_id")
	return obj
}

func isThread(t int) bool {
	return t == ChannelNewsThread || t == ChannelPublicThread || t == ChannelPrivateThread
}

func (s *Server) guildObjectLocked(id string) map[string]any {
	chans, threads := []any{}, []any{}
	for _, c := range s.channels {
		if c.GuildID != id {
			continue
		}
		if isThread(c.Type) {
			threads = append(threads, channelObject(c))
		} else {
			chans = append(chans, guildChannelObject(c))
		}
	}
	members := []any{s.memberObjectLocked(id, Member{User: User{ID: s.cfg.BotID}, Roles: []string{s.BotRoleID(id)}})}
	g := s.guildLocked(id)
	if s.shardLocked(ShardOf(id, s.shardCount)).intents&IntentGuildMembers != 0 {
		// Discord lists the members (of a guild this small) only to a
		// session with the Server Members intent.
		for _, uid := range slices.Sorted(maps.Keys(g.members)) {
			members = append(members, s.memberObjectLocked(id, g.members[uid]))
		}
	}
	obj := s.guildRESTObjectLocked(id)
	for k, v := range map[string]any{
		"unavailable": false, "member_count": 1 + len(g.members), "channels": chans, "threads": threads,
		"members": members, "presences": []any{}, "voice_states": []any{},
		"joined_at": "2024-01-01T00:00:00Z", "large": false,
	} {
		obj[k] = v
	}
	return obj
}

// mustJSON encodes v as Discord does, without escaping <, > and & (mentions
// arrive as "<@id>").
func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fakediscord: marshal: %v", err)) // only our own maps are marshalled
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

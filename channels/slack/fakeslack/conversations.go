package fakeslack

import (
	"net/http"
	"slices"
)

// Conversations: conversations.info, conversations.members, and what
// events say of their conversation (channel_type,
// is_ext_shared_channel), all from one description, so the fake never
// tells the adapter two stories.

// Conversation describes one channel as conversations.info does. A channel
// the fake was not told about is described by its id's first letter, as
// Slack's ids go: D a DM, G a private channel, any other a public one.
type Conversation struct {
	ID      string
	IM      bool // a DM
	MPIM    bool // a group DM
	Private bool // a private channel (also set for a group DM, as Slack does)
	// ExtShared is a Slack Connect channel (another organisation is in
	// it), OrgShared one shared between workspaces of an Enterprise Grid
	// organisation, PendingExtShared one whose Connect invitation is not
	// accepted yet; Slack sets is_shared for the first two.
	ExtShared, OrgShared, PendingExtShared bool
	// Members are its people besides the bot, which is a member of every
	// conversation the fake describes; nil keeps the members it has. A
	// person who posts in a channel (Inject) is a member from then on,
	// since Slack lets only members post.
	Members []string
	// Error, when set, is what conversations.info and
	// conversations.members answer instead of the channel
	// ("channel_not_found", "internal_error", …); MembersError what
	// conversations.members alone answers.
	Error, MembersError string
}

// SetConversation describes a channel for conversations.info and the
// events injected in it from now on, replacing what was said before (a
// channel made private, shared, unshared), without an event: Slack's
// announcements of a change are ConvertToPrivate and the like.
func (s *Server) SetConversation(c Conversation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conversations == nil {
		s.conversations = map[string]Conversation{}
	}
	members := c.Members
	c.Members = nil
	s.conversations[c.ID] = c
	if members != nil {
		delete(s.members, c.ID)
	}
	for _, m := range members {
		s.addMemberLocked(c.ID, m)
	}
}

// Members returns channel's members, the bot first.
func (s *Server) Members(channel string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.membersLocked(channel))
}

func (s *Server) membersLocked(channel string) []string {
	if s.members == nil {
		s.members = map[string][]string{}
	}
	if _, ok := s.members[channel]; !ok {
		s.members[channel] = []string{s.cfg.BotUserID}
	}
	return s.members[channel]
}

// addMemberLocked makes user a member of channel; it reports false when
// they were one already.
func (s *Server) addMemberLocked(channel, user string) bool {
	m := s.membersLocked(channel)
	if user == "" || slices.Contains(m, user) {
		return false
	}
	s.members[channel] = append(m, user)
	return true
}

// removeMemberLocked takes user out of channel's members; it reports
// false when they were not one.
func (s *Server) removeMemberLocked(channel, user string) bool {
	m := s.membersLocked(channel)
	i := slices.Index(m, user)
	if i < 0 {
		return false
	}
	s.members[channel] = slices.Delete(slices.Clone(m), i, i+1)
	return true
}

// conversationLocked returns what the fake knows of channel id.
func (s *Server) conversationLocked(id string) Conversation {
	if c, ok := s.conversations[id]; ok {
		return c
	}
	c := Conversation{ID: id}
	switch {
	case len(id) > 0 && id[0] == 'D':
		c.IM = true
	case len(id) > 0 && id[0] == 'G':
		c.Private = true
	}
	return c
}

// channelType is the channel_type of a message event in c.
func (c Conversation) channelType() string {
	switch {
	case c.IM:
		return "im"
	case c.MPIM:
		return "mpim"
	case c.Private:
		return "group"
	default:
		return "channel"
	}
}

// conversationInfo answers conversations.info.
func (s *Server) conversationInfo(w http.ResponseWriter, r *http.Request, method string) {
	id := r.PostForm.Get("channel")
	if id == "" {
		s.fail(w, method, "channel_not_found")
		return
	}
	s.mu.Lock()
	c := s.conversationLocked(id)
	s.mu.Unlock()
	if c.Error != "" {
		s.fail(w, method, c.Error)
		return
	}
	ch := map[string]any{
		"id":                    c.ID,
		"created":               s.tsBase,
		"is_channel":            !c.IM && !c.MPIM && !c.Private,
		"is_group":              c.Private && !c.MPIM,
		"is_im":                 c.IM,
		"is_mpim":               c.MPIM,
		"is_private":            c.Private || c.IM || c.MPIM,
		"is_archived":           false,
		"is_general":            false,
		"is_shared":             c.ExtShared || c.OrgShared,
		"is_ext_shared":         c.ExtShared,
		"is_org_shared":         c.OrgShared,
		"is_pending_ext_shared": c.PendingExtShared,
		"context_team_id":       s.cfg.TeamID,
	}
	if !c.IM {
		ch["name"] = "chan-" + c.ID
	}
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "channel": ch})
}

// conversationMembers answers conversations.members: the member ids, a
// page at a time (limit, Slack's default 100, at most 1000), the next
// page's cursor in response_metadata.
func (s *Server) conversationMembers(w http.ResponseWriter, r *http.Request, method string) {
	id := r.PostForm.Get("channel")
	s.mu.Lock()
	c := s.conversationLocked(id)
	members := slices.Clone(s.membersLocked(id))
	s.mu.Unlock()
	switch {
	case id == "":
		s.fail(w, method, "channel_not_found")
		return
	case c.Error != "":
		s.fail(w, method, c.Error)
		return
	case c.MembersError != "":
		s.fail(w, method, c.MembersError)
		return
	}
	page, next, ok := paginate(members, r.PostForm.Get("cursor"), r.PostForm.Get("limit"), 100)
	if !ok {
		s.fail(w, method, "invalid_cursor")
		return
	}
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "members": page, "response_metadata": map[string]any{"next_cursor": next}})
}

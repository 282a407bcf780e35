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
// Slack's ids go: D a DM, G a private channel, any other a public one. A
// DM is the bot's with the first person heard in it (a post or a slash
// command), whom conversations.info names as its "user".
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
	// Between, for a DM between two people, names them: the bot is not in
	// it (Slack lets no app into a DM of two people), so Slack answers
	// the bot channel_not_found about it (conversations.info,
	// conversations.members, chat.postMessage, chat.postEphemeral) and
	// sends no event from it — but a slash command typed there reaches
	// the app, with the DM's D… id. Setting it makes the conversation a
	// DM.
	Between []string
	// Members are its people besides the bot, which is a member of every
	// other conversation the fake describes; nil keeps the members it has. A
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
	if c.botOut() {
		c.IM, members = true, nil
		s.membersLocked(c.ID)
		s.members[c.ID] = slices.Clone(c.Between)
	}
	s.conversations[c.ID] = c
	if members != nil {
		delete(s.members, c.ID)
	}
	for _, m := range members {
		s.addMemberLocked(c.ID, m)
	}
}

// botOut reports whether the bot is not in c: a DM between two people.
func (c Conversation) botOut() bool { return len(c.Between) > 0 }

// dmPersonLocked is the person whose DM with the bot c is ("" when none
// was heard in it yet, or it is not one).
func (s *Server) dmPersonLocked(c Conversation) string {
	if !c.IM || c.botOut() {
		return ""
	}
	for _, m := range s.membersLocked(c.ID) {
		if m != s.cfg.BotUserID {
			return m
		}
	}
	return ""
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

// botOut reports whether the bot is not in channel (Conversation.Between).
func (s *Server) botOut(channel string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conversationLocked(channel).botOut()
}

// slashName is the channel_name a slash command typed in c carries: Slack
// names every DM "directmessage", the bot's or not, and a private channel
// "privategroup".
func (c Conversation) slashName() string {
	switch {
	case c.IM:
		return "directmessage"
	case c.MPIM:
		return "mpdm-" + c.ID
	case c.Private:
		return "privategroup"
	default:
		return "chan-" + c.ID
	}
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
	person := s.dmPersonLocked(c)
	s.mu.Unlock()
	switch {
	case c.Error != "":
		s.fail(w, method, c.Error)
		return
	case c.botOut():
		s.fail(w, method, "channel_not_found")
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
	if person != "" {
		ch["user"] = person
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
	case c.botOut():
		s.fail(w, method, "channel_not_found")
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

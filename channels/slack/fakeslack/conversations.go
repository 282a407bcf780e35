package fakeslack

import "net/http"

// Conversations: conversations.info, and what events say of their
// conversation (channel_type, is_ext_shared_channel), both from one
// description, so the fake never tells the adapter two stories.

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
	// Error, when set, is what conversations.info answers instead of the
	// channel ("channel_not_found", "internal_error", …).
	Error string
}

// SetConversation describes a channel for conversations.info and the
// events injected in it from now on, replacing what was said before (a
// channel made private, shared, unshared).
func (s *Server) SetConversation(c Conversation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conversations == nil {
		s.conversations = map[string]Conversation{}
	}
	s.conversations[c.ID] = c
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

package fakeslack

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// People: users.info and users.list, with who each person is to the
// workspace — a full member, a guest, a person of another organisation —
// as Slack says it: team_id, enterprise_user.teams, is_restricted,
// is_ultra_restricted and is_stranger.

// Person is one of the people users.info and users.list describe.
type Person struct {
	ID   string
	Name string // the profile's display_name; real_name is "Real " + it
	// Team is the person's own workspace (team_id); "" = Config.TeamID.
	// Teams are the other workspaces of an Enterprise Grid organisation
	// they belong to (enterprise_user.teams).
	Team  string
	Teams []string
	// Guest is a multi-channel guest (is_restricted), SingleChannelGuest a
	// single-channel one (is_ultra_restricted: Slack sets both).
	Guest, SingleChannelGuest bool
	// Stranger is a person of another organisation whom Slack describes
	// only partly (is_stranger, present only when true).
	Stranger bool
	Bot      bool
	Deleted  bool
}

// SetPerson describes a person for users.info and users.list from now on,
// replacing what was said before (a member made a guest, a guest made a
// member).
func (s *Server) SetPerson(p Person) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setPersonLocked(p)
}

func (s *Server) setPersonLocked(p Person) {
	if s.people == nil {
		s.people = map[string]Person{}
	}
	if p.Team == "" {
		p.Team = s.cfg.TeamID
	}
	s.people[p.ID] = p
}

// personLocked returns the person id, from Config.People, SetPerson or
// Config.Users (members of Config.TeamID).
func (s *Server) personLocked(id string) (Person, bool) {
	if p, ok := s.people[id]; ok {
		return p, true
	}
	if name, ok := s.cfg.Users[id]; ok {
		return Person{ID: id, Name: name, Team: s.cfg.TeamID}, true
	}
	return Person{}, false
}

// userJSON is a person as users.info and users.list describe them.
func userJSON(p Person) map[string]any {
	u := map[string]any{
		"id": p.ID, "team_id": p.Team, "name": strings.ToLower(p.Name), "real_name": "Real " + p.Name,
		"deleted": p.Deleted, "is_bot": p.Bot,
		"is_restricted": p.Guest || p.SingleChannelGuest, "is_ultra_restricted": p.SingleChannelGuest,
		"profile": map[string]any{"display_name": p.Name, "real_name": "Real " + p.Name},
	}
	if p.Stranger {
		u["is_stranger"] = true
	}
	if len(p.Teams) > 0 {
		u["enterprise_user"] = map[string]any{"id": p.ID, "enterprise_id": "E0FAKE", "teams": append([]string{p.Team}, p.Teams...)}
	}
	return u
}

// userInfo answers users.info.
func (s *Server) userInfo(w http.ResponseWriter, r *http.Request, method string) {
	s.mu.Lock()
	p, ok := s.personLocked(r.PostForm.Get("user"))
	s.mu.Unlock()
	if !ok {
		s.fail(w, method, "user_not_found")
		return
	}
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "user": userJSON(p)})
}

// userList answers users.list: the people of the workspace asked for
// (team_id, else Config.TeamID) — their own workspace's or, in an
// Enterprise Grid, one of theirs — in id order, limit at a time (at most
// 1000; 0 is Slack's default of a page of everyone up to 1000), the next
// page's cursor in response_metadata.
func (s *Server) userList(w http.ResponseWriter, r *http.Request, method string) {
	team := r.PostForm.Get("team_id")
	if team == "" {
		team = s.cfg.TeamID
	}
	s.mu.Lock()
	ids := make([]string, 0, len(s.people)+len(s.cfg.Users))
	for id := range s.people {
		ids = append(ids, id)
	}
	for id := range s.cfg.Users {
		if _, ok := s.people[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var all []map[string]any
	for _, id := range ids {
		p, _ := s.personLocked(id)
		if p.Team == team || slices.Contains(p.Teams, team) {
			all = append(all, userJSON(p))
		}
	}
	s.mu.Unlock()
	page, next, ok := paginate(all, r.PostForm.Get("cursor"), r.PostForm.Get("limit"), 1000)
	if !ok {
		s.fail(w, method, "invalid_cursor")
		return
	}
	s.answer(w, method, http.StatusOK, map[string]any{
		"ok": true, "members": page, "cache_ts": 0, "response_metadata": map[string]any{"next_cursor": next},
	})
}

// paginate cuts one page of all as Slack's cursor pagination does: the
// cursor is opaque to the client (here the offset, base-36 with a
// prefix), "" at the end; limit is at most 1000, def when not given.
func paginate[T any](all []T, cursor, limitText string, def int) (page []T, next string, ok bool) {
	offset := 0
	if cursor != "" {
		n, err := strconv.ParseInt(strings.TrimPrefix(cursor, "dXNlcj"), 36, 64)
		if err != nil || !strings.HasPrefix(cursor, "dXNlcj") || n < 0 || int(n) > len(all) {
			return nil, "", false
		}
		offset = int(n)
	}
	limit, _ := strconv.Atoi(limitText)
	if limit <= 0 {
		limit = def
	}
	limit = min(limit, 1000)
	end := min(offset+limit, len(all))
	if end < len(all) {
		next = "dXNlcj" + strconv.FormatInt(int64(end), 36)
	}
	return all[offset:end], next, true
}

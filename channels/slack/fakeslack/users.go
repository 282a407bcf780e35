package fakeslack

import (
	"net/http"
	"strings"
)

// userInfo answers users.info from Config.Users.
func (s *Server) userInfo(w http.ResponseWriter, r *http.Request, method string) {
	id := r.PostForm.Get("user")
	name, ok := s.cfg.Users[id]
	if !ok {
		s.fail(w, method, "user_not_found")
		return
	}
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "user": map[string]any{
		"id": id, "team_id": s.cfg.TeamID, "name": strings.ToLower(name), "real_name": "Real " + name,
		"profile": map[string]any{"display_name": name, "real_name": "Real " + name},
	}})
}

package fakeslack

import (
	"net/http"
	"time"
)

// react answers reactions.add and reactions.remove: an emoji on a message
// at most once, as Slack does (already_reacted, no_reaction).
func (s *Server) react(w http.ResponseWriter, r *http.Request, method, token string) {
	s.mu.Lock()
	hold := s.reactHold
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		case <-s.done:
			http.Error(w, "server closing", http.StatusServiceUnavailable)
			return
		}
	}
	if token != s.cfg.BotToken {
		s.fail(w, method, "invalid_auth")
		return
	}
	name, channel, ts := r.PostForm.Get("name"), r.PostForm.Get("channel"), r.PostForm.Get("timestamp")
	if name == "" || channel == "" || ts == "" {
		s.fail(w, method, "invalid_arguments")
		return
	}
	key := channel + "|" + ts + "|" + name
	s.mu.Lock()
	op := "add"
	if method == "reactions.remove" {
		op = "remove"
	}
	var code string
	switch {
	case op == "add" && s.reactionSet[key]:
		code = "already_reacted"
	case op == "remove" && !s.reactionSet[key]:
		code = "no_reaction"
	default:
		s.reactionSet[key] = op == "add"
		s.reactions = append(s.reactions, Reaction{Op: op, Name: name, Channel: channel, Timestamp: ts, At: time.Now()})
	}
	s.mu.Unlock()
	if code != "" {
		s.fail(w, method, code)
		return
	}
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true})
}

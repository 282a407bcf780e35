package fakeslack

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// serveAPI answers the Web API as Slack does: form or JSON posts to
// /api/<method>, the token in the form or as a Bearer header, HTTP 200 with
// {"ok":false,"error":…} for refusals. auth.test and apps.connections.open
// are answered here; the methods of each area in chat.go, users.go and
// reactions.go.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	if err := r.ParseForm(); err != nil {
		s.answer(w, method, http.StatusBadRequest, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	token := r.PostForm.Get("token")
	if token == "" {
		token = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	switch method {
	case "auth.test":
		if token != s.cfg.BotToken {
			s.fail(w, method, "invalid_auth")
			return
		}
		s.answer(w, method, http.StatusOK, map[string]any{
			"ok": true, "url": "https://fake.slack.test/", "team": "Fake", "user": "dreambot",
			"team_id": s.cfg.TeamID, "user_id": s.cfg.BotUserID, "bot_id": s.cfg.BotID,
		})
	case "apps.connections.open":
		if token != s.cfg.AppToken {
			s.fail(w, method, "invalid_auth")
			return
		}
		s.mu.Lock()
		ticket := s.nextIDLocked("ticket-")
		s.tickets[ticket] = true
		s.mu.Unlock()
		u := "ws://" + r.Host + "/link/?ticket=" + ticket + "&app_id=" + s.cfg.AppID
		s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "url": u})
	case "chat.postMessage":
		s.postMessage(w, r, token)
	case "conversations.history", "conversations.replies":
		if s.botMay(w, method, token, !s.cfg.NoHistoryScope) {
			s.history(w, r, method)
		}
	case "conversations.info":
		if s.botMay(w, method, token, !s.cfg.NoConversationsScope) {
			s.conversationInfo(w, r, method)
		}
	case "conversations.members":
		if s.botMay(w, method, token, !s.cfg.NoConversationsScope) {
			s.conversationMembers(w, r, method)
		}
	case "users.info":
		if s.botMay(w, method, token, !s.cfg.NoUsersScope) {
			s.userInfo(w, r, method)
		}
	case "users.list":
		if s.botMay(w, method, token, !s.cfg.NoUsersScope) {
			s.userList(w, r, method)
		}
	case "files.info":
		if s.botMay(w, method, token, !s.cfg.NoFilesScope) {
			s.fileInfo(w, r, method)
		}
	case "chat.postEphemeral":
		if s.botMay(w, method, token, true) {
			s.postEphemeral(w, r, method)
		}
	case "chat.update", "chat.delete":
		if s.botMay(w, method, token, true) {
			s.updateMessage(w, r, method)
		}
	case "reactions.add", "reactions.remove":
		s.react(w, r, method, token)
	default:
		s.fail(w, method, "unknown_method")
	}
}

func (s *Server) answer(w http.ResponseWriter, method string, status int, body map[string]any) {
	call := Call{Method: method, At: time.Now(), Status: status}
	if ok, _ := body["ok"].(bool); !ok {
		call.Error, _ = body["error"].(string)
	}
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.notifyLocked()
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) fail(w http.ResponseWriter, method, code string) {
	s.answer(w, method, http.StatusOK, map[string]any{"ok": false, "error": code})
}

// botMay answers invalid_auth for a call without the bot token and
// missing_scope for one whose scope the app lacks; it reports whether the
// call may go on.
func (s *Server) botMay(w http.ResponseWriter, method, token string, scoped bool) bool {
	switch {
	case token != s.cfg.BotToken:
		s.fail(w, method, "invalid_auth")
	case !scoped:
		s.fail(w, method, "missing_scope")
	default:
		return true
	}
	return false
}

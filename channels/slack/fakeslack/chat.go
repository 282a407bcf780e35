package fakeslack

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, token string) {
	const method = "chat.postMessage"
	s.mu.Lock()
	var sc *scripted
	if len(s.postScript) > 0 {
		first := s.postScript[0]
		sc = &first
		s.postScript = s.postScript[1:]
	} else if st := s.storms[r.PostForm.Get("channel")]; st != nil {
		sc = &scripted{status: http.StatusTooManyRequests, retryAfter: st.retryAfter}
		if st.left > 0 {
			if st.left--; st.left == 0 {
				delete(s.storms, r.PostForm.Get("channel"))
			}
		}
	}
	s.mu.Unlock()
	if sc != nil && !sc.afterPost {
		if sc.status == http.StatusTooManyRequests {
			secs := max(1, int((sc.retryAfter+time.Second-1)/time.Second))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
		}
		s.answer(w, method, sc.status, map[string]any{"ok": false, "error": http.StatusText(sc.status)})
		return
	}
	if token != s.cfg.BotToken {
		s.fail(w, method, "invalid_auth")
		return
	}
	channel, text, thread := r.PostForm.Get("channel"), r.PostForm.Get("text"), r.PostForm.Get("thread_ts")
	switch {
	case channel == "" || s.botOut(channel):
		s.fail(w, method, "channel_not_found")
		return
	case strings.TrimSpace(text) == "":
		s.fail(w, method, "no_text")
		return
	case len([]rune(text)) > MaxTextLen:
		s.fail(w, method, "msg_too_long")
		return
	}
	var meta map[string]any
	if raw := r.PostForm.Get("metadata"); raw != "" {
		if s.cfg.RejectMetadata {
			s.fail(w, method, "invalid_metadata_format")
			return
		}
		if err := json.Unmarshal([]byte(raw), &meta); err != nil {
			s.fail(w, method, "invalid_metadata_format")
			return
		}
	}
	s.mu.Lock()
	p := Post{Channel: channel, Text: text, ThreadTS: thread, Token: token, TS: s.nextTSLocked(), At: time.Now(), Metadata: meta}
	s.mu.Unlock()
	if s.cfg.EchoPosts {
		// Before the post is recorded and answered, so once a test sees the
		// post the echo is on the wire. Best effort, as for Slack: no
		// connection, no echo.
		_, _ = s.Inject(Event{Type: "message", Channel: channel, User: s.cfg.BotUserID, BotID: s.cfg.BotID, Text: text, TS: p.TS, ThreadTS: thread})
	}
	s.mu.Lock()
	s.posts = append(s.posts, p)
	s.mu.Unlock()
	if sc != nil {
		s.answer(w, method, sc.status, map[string]any{"ok": false, "error": http.StatusText(sc.status)})
		return
	}
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "channel": channel, "ts": p.TS, "message": s.postJSON(p, false)})
}

// postJSON renders a post as the Web API's message object.
func (s *Server) postJSON(p Post, withMetadata bool) map[string]any {
	msg := map[string]any{"type": "message", "user": s.cfg.BotUserID, "bot_id": s.cfg.BotID, "text": p.Text, "ts": p.TS}
	if p.ThreadTS != "" {
		msg["thread_ts"] = p.ThreadTS
	}
	if withMetadata && p.Metadata != nil {
		msg["metadata"] = p.Metadata
	}
	return msg
}

// history answers conversations.history (the channel's top-level posts,
// newest first) and conversations.replies (the thread of ts, oldest first:
// its parent, then the replies), from the accepted posts and the seeded
// messages newer than oldest and older than latest (inclusive=1 keeps a
// message at either bound), at most limit of them (default 100). Metadata
// is included only with include_all_metadata=1, as Slack does.
func (s *Server) history(w http.ResponseWriter, r *http.Request, method string) {
	f := r.PostForm
	channel, thread := f.Get("channel"), f.Get("ts")
	if channel == "" || (method == "conversations.replies" && thread == "") {
		s.fail(w, method, "invalid_arguments")
		return
	}
	oldest, latest := tsMicros(f.Get("oldest")), tsMicros(f.Get("latest"))
	inclusive := f.Get("inclusive") == "1" || f.Get("inclusive") == "true"
	limit, _ := strconv.Atoi(f.Get("limit"))
	if limit <= 0 {
		limit = 100
	}
	withMeta := f.Get("include_all_metadata") == "1"
	inRange := func(ts string) bool {
		t := tsMicros(ts)
		if inclusive {
			return t >= oldest && (latest == 0 || t <= latest)
		}
		return t > oldest && (latest == 0 || t < latest)
	}
	type entry struct {
		ts  int64
		msg map[string]any
	}
	var all []entry
	s.mu.Lock()
	for _, p := range s.posts {
		if p.Channel != channel || !inRange(p.TS) || p.ThreadTS != thread {
			continue
		}
		all = append(all, entry{tsMicros(p.TS), s.postJSON(p, withMeta)})
	}
	for _, m := range s.seeded {
		inThread := m.ThreadTS == thread || (thread != "" && m.TS == thread)
		if m.Channel != channel || !inRange(m.TS) || !inThread {
			continue
		}
		msg := map[string]any{"type": "message", "text": m.Text, "ts": m.TS}
		if m.User != "" {
			msg["user"] = m.User
		}
		if m.BotID != "" {
			msg["bot_id"] = m.BotID
		}
		if m.ThreadTS != "" {
			msg["thread_ts"] = m.ThreadTS
		}
		all = append(all, entry{tsMicros(m.TS), msg})
	}
	s.mu.Unlock()
	slices.SortStableFunc(all, func(a, b entry) int { return cmp.Compare(a.ts, b.ts) })
	msgs := make([]map[string]any, 0, len(all))
	for _, e := range all {
		msgs = append(msgs, e.msg)
	}
	if method == "conversations.history" {
		slices.Reverse(msgs)
	}
	more := len(msgs) > limit
	if more {
		msgs = msgs[:limit]
	}
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "messages": msgs, "has_more": more})
}

// tsMicros reads a Slack ts ("1712345678.000123") exactly, as microseconds;
// 0 for "" or anything else (a float64 would round the last digits).
func tsMicros(ts string) int64 {
	sec, frac, ok := strings.Cut(ts, ".")
	if !ok || len(frac) != 6 {
		return 0
	}
	a, err1 := strconv.ParseInt(sec, 10, 64)
	b, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return a*1_000_000 + b
}

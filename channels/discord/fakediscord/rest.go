package fakediscord

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxContent is Discord's limit on a message's content, in characters.
const maxContent = 2000

// maxNonce is Discord's limit on a nonce's length.
const maxNonce = 25

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/gateway-ws/", s.serveGateway)
	mux.HandleFunc("GET /api/v9/gateway", s.authed(s.getGateway))
	mux.HandleFunc("GET /api/v9/gateway/bot", s.authed(s.getGatewayBot))
	mux.HandleFunc("GET /api/v9/oauth2/applications/@me", s.authed(s.getApplication))
	mux.HandleFunc("GET /api/v9/applications/{app}/commands", s.authed(s.getCommands))
	mux.HandleFunc("PUT /api/v9/applications/{app}/commands", s.authed(s.putCommands))
	mux.HandleFunc("GET /api/v9/applications/{app}/guilds/{guild}/commands", s.authed(s.getCommands))
	mux.HandleFunc("PUT /api/v9/applications/{app}/guilds/{guild}/commands", s.authed(s.putCommands))
	// The interaction endpoints are authorised by the token in the path.
	mux.HandleFunc("POST /api/v9/interactions/{id}/{token}/callback", s.postCallback)
	mux.HandleFunc("PATCH /api/v9/webhooks/{app}/{token}/messages/@original", s.webhookMessage)
	mux.HandleFunc("POST /api/v9/webhooks/{app}/{token}", s.webhookMessage)
	mux.HandleFunc("GET /api/v9/users/{id}", s.authed(s.getUser))
	mux.HandleFunc("GET /api/v9/channels/{id}", s.authed(s.getChannel))
	mux.HandleFunc("GET /api/v9/guilds/{id}", s.authed(s.getGuild))
	mux.HandleFunc("GET /api/v9/guilds/{id}/members/{user}", s.authed(s.getMember))
	mux.HandleFunc("POST /api/v9/channels/{id}/messages", s.authed(s.postMessage))
	mux.HandleFunc("POST /api/v9/channels/{id}/typing", s.authed(s.postTyping))
	mux.HandleFunc("GET /api/v9/channels/{id}/messages", s.authed(s.getMessages))
	mux.HandleFunc("GET /api/v9/channels/{id}/messages/{mid}", s.authed(s.getMessage))
	mux.HandleFunc("PATCH /api/v9/channels/{id}/messages/{mid}", s.authed(s.patchMessage))
	mux.HandleFunc("DELETE /api/v9/channels/{id}/messages/{mid}", s.authed(s.deleteMessage))
	mux.HandleFunc("GET /attachments/{channel}/{id}/{name}", s.getAttachment)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, 0, "404: Not Found")
	})
	return s.record(mux)
}

// statusWriter remembers the status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (s *Server) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/gateway-ws/") {
			next.ServeHTTP(w, r) // hijacked; recorded in Stats
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Status: sw.status})
		s.notifyLocked()
		s.mu.Unlock()
	})
}

// authed refuses requests without "Authorization: Bot <token>", as Discord
// does with 401.
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bot "+s.cfg.Token {
			writeError(w, http.StatusUnauthorized, 0, "401: Unauthorized")
			return
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(mustJSON(v))
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"message": msg, "code": code})
}

// bucketHeaders are the rate-limit headers of a request that still has room.
func bucketHeaders(h http.Header, route string) {
	h.Set("X-RateLimit-Bucket", route)
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", "4")
	h.Set("X-RateLimit-Reset-After", "5.000")
	h.Set("X-RateLimit-Reset", fmt.Sprintf("%.3f", float64(time.Now().Add(5*time.Second).UnixMilli())/1000))
}

func (s *Server) getGateway(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"url": s.wsURL()})
}

// getGatewayBot answers GET /gateway/bot with the recommended shard count.
func (s *Server) getGatewayBot(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"url": s.wsURL(), "shards": s.cfg.RecommendedShards,
		"session_start_limit": map[string]any{"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1}})
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "@me" {
		id = s.cfg.BotID
	}
	if _, ok := s.users[id]; !ok {
		writeError(w, http.StatusNotFound, 10013, "Unknown User")
		return
	}
	writeJSON(w, http.StatusOK, s.userObjectLocked(id))
}

// getChannel answers GET /channels/{id}: a channel of a guild the bot is
// not in, or a DM between other people, is Missing Access.
func (s *Server) getChannel(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	c, ok := s.channels[r.PathValue("id")]
	fail := s.lookupFails[r.PathValue("id")]
	if ok && !s.botSeesLocked(c) {
		fail = http.StatusForbidden
	}
	s.mu.Unlock()
	switch {
	case fail == http.StatusForbidden:
		writeError(w, fail, 50001, "Missing Access")
		return
	case fail != 0:
		writeError(w, fail, 0, http.StatusText(fail))
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	}
	writeJSON(w, http.StatusOK, channelObject(c))
}

func (s *Server) postTyping(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	if _, ok := s.channels[id]; !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	}
	s.typing = append(s.typing, Typing{ChannelID: id, Authorization: r.Header.Get("Authorization"), At: time.Now()})
	release := s.typingGate
	if release != nil {
		s.typingHeld++
	}
	s.notifyLocked()
	s.mu.Unlock()
	if release != nil {
		// Held as a slow Discord would; the client may give up meanwhile.
		select {
		case <-release:
		case <-r.Context().Done():
		}
		s.mu.Lock()
		s.typingHeld--
		s.notifyLocked()
		s.mu.Unlock()
	}
	h := w.Header()
	h.Set("X-RateLimit-Bucket", "typing:"+id)
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", "4")
	h.Set("X-RateLimit-Reset-After", fmt.Sprintf("%.3f", s.cfg.TypingResetAfter.Seconds()))
	w.WriteHeader(http.StatusNoContent)
}

type postBody struct {
	Content          string          `json:"content"`
	Nonce            json.RawMessage `json:"nonce"`
	EnforceNonce     bool            `json:"enforce_nonce"`
	MessageReference *struct {
		MessageID       string `json:"message_id"`
		ChannelID       string `json:"channel_id"`
		FailIfNotExists *bool  `json:"fail_if_not_exists"`
	} `json:"message_reference"`
	AllowedMentions *struct {
		Parse       []string `json:"parse"`
		RepliedUser *bool    `json:"replied_user"`
	} `json:"allowed_mentions"`
}

// nonceUse is the message an enforced nonce made, and when.
type nonceUse struct {
	id string
	at time.Time
}

// nonceLocked returns the message nonce made within the nonce window:
// Discord answers a repeat with it; an older nonce makes a new message.
func (s *Server) nonceLocked(nonce string) (string, bool) {
	u, ok := s.nonces[nonce]
	if !ok {
		return "", false
	}
	window := s.cfg.NonceWindow
	if window <= 0 {
		window = 5 * time.Minute
	}
	if s.now().Sub(u.at) >= window {
		delete(s.nonces, nonce)
		return "", false
	}
	return u.id, true
}

func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// nonceString accepts a nonce as a JSON string or integer.
func nonceString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	return string(raw)
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	chID := r.PathValue("id")
	var body postBody
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	nonce := nonceString(body.Nonce)

	s.mu.Lock()
	defer s.mu.Unlock()
	status := http.StatusOK
	defer func() {
		s.attempts = append(s.attempts, Attempt{ChannelID: chID, Status: status, Nonce: nonce, At: time.Now()})
		s.notifyLocked()
	}()
	failed := func(f failure) {
		status = f.status
		writeError(w, f.status, 0, http.StatusText(f.status))
	}
	refused := func(ref *refusal) {
		status = ref.status
		writeJSON(w, ref.status, ref.body)
	}

	fail := s.takeFailureLocked(chID)
	if fail != nil && fail.status == http.StatusTooManyRequests {
		status = http.StatusTooManyRequests
		write429(w, *fail)
		return
	}
	if fail != nil && !fail.afterCreate {
		failed(*fail)
		return
	}
	if ref := s.refusePostLocked(chID, body, nonce); ref != nil {
		refused(ref)
		return
	}
	if body.EnforceNonce && nonce != "" {
		if id, ok := s.nonceLocked(nonce); ok {
			// Discord answers a repeated nonce with the message it created.
			if fail != nil {
				failed(*fail)
				return
			}
			bucketHeaders(w.Header(), "messages:"+chID)
			writeJSON(w, http.StatusOK, s.messages[id])
			return
		}
	}
	replyTo, ref := s.replyToLocked(body)
	if ref != nil {
		refused(ref)
		return
	}
	obj := s.createPostLocked(r, chID, body, nonce, replyTo)
	if fail != nil {
		failed(*fail) // a failure after the message was made
		return
	}
	bucketHeaders(w.Header(), "messages:"+chID)
	writeJSON(w, http.StatusOK, obj)
}

// refusal is an error answer of Discord's: its status and JSON body.
type refusal struct {
	status int
	body   any
}

func refuse(status, code int, msg string) *refusal {
	return &refusal{status: status, body: map[string]any{"message": msg, "code": code}}
}

// takeFailureLocked is the failure the next message post meets: the first
// scripted one, else channel chID's rate-limit storm; nil for none.
func (s *Server) takeFailureLocked(chID string) *failure {
	if len(s.failures) > 0 {
		f := s.failures[0]
		s.failures = s.failures[1:]
		return &f
	}
	st := s.storms[chID]
	if st == nil {
		return nil
	}
	if st.left > 0 {
		if st.left--; st.left == 0 {
			delete(s.storms, chID)
		}
	}
	return &failure{status: http.StatusTooManyRequests, retryAfter: st.retryAfter}
}

// refusePostLocked is why Discord refuses to create body in channel chID
// as it checks a post first: an unknown channel, an empty or too long
// message, a nonce too long; nil when it does not.
func (s *Server) refusePostLocked(chID string, body postBody, nonce string) *refusal {
	switch _, ok := s.channels[chID]; {
	case !ok:
		return refuse(http.StatusNotFound, 10003, "Unknown Channel")
	case strings.TrimSpace(body.Content) == "":
		return refuse(http.StatusBadRequest, 50006, "Cannot send an empty message")
	case utf8.RuneCountInString(body.Content) > maxContent:
		return &refusal{status: http.StatusBadRequest, body: map[string]any{"message": "Invalid Form Body", "code": 50035,
			"errors": map[string]any{"content": map[string]any{"_errors": []any{map[string]any{
				"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}}}}}}
	case len(nonce) > maxNonce:
		return refuse(http.StatusBadRequest, 50035, "Invalid Form Body (nonce)")
	}
	return nil
}

// replyToLocked is the message body replies to: "" for none, or for one
// that is gone where the post allows that (fail_if_not_exists false); a
// reference to a message that is gone is otherwise refused.
func (s *Server) replyToLocked(body postBody) (string, *refusal) {
	ref := body.MessageReference
	if ref == nil || ref.MessageID == "" {
		return "", nil
	}
	if _, ok := s.messages[ref.MessageID]; ok {
		return ref.MessageID, nil
	}
	if ref.FailIfNotExists == nil || *ref.FailIfNotExists {
		return "", refuse(http.StatusBadRequest, 50035, "Invalid Form Body (message_reference: Unknown message)")
	}
	return "", nil
}

// createPostLocked makes the bot's message body in channel chID as the
// post r asked: stored, its enforced nonce remembered, recorded as Sent
// and echoed on the gateway as Discord does. It returns the message
// object.
func (s *Server) createPostLocked(r *http.Request, chID string, body postBody, nonce, replyTo string) map[string]any {
	c := s.channels[chID]
	m := Message{ID: s.newIDLocked(), ChannelID: chID, Author: s.users[s.cfg.BotID], Content: body.Content, ReplyTo: replyTo}
	obj := s.messageObjectLocked(m, c)
	if nonce != "" {
		obj["nonce"] = nonce
		if body.EnforceNonce {
			s.nonces[nonce] = nonceUse{id: m.ID, at: s.now()}
		}
	}
	s.storeLocked(obj)
	sent := Sent{ID: m.ID, ChannelID: chID, Content: body.Content, ReplyTo: replyTo, Nonce: nonce,
		Authorization: r.Header.Get("Authorization"), At: time.Now(), TypingHeld: s.typingHeld}
	if am := body.AllowedMentions; am != nil {
		sent.RepliedUser = am.RepliedUser
		sent.AllowedParse = append([]string{}, am.Parse...)
	}
	s.sent = append(s.sent, sent)
	// Discord echoes the bot's own messages on the gateway.
	s.dispatchLocked(c.GuildID, "MESSAGE_CREATE", obj)
	return obj
}

// write429 answers as Discord does when a route's limit is exhausted.
func write429(w http.ResponseWriter, f failure) {
	secs := f.retryAfter.Seconds()
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(secs))))
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset-After", fmt.Sprintf("%.3f", secs))
	h.Set("X-RateLimit-Reset", fmt.Sprintf("%.3f", float64(time.Now().Add(f.retryAfter).UnixMilli())/1000))
	h.Set("X-RateLimit-Bucket", "messages")
	scope := "user"
	if f.global {
		h.Set("X-RateLimit-Global", "true")
		scope = "global"
	}
	h.Set("X-RateLimit-Scope", scope)
	writeJSON(w, http.StatusTooManyRequests, map[string]any{
		"message": "You are being rate limited.", "retry_after": secs, "global": f.global, "code": 0})
}

// getMessages answers GET /channels/{id}/messages: newest first, at most
// limit (default 50, max 100), before/after a message id.
func (s *Server) getMessages(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body (limit)")
			return
		}
		limit = n
	}
	before, after := q.Get("before"), q.Get("after")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[id]; !ok {
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	}
	out := []any{}
	ids := s.history[id]
	for i := len(ids) - 1; i >= 0 && len(out) < limit; i-- {
		mid := ids[i]
		if before != "" && !snowflakeLess(mid, before) || after != "" && !snowflakeLess(after, mid) {
			continue
		}
		out = append(out, s.messages[mid])
	}
	writeJSON(w, http.StatusOK, out)
}

// snowflakeLess orders ids as numbers.
func snowflakeLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// getAttachment serves an attachment as Discord's CDN does: no token.
func (s *Server) getAttachment(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.files[r.PathValue("id")]
	s.mu.Unlock()
	if !ok || f.Name != r.PathValue("name") {
		http.NotFound(w, r)
		return
	}
	if f.ContentType != "" {
		w.Header().Set("Content-Type", f.ContentType)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
	_, _ = w.Write(f.Data)
}

// patchMessage edits one of the bot's messages (content only) and
// dispatches MESSAGE_UPDATE, as Discord does.
func (s *Server) patchMessage(w http.ResponseWriter, r *http.Request) {
	chID, mid := r.PathValue("id"), r.PathValue("mid")
	var body struct {
		Content *string `json:"content"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.messages[mid]
	switch {
	case !ok || obj["channel_id"] != chID:
		writeError(w, http.StatusNotFound, 10008, "Unknown Message")
		return
	case authorID(obj) != s.cfg.BotID:
		writeError(w, http.StatusForbidden, 50005, "Cannot edit a message authored by another user")
		return
	case body.Content == nil:
		writeJSON(w, http.StatusOK, obj)
		return
	case strings.TrimSpace(*body.Content) == "":
		writeError(w, http.StatusBadRequest, 50006, "Cannot send an empty message")
		return
	case utf8.RuneCountInString(*body.Content) > maxContent:
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body (content: Must be 2000 or fewer in length.)")
		return
	}
	obj["content"] = *body.Content
	obj["edited_timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
	s.edits = append(s.edits, Edit{ChannelID: chID, MessageID: mid, Content: *body.Content, At: time.Now()})
	g, _ := obj["guild_id"].(string)
	s.dispatchLocked(g, "MESSAGE_UPDATE", obj)
	s.notifyLocked()
	bucketHeaders(w.Header(), "messages:"+chID)
	writeJSON(w, http.StatusOK, obj)
}

// deleteMessage deletes one of the bot's messages.
func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request) {
	chID, mid := r.PathValue("id"), r.PathValue("mid")
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.messages[mid]
	if !ok || obj["channel_id"] != chID {
		writeError(w, http.StatusNotFound, 10008, "Unknown Message")
		return
	}
	delete(s.messages, mid)
	ids := s.history[chID]
	for i, id := range ids {
		if id == mid {
			s.history[chID] = append(ids[:i:i], ids[i+1:]...)
			break
		}
	}
	s.deleted = append(s.deleted, mid)
	g, _ := obj["guild_id"].(string)
	s.dispatchLocked(g, "MESSAGE_DELETE", map[string]any{"id": mid, "channel_id": chID})
	s.notifyLocked()
	w.WriteHeader(http.StatusNoContent)
}

func authorID(obj map[string]any) string {
	a, _ := obj["author"].(map[string]any)
	id, _ := a["id"].(string)
	return id
}

// getMessage answers GET /channels/{id}/messages/{mid}.
func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.messages[r.PathValue("mid")]
	if !ok || obj["channel_id"] != r.PathValue("id") {
		writeError(w, http.StatusNotFound, 10008, "Unknown Message")
		return
	}
	writeJSON(w, http.StatusOK, obj)
}

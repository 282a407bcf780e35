package fakeslack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Slash commands (slash_commands envelopes and their response_url),
// people's earlier messages for conversations.replies, files (files.info
// and the url_private download with the bot token) and chat.update /
// chat.delete, as Slack speaks them.

// ResponseURLUses is how often Slack accepts a slash command's
// response_url (within 30 minutes); later posts get used_url.
const ResponseURLUses = 5

// SlashCommand is one slash command a person ran.
type SlashCommand struct {
	Command   string // "/dream", with the slash
	Text      string
	User      string
	UserName  string
	Channel   string
	TriggerID string // "" = a fresh one
	Team      string // the workspace it was run in; "" = Config.TeamID
}

// Response is one post to a slash command's response_url.
type Response struct {
	TriggerID       string
	Text            string
	ResponseType    string // "ephemeral" or "in_channel" ("" = ephemeral, Slack's default)
	ReplaceOriginal bool
	At              time.Time
}

// Ephemeral is one accepted chat.postEphemeral.
type Ephemeral struct {
	Channel, User, Text string
	At                  time.Time
}

// Message is a post people made before the bot saw it, for
// conversations.replies (Seed).
type Message struct {
	Channel  string
	User     string
	BotID    string
	Text     string
	TS       string
	ThreadTS string // "" for a top-level post (a thread's parent has none)
}

// File is a file shared with a post (Event.Files). Content is what the
// url_private download serves; Size defaults to len(Content).
type File struct {
	ID       string
	Name     string
	Mimetype string
	Filetype string
	Size     int
	Content  []byte
	// Hidden sends the file in the event as Slack does for some shared and
	// Connect channels: {"id", "file_access":"check_file_info"} only, so
	// the app has to call files.info.
	Hidden bool
}

// Update is one accepted chat.update.
type Update struct {
	Channel, TS, Text string
	At                time.Time
}

// InjectSlashCommand sends a slash_commands envelope with the payload
// fields Slack sends and returns its envelope id and the trigger id. Its
// response_url points at this server.
func (s *Server) InjectSlashCommand(c SlashCommand) (envelopeID, triggerID string, err error) {
	s.mu.Lock()
	if c.TriggerID == "" {
		c.TriggerID = s.nextIDLocked("trig-")
	}
	conv := s.conversationLocked(c.Channel)
	if conv.IM && !conv.botOut() && c.User != "" && s.dmPersonLocked(conv) == "" {
		// Only the person of a DM with the bot types in it.
		s.addMemberLocked(c.Channel, c.User)
	}
	s.mu.Unlock()
	team := c.Team
	if team == "" {
		team = s.cfg.TeamID
	}
	payload := map[string]any{
		"token":                 "fake-verification-token",
		"team_id":               team,
		"team_domain":           "fake",
		"channel_id":            c.Channel,
		"channel_name":          conv.slashName(),
		"user_id":               c.User,
		"user_name":             c.UserName,
		"command":               c.Command,
		"text":                  c.Text,
		"api_app_id":            s.cfg.AppID,
		"is_enterprise_install": "false",
		"response_url":          s.srv.URL + "/commands/" + team + "/" + c.TriggerID,
		"trigger_id":            c.TriggerID,
	}
	// Slack lets a slash command's ack carry the first answer.
	id, err := s.sendEnvelope("slash_commands", payload, true)
	return id, c.TriggerID, err
}

// Responses returns the posts to response_urls in arrival order.
func (s *Server) Responses() []Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Response(nil), s.responses...)
}

// Ephemerals returns the accepted chat.postEphemeral calls.
func (s *Server) Ephemerals() []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ephemeral(nil), s.ephemerals...)
}

// Updates returns the accepted chat.update calls in arrival order.
func (s *Server) Updates() []Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Update(nil), s.updates...)
}

// WaitResponses waits until at least n response_url posts were accepted.
func (s *Server) WaitResponses(ctx context.Context, n int) ([]Response, error) {
	err := s.waitFor(ctx, fmt.Sprintf("%d responses", n), func() bool { return len(s.responses) >= n })
	return s.Responses(), err
}

// WaitUpdates waits until at least n chat.update calls were accepted.
func (s *Server) WaitUpdates(ctx context.Context, n int) ([]Update, error) {
	err := s.waitFor(ctx, fmt.Sprintf("%d updates", n), func() bool { return len(s.updates) >= n })
	return s.Updates(), err
}

// Seed adds posts people made, as conversations.replies and
// conversations.history list them; an empty TS gets a fresh one. It
// returns the messages as stored.
func (s *Server) Seed(msgs ...Message) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range msgs {
		if msgs[i].TS == "" {
			msgs[i].TS = s.nextTSLocked()
		}
		s.seeded = append(s.seeded, msgs[i])
	}
	s.notifyLocked()
	return msgs
}

// NewTS returns a fresh timestamp, later than every one given so far.
func (s *Server) NewTS() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextTSLocked()
}

// Downloads counts url_private downloads served (with a valid token).
func (s *Server) Downloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads
}

// serveResponseURL answers posts to a response_url: JSON {text,
// response_type, replace_original}, at most ResponseURLUses times.
func (s *Server) serveResponseURL(w http.ResponseWriter, r *http.Request) {
	trigger := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	var body struct {
		Text            string `json:"text"`
		ResponseType    string `json:"response_type"`
		ReplaceOriginal bool   `json:"replace_original"`
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&body) != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_payload"}`))
		return
	}
	s.mu.Lock()
	used := 0
	for _, resp := range s.responses {
		if resp.TriggerID == trigger {
			used++
		}
	}
	if used >= ResponseURLUses {
		s.mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"ok":false,"error":"used_url"}`))
		return
	}
	s.responses = append(s.responses, Response{TriggerID: trigger, Text: body.Text, ResponseType: body.ResponseType, ReplaceOriginal: body.ReplaceOriginal, At: time.Now()})
	s.notifyLocked()
	s.mu.Unlock()
	_, _ = w.Write([]byte(`{"ok":true}`))
}

// fileJSON renders f as Slack's file object; hidden files carry only
// their id, as in events where Slack says check_file_info.
func (s *Server) fileJSON(f File, hidden bool) map[string]any {
	if hidden {
		return map[string]any{"id": f.ID, "mode": "hidden_by_limit", "file_access": "check_file_info"}
	}
	size := f.Size
	if size == 0 {
		size = len(f.Content)
	}
	u := s.srv.URL + "/files-pri/" + s.cfg.TeamID + "-" + f.ID + "/" + f.Name
	return map[string]any{
		"id": f.ID, "name": f.Name, "title": f.Name, "mimetype": f.Mimetype, "filetype": f.Filetype,
		"size": size, "mode": "hosted", "url_private": u, "url_private_download": u + "?download=1",
	}
}

// registerFilesLocked keeps ev's files for files.info and downloads.
func (s *Server) registerFilesLocked(files []File) {
	for _, f := range files {
		s.files[f.ID] = f
	}
}

// fileInfo answers files.info (needs files:read).
func (s *Server) fileInfo(w http.ResponseWriter, r *http.Request, method string) {
	s.mu.Lock()
	f, ok := s.files[r.PostForm.Get("file")]
	s.mu.Unlock()
	if !ok {
		s.fail(w, method, "file_not_found")
		return
	}
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "file": s.fileJSON(f, false), "comments": []any{}})
}

// serveFile answers a url_private download: the bot token as a Bearer
// header; without it (or without files:read) Slack redirects to its
// sign-in page (redir = the file's path), an HTML page.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/files-pri/")
	key, _, _ := strings.Cut(rest, "/")
	_, id, _ := strings.Cut(key, "-")
	s.mu.Lock()
	f, ok := s.files[id]
	authed := r.Header.Get("Authorization") == "Bearer "+s.cfg.BotToken && !s.cfg.NoFilesScope
	if ok && authed {
		s.downloads++
		s.notifyLocked()
	}
	s.mu.Unlock()
	switch {
	case !ok:
		http.NotFound(w, r)
	case !authed:
		http.Redirect(w, r, "/signin/?redir="+url.QueryEscape(r.URL.Path), http.StatusFound)
	default:
		w.Header().Set("Content-Type", f.Mimetype)
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Content)))
		_, _ = w.Write(f.Content)
	}
}

// serveSignIn is the workspace's sign-in page a download without access
// lands on.
func serveSignIn(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	_, _ = w.Write([]byte("<html><body>Sign in to Slack</body></html>"))
}

// postEphemeral answers chat.postEphemeral.
func (s *Server) postEphemeral(w http.ResponseWriter, r *http.Request, method string) {
	f := r.PostForm
	if f.Get("channel") == "" || f.Get("user") == "" || strings.TrimSpace(f.Get("text")) == "" {
		s.fail(w, method, "invalid_arguments")
		return
	}
	if s.botOut(f.Get("channel")) {
		s.fail(w, method, "channel_not_found")
		return
	}
	s.mu.Lock()
	if len(s.ephemScript) > 0 {
		sc := s.ephemScript[0]
		s.ephemScript = s.ephemScript[1:]
		s.mu.Unlock()
		if sc.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int((sc.retryAfter+time.Second-1)/time.Second))))
		}
		s.answer(w, method, sc.status, map[string]any{"ok": false, "error": http.StatusText(sc.status)})
		return
	}
	s.ephemerals = append(s.ephemerals, Ephemeral{Channel: f.Get("channel"), User: f.Get("user"), Text: f.Get("text"), At: time.Now()})
	s.notifyLocked()
	ts := s.nextTSLocked()
	s.mu.Unlock()
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "message_ts": ts})
}

// updateMessage answers chat.update of one of the bot's posts (its text
// changes in Posts and conversations.*), and chat.delete.
func (s *Server) updateMessage(w http.ResponseWriter, r *http.Request, method string) {
	s.mu.Lock()
	var sc *scripted
	if method == "chat.update" && len(s.updateScript) > 0 {
		first := s.updateScript[0]
		sc = &first
		s.updateScript = s.updateScript[1:]
	}
	s.mu.Unlock()
	if sc != nil {
		if sc.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int((sc.retryAfter+time.Second-1)/time.Second))))
		}
		s.answer(w, method, sc.status, map[string]any{"ok": false, "error": http.StatusText(sc.status)})
		return
	}
	f := r.PostForm
	channel, ts, text := f.Get("channel"), f.Get("ts"), f.Get("text")
	s.mu.Lock()
	i := -1
	for j, p := range s.posts {
		if p.Channel == channel && p.TS == ts {
			i = j
		}
	}
	if i < 0 {
		s.mu.Unlock()
		s.fail(w, method, "message_not_found")
		return
	}
	if method == "chat.delete" {
		s.posts = append(s.posts[:i], s.posts[i+1:]...)
		s.deleted = append(s.deleted, Update{Channel: channel, TS: ts, At: time.Now()})
		s.mu.Unlock()
		s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "channel": channel, "ts": ts})
		return
	}
	switch {
	case strings.TrimSpace(text) == "":
		s.mu.Unlock()
		s.fail(w, method, "no_text")
		return
	case len([]rune(text)) > MaxTextLen:
		s.mu.Unlock()
		s.fail(w, method, "msg_too_long")
		return
	}
	s.posts[i].Text = text
	s.updates = append(s.updates, Update{Channel: channel, TS: ts, Text: text, At: time.Now()})
	s.notifyLocked()
	s.mu.Unlock()
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "channel": channel, "ts": ts, "text": text})
}

// RateLimitNextEphemeral answers the next chat.postEphemeral with HTTP 429
// and Retry-After. Calls queue up.
func (s *Server) RateLimitNextEphemeral(retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ephemScript = append(s.ephemScript, scripted{status: http.StatusTooManyRequests, retryAfter: retryAfter})
}

// RateLimitNextUpdate answers the next chat.update with HTTP 429 and
// Retry-After. Calls queue up.
func (s *Server) RateLimitNextUpdate(retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updateScript = append(s.updateScript, scripted{status: http.StatusTooManyRequests, retryAfter: retryAfter})
}

// Deleted returns the accepted chat.delete calls.
func (s *Server) Deleted() []Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Update(nil), s.deleted...)
}

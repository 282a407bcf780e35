package session

import (
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
)

// Origin is where a user message came from: who sent it (the name it is
// shown under in prompts and archive transcripts) and enough to find it
// again and answer it after a restart. It is stored on the message's line
// as "origin"; lines written before it existed have none. Whether a
// message has been answered is not the session's record: the gateway's
// inbox keeps that.
type Origin struct {
	Channel    string `json:"channel"`
	ChatID     string `json:"chat,omitempty"`
	ThreadID   string `json:"thread,omitempty"`
	MessageID  string `json:"message_id,omitempty"`
	SenderID   string `json:"sender_id,omitempty"`
	SenderName string `json:"sender_name,omitempty"`
	Local      bool   `json:"local,omitempty"`
	// Audience is who could read the conversation when the message was
	// sent: a restart answers the message as that audience, and a
	// conversation whose metadata was not written yet recovers its
	// audience from it.
	Audience audience.Audience `json:"audience,omitzero"`
}

// storedLine is one line of a message file: a message, with the origin of
// a user message. Files written by earlier versions also hold answered
// marks, {"answered":true}, which said every message before them had been
// answered; they are no message, and are read only to take over what such
// a version left unanswered (LegacyPending).
type storedLine struct {
	llm.Message
	Origin   *Origin `json:"origin,omitempty"`
	Answered bool    `json:"answered,omitempty"`
}

// sender is the name a message from o is shown under in archive
// transcripts (llm.Message.Sender): the platform's display name, or its id
// without one; none for the local terminal, whose user is the operator.
func (o Origin) sender() string {
	if o.Local {
		return ""
	}
	if o.SenderName != "" {
		return o.SenderName
	}
	return o.SenderID
}

func (s *Session) addOrigin(i int, o Origin) {
	if s.origins == nil {
		s.origins = map[int]Origin{}
	}
	s.origins[i] = o
}

// AppendUser records a user message with its origin. A message that is
// already the session's newest user message (same channel and message id:
// a restart answering what a crash left after its turn had recorded it) is
// not recorded twice; it reports whether it wrote.
func (s *Session) AppendUser(m llm.Message, o Origin) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.newestUserLocked(); ok && o.MessageID != "" {
		if p, ok := s.origins[i]; ok && p.Channel == o.Channel && p.MessageID == o.MessageID {
			return false, nil
		}
	}
	if m.Time.IsZero() {
		m.Time = s.now().UTC()
	}
	m.Sender = o.sender()
	spans, err := s.writeLines(storedLine{Message: m, Origin: &o})
	if err != nil {
		return false, err
	}
	s.addOrigin(s.base+len(s.msgs), o)
	s.msgs = append(s.msgs, m)
	s.lines = append(s.lines, spans...)
	return true, nil
}

// Recorded is what a session holds of one user message.
type Recorded struct {
	// Held: the session recorded the message (a turn started on it).
	Held bool
	// Newest: it is the session's newest user message, so no later turn
	// began; a message held but not newest was answered before.
	Newest bool
	// Reply is the final answer recorded after it (before any later user
	// message), "" when none is: its turn never finished, or its answer
	// was a notice that is not kept.
	Reply string
}

// Recorded reports what the session holds of the user message from o's
// channel with o's message id; sent is when the platform says it was sent
// (zero when unknown), see findLocked.
func (s *Session) Recorded(o Origin, sent time.Time) Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.findLocked(o, sent)
	if !ok {
		return Recorded{}
	}
	r := Recorded{Held: true}
	if n, ok := s.newestUserLocked(); !ok || n != i {
		return r
	}
	r.Newest = true
	for _, m := range s.msgs[i-s.base+1:] {
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) == 0 {
			r.Reply = m.Content
		}
	}
	return r
}

// clockSkew is how far a platform's clock may be ahead of this machine's.
const clockSkew = time.Minute

// findLocked returns the index of the user message from o, reading the
// archived head of the file (not held in memory, tail.go) when it is not
// in the tail and may be in the head. A message sent (by the platform's
// clock) after the first held message was recorded, by more than
// clockSkew, was recorded after it if at all, so it is not in the head:
// reading the head for every new message made each turn of a long
// session read its whole file. The caller holds s.mu.
func (s *Session) findLocked(o Origin, sent time.Time) (int, bool) {
	find := func() (int, bool) {
		for i, p := range s.origins {
			if p.Channel == o.Channel && p.MessageID == o.MessageID {
				return i, true
			}
		}
		return 0, false
	}
	if i, ok := find(); ok || s.base == 0 || s.headRead {
		return i, ok
	}
	if len(s.msgs) > 0 && !sent.IsZero() && !s.msgs[0].Time.IsZero() && sent.After(s.msgs[0].Time.Add(clockSkew)) {
		return 0, false
	}
	if _, err := s.readHeadLocked(); err != nil { // the scan records the head's origins
		s.logger.Warn("could not read a session's archived messages", "session", s.meta.Key, "err", err)
		return 0, false
	}
	return find()
}

// newestUserLocked is the index of the session's newest user message
// among those held in memory: the margin kept before last_consolidated
// starts at a user message, so the newest one is held unless a single turn
// ran past maxTurnBack messages. The caller holds s.mu.
func (s *Session) newestUserLocked() (int, bool) {
	for i := len(s.msgs) - 1; i >= 0; i-- {
		if s.msgs[i].Role == llm.RoleUser {
			return s.base + i, true
		}
	}
	return 0, false
}

// LegacyPending is the message a version that marked answers in the
// session file left unanswered: its newest user message, when it has an
// origin and no answered mark follows it. The gateway's inbox takes such
// messages over once, the first time it starts.
func (s *Session) LegacyPending() (m llm.Message, o Origin, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.newestUserLocked()
	if !ok || i < s.answered {
		return llm.Message{}, Origin{}, false
	}
	o, ok = s.origins[i]
	if !ok {
		return llm.Message{}, Origin{}, false
	}
	return s.msgs[i-s.base], o, true
}

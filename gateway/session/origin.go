package session

import (
	"fmt"
	"time"

	"github.com/dreamgate/dreamgate/llm"
)

// Origin is where a user message came from: enough to answer it after a
// restart (the platform acked it, so nothing will deliver it again). It is
// stored on the message's line as "origin"; lines written before it existed
// have none.
type Origin struct {
	Channel    string `json:"channel"`
	ChatID     string `json:"chat,omitempty"`
	ThreadID   string `json:"thread,omitempty"`
	MessageID  string `json:"message_id,omitempty"`
	SenderID   string `json:"sender_id,omitempty"`
	SenderName string `json:"sender_name,omitempty"`
	Local      bool   `json:"local,omitempty"`
}

// storedLine is one line of a message file: a message (with the origin of a
// user message), or an answered mark, {"answered":true}, which says every
// message before it has been answered and is not a message itself.
type storedLine struct {
	llm.Message
	Origin   *Origin `json:"origin,omitempty"`
	Answered bool    `json:"answered,omitempty"`
}

// answeredMark is the line MarkAnswered writes.
type answeredMark struct {
	Answered bool      `json:"answered"`
	Time     time.Time `json:"timestamp"`
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

// AppendUser records a user message with its origin. A message already
// recorded and not yet answered (same channel and message id: a restart
// answering what a crash left, or a platform's redelivery) is not recorded
// twice; it reports whether it wrote.
func (s *Session) AppendUser(m llm.Message, o Origin) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.pendingLocked(); ok && o.MessageID != "" {
		if p := s.origins[i]; p.Channel == o.Channel && p.MessageID == o.MessageID {
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

// MarkAnswered records that every message so far has been answered (the
// reply or a failure notice was sent). It writes nothing when there is no
// message since the last mark.
func (s *Session) MarkAnswered() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.base + len(s.msgs)
	if s.answered >= n {
		return nil
	}
	if _, err := s.writeLines(answeredMark{Answered: true, Time: s.now().UTC()}); err != nil {
		return fmt.Errorf("mark session %s answered: %w", s.meta.Key, err)
	}
	s.answered = n
	return nil
}

// Holds reports whether the session recorded a user message from o's
// channel with o's message id; sent is when the platform says it was sent
// (zero when unknown), see findLocked.
func (s *Session) Holds(o Origin, sent time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.findLocked(o, sent)
	return ok
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

// Answered reports whether the session holds a user message from o's
// channel with o's message id that an answered mark covers: the platform
// delivered it again (its ack was lost with a killed process). sent is as
// for Holds.
func (s *Session) Answered(o Origin, sent time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.findLocked(o, sent)
	return ok && i < s.answered
}

// Pending is a user message that was accepted and never answered: the
// process stopped between recording it and sending the answer.
type Pending struct {
	Message llm.Message
	Origin  Origin
	// Reply is the final answer when the session recorded it but no
	// answered mark followed (it may not have been sent); "" when the turn
	// never finished.
	Reply string
}

// Pending returns the session's unanswered user message, if any: the
// newest user message with an origin, after the last answered mark.
func (s *Session) Pending() (Pending, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.pendingLocked()
	if !ok {
		return Pending{}, false
	}
	p := Pending{Message: s.msgs[i-s.base], Origin: s.origins[i]}
	for _, m := range s.msgs[i-s.base+1:] {
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) == 0 {
			p.Reply = m.Content
		}
	}
	return p, true
}

// pendingLocked finds the index of the newest user message with an origin
// after the answered mark. The caller holds s.mu.
func (s *Session) pendingLocked() (int, bool) {
	// Indexes are positions in the whole file; msgs holds those from base
	// on, which always include the newest user turn.
	for i := s.base + len(s.msgs) - 1; i >= max(s.answered, s.base); i-- {
		if s.msgs[i-s.base].Role != llm.RoleUser {
			continue
		}
		if _, ok := s.origins[i]; ok {
			return i, true
		}
		return 0, false // a user message without an origin: not ours to answer
	}
	return 0, false
}

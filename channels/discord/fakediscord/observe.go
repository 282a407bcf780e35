package fakediscord

import (
	"context"
	"fmt"
	"slices"
)

// Identified returns the shard of every IDENTIFY, in order.
func (s *Server) Identified() []ShardInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ShardInfo(nil), s.identified...)
}

// Sent returns the messages the bot created, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Attempts returns every POST /channels/{id}/messages, in order.
func (s *Server) Attempts() []Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Attempt(nil), s.attempts...)
}

// Edits returns the message edits, in order.
func (s *Server) Edits() []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Edit(nil), s.edits...)
}

// WaitEdits waits until at least n edits were made and returns them all.
func (s *Server) WaitEdits(ctx context.Context, n int) ([]Edit, error) {
	var out []Edit
	err := s.waitFor(ctx, func() bool {
		if len(s.edits) < n {
			return false
		}
		out = append([]Edit(nil), s.edits...)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("wait for %d edits: %w", n, err)
	}
	return out, nil
}

// Deleted returns the ids of deleted messages, in order.
func (s *Server) Deleted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deleted...)
}

// Shown returns what a channel shows now: the content of its messages,
// oldest first, after edits and deletions. from, when set, skips messages
// up to and including that id.
func (s *Server) Shown(channelID, from string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range s.history[channelID] {
		if from != "" && !snowflakeLess(from, id) {
			continue
		}
		c, _ := s.messages[id]["content"].(string)
		out = append(out, c)
	}
	return out
}

// Typing returns the typing calls, in order.
func (s *Server) Typing() []Typing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Typing(nil), s.typing...)
}

// Requests returns every REST request, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Stats returns the gateway counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// WaitSent waits until the bot has created at least n messages and returns
// them all.
func (s *Server) WaitSent(ctx context.Context, n int) ([]Sent, error) {
	var out []Sent
	err := s.waitFor(ctx, func() bool {
		if len(s.sent) < n {
			return false
		}
		out = append([]Sent(nil), s.sent...)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("wait for %d sent messages (have %d): %w", n, len(s.Sent()), err)
	}
	return out, nil
}

// WaitTyping waits until at least n typing calls were made.
func (s *Server) WaitTyping(ctx context.Context, n int) ([]Typing, error) {
	var out []Typing
	err := s.waitFor(ctx, func() bool {
		if len(s.typing) < n {
			return false
		}
		out = append([]Typing(nil), s.typing...)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("wait for %d typing calls: %w", n, err)
	}
	return out, nil
}

// WaitSessions waits until n gateway handshakes (READY or RESUMED) have
// completed in total.
func (s *Server) WaitSessions(ctx context.Context, n int) error {
	err := s.waitFor(ctx, func() bool { return s.stats.Identifies+s.stats.Resumes >= n })
	if err != nil {
		return fmt.Errorf("wait for %d gateway sessions: %w", n, err)
	}
	return nil
}

// WaitConnections waits until n websockets have been opened in total.
func (s *Server) WaitConnections(ctx context.Context, n int) error {
	err := s.waitFor(ctx, func() bool { return s.stats.Connections >= n })
	if err != nil {
		return fmt.Errorf("wait for %d gateway connections: %w", n, err)
	}
	return nil
}

// WaitHeartbeats waits until n heartbeats have been acknowledged in total.
func (s *Server) WaitHeartbeats(ctx context.Context, n int) error {
	err := s.waitFor(ctx, func() bool { return s.stats.HeartbeatAcks >= n })
	if err != nil {
		return fmt.Errorf("wait for %d heartbeat ACKs: %w", n, err)
	}
	return nil
}

// WaitRequest waits until a REST request with this method and path was made.
func (s *Server) WaitRequest(ctx context.Context, method, path string) error {
	err := s.waitFor(ctx, func() bool {
		for _, r := range s.requests {
			if r.Method == method && r.Path == path {
				return true
			}
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("wait for %s %s: %w", method, path, err)
	}
	return nil
}

// waitFor calls cond under the lock after every change until it holds.
func (s *Server) waitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			return nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// LiveShards lists the shards that have a connected, identified session
// now, in order.
func (s *Server) LiveShards() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveShardsLocked()
}

func (s *Server) liveShardsLocked() []int {
	var out []int
	for id, sh := range s.shards {
		if sh.conn != nil && sh.conn.isReady() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// WaitIdentified waits until shard was identified at least n times in
// total (a process taking a shard over identifies it anew).
func (s *Server) WaitIdentified(ctx context.Context, shard, n int) error {
	err := s.waitFor(ctx, func() bool {
		got := 0
		for _, i := range s.identified {
			if i.ID == shard {
				got++
			}
		}
		return got >= n && slices.Contains(s.liveShardsLocked(), shard)
	})
	if err != nil {
		return fmt.Errorf("wait for shard %d's identify #%d: %w", shard, n, err)
	}
	return nil
}

package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/dreamgate/dreamgate/channels"
)

// maxStreams bounds the streams kept waiting for their turn's final Send;
// a turn always ends with one, so only a lost Send leaves one behind.
const maxStreams = 1024

// StartStream implements channels.Streamer: a reply appears as the model
// writes it, posted once it has run for streamEvery and then edited at most
// once per streamEvery (Discord allows about 5 edits per 5 s per channel), split
// at 2000 characters as Send splits it. An answer written faster than that
// is simply posted by Send. Interactions and a disabled Config.Stream are
// not streamed.
func (a *Adapter) StartStream(in channels.Inbound) channels.Stream {
	target := in.ThreadID
	if target == "" {
		target = in.ChatID
	}
	if !a.stream || target == "" || in.MessageID == "" || strings.HasPrefix(in.MessageID, interactionPrefix) {
		return nil
	}
	s := &stream{a: a, target: target, replyTo: in.MessageID, session: in.SessionKey, started: time.Now()}
	key := streamKey(target, in.MessageID)
	a.streamsMu.Lock()
	old := a.streams[key]
	if len(a.streams) >= maxStreams {
		for k, st := range a.streams {
			delete(a.streams, k)
			go st.stop()
			break
		}
	}
	a.streams[key] = s
	a.streamsMu.Unlock()
	if old != nil {
		old.stop()
	}
	return s
}

func streamKey(target, replyTo string) string { return target + "/" + replyTo }

// takeStream removes and returns the stream a final Send finishes, if any.
func (a *Adapter) takeStream(out channels.Outbound) *stream {
	if out.Kind != channels.KindReply && out.Kind != channels.KindError || out.ReplyTo == "" {
		return nil
	}
	target := out.ThreadID
	if target == "" {
		target = out.ChatID
	}
	key := streamKey(target, out.ReplyTo)
	a.streamsMu.Lock()
	defer a.streamsMu.Unlock()
	s := a.streams[key]
	delete(a.streams, key)
	return s
}

// stream shows one turn's answer while it is written. Write and Break come
// from the turn's goroutine; flushes run on a timer, one at a time; the
// final Send stops it and takes over its messages.
type stream struct {
	a                        *Adapter
	target, replyTo, session string
	started                  time.Time
	flushing                 sync.Mutex // held by a flush and by finish
	mu                       sync.Mutex // guards the fields below
	text                     strings.Builder
	timer                    *time.Timer
	last                     time.Time // start of the last flush
	done                     bool
	ids                      []string // the messages showing the parts
	shown                    []string // what each shows
	failed                   bool     // a flush failed: leave the rest to Send
}

// Write implements channels.Stream.
func (s *stream) Write(fragment string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text.WriteString(fragment)
	s.scheduleLocked()
}

// Break implements channels.Stream: the text so far preceded a tool call;
// the next step's text replaces it in the same messages.
func (s *stream) Break() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text.Reset()
}

func (s *stream) scheduleLocked() {
	if s.done || s.failed || s.timer != nil {
		return
	}
	from := s.last
	if from.IsZero() {
		from = s.started
	}
	s.timer = time.AfterFunc(time.Until(from.Add(s.a.tune.streamEvery)), s.flush)
}

// flush shows the text written so far.
func (s *stream) flush() {
	s.flushing.Lock()
	defer s.flushing.Unlock()
	s.mu.Lock()
	s.timer = nil
	if s.done || s.failed {
		s.mu.Unlock()
		return
	}
	s.last = time.Now()
	raw := s.text.String()
	s.mu.Unlock()
	text := channels.Visible(raw)
	if text == "" {
		return
	}
	// Not the turn's context: a flush is never cancelled half-way (that
	// would spoil discordgo's rate-limit bucket), only bounded.
	ctx, cancel := context.WithTimeout(context.Background(), s.a.tune.streamCallTimeout)
	defer cancel()
	err := s.show(ctx, nil, channels.SplitMessage(text, MaxMessageLen))
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		// Send will post or edit the whole reply.
		s.a.log.Debug("discord: streaming a reply failed", "session", s.session, "err", err)
		s.failed = true
		return
	}
	if s.text.String() != raw {
		s.scheduleLocked()
	}
}

// show makes the stream's messages show parts: changed parts are edited,
// missing ones posted, and (final only) surplus ones deleted. A flush gives
// up on a rate limit; the final show waits it out.
//
// r is the final Send's retries; nil for a flush.
func (s *stream) show(ctx context.Context, r *channels.Retry, parts []string) error {
	final := r != nil
	call := func(ctx context.Context, f func(context.Context) error) error {
		if final {
			return s.a.retry(ctx, r, f)
		}
		return f(ctx)
	}
	for i, part := range parts {
		if strings.TrimSpace(part) == "" {
			continue
		}
		if i < len(s.ids) {
			if s.shown[i] == part {
				continue
			}
			id := s.ids[i]
			err := call(ctx, func(ctx context.Context) error { return s.a.editMessage(ctx, s.target, id, part) })
			if err != nil {
				return fmt.Errorf("edit part %d: %w", i+1, err)
			}
			s.shown[i] = part
			continue
		}
		replyTo := ""
		if i == 0 {
			replyTo = s.replyTo
		}
		var id string
		err := call(ctx, func(ctx context.Context) error {
			var err error
			id, err = s.a.postMessage(ctx, s.target, part, replyTo)
			return err
		})
		if err != nil {
			return fmt.Errorf("post part %d: %w", i+1, err)
		}
		s.ids = append(s.ids, id)
		s.shown = append(s.shown, part)
	}
	if final {
		for i := len(parts); i < len(s.ids); i++ {
			id := s.ids[i]
			if err := s.a.retry(ctx, r, func(ctx context.Context) error { return s.a.deleteMessage(ctx, s.target, id) }); err != nil {
				return fmt.Errorf("delete surplus part %d: %w", i+1, err)
			}
		}
		if len(parts) < len(s.ids) {
			s.ids, s.shown = s.ids[:len(parts)], s.shown[:len(parts)]
		}
	}
	return nil
}

// stop ends the flushes; it waits for one in flight.
func (s *stream) stop() {
	s.mu.Lock()
	s.done = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.mu.Unlock()
	s.flushing.Lock()
	defer s.flushing.Unlock()
}

// finish ends the stream with the turn's final text; handled is false when
// nothing was shown yet (or streaming failed before anything was), and
// Send should post the text as usual. A failed turn's error is posted as
// usual below what was shown.
func (s *stream) finish(ctx context.Context, r *channels.Retry, out channels.Outbound) (handled bool, err error) {
	s.stop()
	s.flushing.Lock()
	defer s.flushing.Unlock()
	if len(s.ids) == 0 || out.Kind != channels.KindReply {
		return false, nil
	}
	if err := s.show(ctx, r, channels.SplitMessage(out.Text, MaxMessageLen)); err != nil {
		return true, fmt.Errorf("finish streamed reply in discord channel %s: %w", s.target, err)
	}
	return true, nil
}

// postMessage posts one message (a reply to replyTo when set) and returns
// its id.
func (a *Adapter) postMessage(ctx context.Context, target, content, replyTo string) (string, error) {
	body := messageBody{
		Content:         content,
		Nonce:           newNonce(),
		EnforceNonce:    true,
		AllowedMentions: allowedMentions{Parse: []string{"users"}},
	}
	if replyTo != "" {
		body.MessageReference = &messageReference{MessageID: replyTo, ChannelID: target}
	}
	endpoint := discordgo.EndpointChannelMessages(target)
	resp, err := a.session.RequestWithBucketID(http.MethodPost, endpoint, body, endpoint, discordgo.WithContext(ctx))
	if err != nil {
		return "", err
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(resp, &m); err != nil {
		return "", fmt.Errorf("decode created message: %w", err)
	}
	if m.ID == "" {
		return "", errors.New("created message has no id")
	}
	return m.ID, nil
}

// editMessage replaces a message's content; mentions stay as limited as
// when it was posted.
func (a *Adapter) editMessage(ctx context.Context, target, id, content string) error {
	body := struct {
		Content         string          `json:"content"`
		AllowedMentions allowedMentions `json:"allowed_mentions"`
	}{content, allowedMentions{Parse: []string{"users"}}}
	bucket := discordgo.EndpointChannelMessages(target)
	_, err := a.session.RequestWithBucketID(http.MethodPatch, discordgo.EndpointChannelMessage(target, id), body, bucket, discordgo.WithContext(ctx))
	return err
}

func (a *Adapter) deleteMessage(ctx context.Context, target, id string) error {
	bucket := discordgo.EndpointChannelMessages(target) + "/delete"
	_, err := a.session.RequestWithBucketID(http.MethodDelete, discordgo.EndpointChannelMessage(target, id), nil, bucket, discordgo.WithContext(ctx))
	return err
}

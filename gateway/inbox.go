package gateway

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/workspace"
)

// Not losing a message. A platform acks a message once the gateway has
// taken it, and never delivers it again; a process that dies before
// answering must leave a record the next start answers from. That record
// is the inbox, one file, and it alone says whether a message has been
// answered: a message is written to it when Submit accepts it and marked
// answered once its sender has heard back (the answer, or a notice that it
// was not answered). The session records the conversation itself — the
// message with its origin once a turn starts on it, and the reply — which
// the start reads to see how far a turn got. The one recovery path is
// answerPending, at start: every message accepted and not answered is
// answered, from its recorded reply when there is one.

// inbox is the record of platform messages from acceptance to answer. One
// JSON line each: an accepted message (key, origin, text, time), or an
// answered mark naming a message by its origin. Lines are written (not
// synced: it guards against a dead process, not a dead machine) before
// Submit returns and before the reply's sender moves on. Answered
// messages are remembered for keepAnswered, so that a platform delivering
// one again (a killed process could not ack it) is not answered twice.
type inbox struct {
	path string

	mu       sync.Mutex
	f        *os.File
	open     map[string]openLine  // accepted, not answered, by id
	answered map[string]time.Time // answered within keepAnswered, by id
	seq      int                  // orders open lines as accepted
	written  int                  // lines in the file
	// rewritten is when the file was last written whole, which forgets
	// answers older than keepAnswered.
	rewritten time.Time
}

type openLine struct {
	inboxLine
	seq int
}

// inboxLine is one line of the inbox file.
type inboxLine struct {
	Key    string         `json:"key,omitempty"`
	Origin session.Origin `json:"origin"`
	Text   string         `json:"text,omitempty"`
	Time   time.Time      `json:"timestamp"`
	// Answered marks the message of Origin answered; Time is when.
	Answered bool `json:"answered,omitempty"`
}

// inboxHeader opens a file of this format. An inbox without it was written
// by a version that dropped a message from the inbox once its session held
// it, and marked the answer in the session: see takeOverLegacy.
type inboxHeader struct {
	Inbox int `json:"inbox"`
}

const inboxVersion = 2

// keepAnswered is how long an answered message is remembered, by every
// engine (store.KeepAnswered). Slack retries an unacked envelope for a few
// minutes and Discord does not deliver again across a restart; a later
// delivery of a message the session holds as answered is caught there
// (redelivered).
const keepAnswered = store.KeepAnswered

func (l inboxLine) id() string { return originID(l.Origin) }

func originID(o session.Origin) string { return o.Channel + "\x00" + o.MessageID }

// openInbox reads what a previous process left in path: the messages it
// accepted and did not answer, oldest first, and whether the file is of an
// earlier format (or missing). Those messages stay open until answered.
func openInbox(path string, now time.Time) (ib *inbox, left []inboxLine, legacy bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false, fmt.Errorf("read inbox: %w", err)
	}
	ib = &inbox{path: path, open: map[string]openLine{}, answered: map[string]time.Time{}}
	legacy = true
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var h inboxHeader
		if json.Unmarshal(sc.Bytes(), &h) == nil && h.Inbox >= inboxVersion {
			legacy = false
			continue
		}
		var l inboxLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Origin.MessageID == "" {
			continue // a torn last line, or the header
		}
		if l.Answered {
			delete(ib.open, l.id())
			if now.Sub(l.Time) < keepAnswered {
				ib.answered[l.id()] = l.Time
			}
		} else if l.Key != "" {
			ib.openLocked(l)
		}
	}
	if err := ib.rewriteLocked(now); err != nil {
		return nil, nil, false, err
	}
	return ib, ib.openLines(), legacy, nil
}

// accept records an accepted message. known reports a message accepted
// before (open or answered): a platform delivering it again.
func (ib *inbox) accept(l inboxLine) (known bool, err error) {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if _, ok := ib.open[l.id()]; ok {
		return true, nil
	}
	if _, ok := ib.answered[l.id()]; ok {
		return true, nil
	}
	if err := ib.writeLocked(l); err != nil {
		return false, err
	}
	ib.openLocked(l)
	return false, nil
}

// answer marks a message answered; a message that is not open (answered
// already, or never recorded) writes nothing.
func (ib *inbox) answer(o session.Origin, at time.Time) error {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	id := originID(o)
	if _, ok := ib.open[id]; !ok {
		return nil
	}
	delete(ib.open, id)
	ib.answered[id] = at
	if err := ib.writeLocked(inboxLine{Origin: session.Origin{Channel: o.Channel, MessageID: o.MessageID}, Time: at, Answered: true}); err != nil {
		return err
	}
	// The file only grows; once it holds mostly closed messages, or
	// answers past keepAnswered, it is written again with what is still
	// needed.
	if ib.written > 1024 && (ib.written > 4*(len(ib.open)+len(ib.answered)) || at.Sub(ib.rewritten) > keepAnswered) {
		return ib.rewriteLocked(at)
	}
	return nil
}

func (ib *inbox) openLocked(l inboxLine) {
	ib.seq++
	ib.open[l.id()] = openLine{inboxLine: l, seq: ib.seq}
}

// openLines returns the open messages in the order they were accepted.
func (ib *inbox) openLines() []inboxLine {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	open := make([]openLine, 0, len(ib.open))
	for _, l := range ib.open {
		open = append(open, l)
	}
	slices.SortFunc(open, func(a, b openLine) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]inboxLine, len(open))
	for i, l := range open {
		out[i] = l.inboxLine
	}
	return out
}

func (ib *inbox) writeLocked(l any) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode inbox line: %w", err)
	}
	if _, err := ib.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write inbox: %w", err)
	}
	ib.written++
	return nil
}

// compact writes the file again with what is still needed.
func (ib *inbox) compact(now time.Time) error {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	return ib.rewriteLocked(now)
}

// rewriteLocked replaces the file with the header, the open messages in
// the order they were accepted and the answers still remembered, and
// forgets answers older than keepAnswered. The caller holds ib.mu (or owns
// ib alone).
func (ib *inbox) rewriteLocked(now time.Time) error {
	var buf bytes.Buffer
	add := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode inbox line: %w", err)
		}
		buf.Write(append(b, '\n'))
		return nil
	}
	lines := 1
	if err := add(inboxHeader{Inbox: inboxVersion}); err != nil {
		return err
	}
	open := make([]openLine, 0, len(ib.open))
	for _, l := range ib.open {
		open = append(open, l)
	}
	slices.SortFunc(open, func(a, b openLine) int { return cmp.Compare(a.seq, b.seq) })
	for _, l := range open {
		if err := add(l.inboxLine); err != nil {
			return err
		}
		lines++
	}
	for id, at := range ib.answered {
		if now.Sub(at) >= keepAnswered {
			delete(ib.answered, id)
			continue
		}
		channel, msgID, _ := strings.Cut(id, "\x00")
		if err := add(inboxLine{Origin: session.Origin{Channel: channel, MessageID: msgID}, Time: at, Answered: true}); err != nil {
			return err
		}
		lines++
	}
	// The project's one atomic write: a unique temp name, so two
	// processes cannot write into each other's temp file.
	if err := workspace.WriteFile(ib.path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("replace inbox: %w", err)
	}
	f, err := os.OpenFile(ib.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open inbox: %w", err)
	}
	if ib.f != nil {
		_ = ib.f.Close()
	}
	ib.f, ib.written, ib.rewritten = f, lines, now
	return nil
}

func (ib *inbox) close() error {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if ib.f == nil {
		return nil
	}
	err := ib.f.Close()
	ib.f = nil
	return err
}

// resendWindow bounds how far back a start looks for messages a crash left
// unanswered: a conversation quiet for longer is not worth a late note.
const resendWindow = 24 * time.Hour

// restartedNotice answers a message a crash left unanswered that is older
// than Config.AnswerPending.
const restartedNotice = "dreamgate restarted before it could answer this message; please send it again."

// OpenInbox keeps the record of accepted messages at path, and takes over
// what a previous process left there: Run answers those messages. Only the
// gateway process that owns the channels opens it. An inbox of an earlier
// format is taken over once, with the messages its version left
// unanswered in session files.
func (g *Gateway) OpenInbox(path string) error {
	ib, left, legacy, err := openInbox(path, g.now())
	if err != nil {
		return err
	}
	g.inbox, g.inboxLeft = ib, left
	if legacy {
		g.takeOverLegacy()
	}
	return nil
}

// takeOverLegacy takes over what an earlier version left: it marked
// answers in session files and dropped a message from its inbox once its
// session held it, so its unanswered messages are the inbox's lines whose
// session does not hold them, and the newest user message of a recent
// session when it has an origin and no answered mark after it. It runs
// once; the inbox is then of the current format.
func (g *Gateway) takeOverLegacy() {
	now := g.now()
	pending := g.legacyPending(now)
	for _, l := range g.inboxLeft {
		if _, ok := pending[l.id()]; ok {
			continue
		}
		sess, err := g.deps.Sessions.Get(l.Key)
		if err != nil {
			continue // answerPending tries again, and says why
		}
		if sess.Recorded(l.Origin, l.Time).Held {
			// Its turn started under the earlier version: answered, unless
			// it is the session's pending message.
			if err := g.inbox.answer(l.Origin, now); err != nil {
				g.logger.Warn("inbox: cannot take over an earlier version's record", "session", l.Key, "err", err)
			}
		}
		g.deps.Sessions.Evict(sess)
	}
	taken := 0
	for _, l := range pending {
		known, err := g.inbox.accept(l)
		if err != nil {
			g.logger.Warn("inbox: cannot take over an unanswered message", "session", l.Key, "err", err)
		} else if !known {
			taken++
		}
	}
	if err := g.inbox.compact(now); err != nil {
		g.logger.Warn("could not compact the inbox", "err", err)
	}
	g.inboxLeft = g.inbox.openLines()
	g.logger.Info("inbox: now the one record of messages until they are answered (session files no longer mark answers)",
		"taken_over_from_sessions", taken, "unanswered", len(g.inboxLeft))
}

// legacyPending finds the messages an earlier version left unanswered in
// recent session files (session.LegacyPending), by id.
func (g *Gateway) legacyPending(now time.Time) map[string]inboxLine {
	out := map[string]inboxLine{}
	list, err := g.deps.Sessions.ListOnDisk()
	if err != nil {
		g.logger.Warn("inbox: cannot look for messages an earlier version left unanswered", "err", err)
		return out
	}
	for _, od := range list {
		if now.Sub(od.Modified) > resendWindow || g.deps.Sessions.IsLoaded(od.Key) {
			continue
		}
		sess, err := g.deps.Sessions.Get(od.Key)
		if err != nil {
			g.logger.Warn("inbox: cannot open a session to look for an unanswered message", "session", od.Key, "err", err)
			continue
		}
		m, o, ok := sess.LegacyPending()
		g.deps.Sessions.Evict(sess)
		if ok && !o.Local && o.MessageID != "" {
			l := inboxLine{Key: od.Key, Origin: o, Text: m.Content, Time: m.Time}
			out[l.id()] = l
		}
	}
	return out
}

// originOf is what a session records of where a message came from, so a
// restart can answer it.
func originOf(in channels.Inbound) session.Origin {
	return session.Origin{
		Channel: in.Channel, ChatID: in.ChatID, ThreadID: in.ThreadID, MessageID: in.MessageID,
		SenderID: in.SenderID, SenderName: in.SenderName, Local: in.Local, Audience: in.Audience,
	}
}

// inboundOf rebuilds a message a restart answers. It keeps the audience
// the message came with; a record from before audiences has none, and is
// answered as the narrowest (audienceOf).
func inboundOf(key string, o session.Origin, text string, at time.Time) channels.Inbound {
	in := channels.Inbound{
		Channel: o.Channel, ChatID: o.ChatID, ThreadID: o.ThreadID,
		SessionKey: key, SenderID: o.SenderID, SenderName: o.SenderName,
		Audience: o.Audience, MessageID: o.MessageID, Text: text, Time: at,
	}
	if in.Audience.Validate() != nil {
		in.Audience = audience.Unknown(key)
	}
	return in
}

// recoverable says whether a message can be answered after a restart: it
// has an id and comes from a platform, not from the local terminal, whose
// user is gone with the process.
func recoverable(in channels.Inbound) bool {
	return in.MessageID != "" && !in.Local
}

// accept records in the inbox a chat message Submit is about to queue. It
// reports a message accepted before (a platform delivered it again), and
// whether the inbox holds the message now: one it could not record is
// not there for another process to find, so this one answers it.
func (g *Gateway) accept(in channels.Inbound) (known, recorded bool) {
	if g.inbox == nil || !recoverable(in) {
		return false, false
	}
	known, err := g.inbox.accept(inboxLine{Key: in.SessionKey, Origin: originOf(in), Text: in.Text, Time: in.Time})
	if err != nil {
		g.logger.Warn("could not record an accepted message; a crash before its answer would lose it", "session", in.SessionKey, "err", err)
		return false, false
	}
	return known, true
}

// markAnswered records that in's sender has heard back (its answer, or a
// notice that it was not answered), so a restart does not answer it again.
func (g *Gateway) markAnswered(in channels.Inbound) {
	if g.inbox == nil || !recoverable(in) || g.abandoned(in) {
		return
	}
	if err := g.inbox.answer(originOf(in), g.now()); err != nil {
		g.logger.Warn("could not record that a message was answered; a restart may answer it again", "session", in.SessionKey, "err", err)
	}
	g.answering.done(originID(originOf(in)))
}

// redelivered reports a message its session shows was answered before: a
// later turn followed it, or its reply is recorded. A platform delivers
// again what a killed process read but did not ack; the inbox catches that
// (accept), and this catches what the inbox no longer remembers. It is
// not answered twice.
func (g *Gateway) redelivered(sess *session.Session, in channels.Inbound) bool {
	if !recoverable(in) {
		return false
	}
	if r := sess.Recorded(originOf(in), in.Time); !r.Held || r.Newest && r.Reply == "" {
		return false
	}
	g.logger.Info("message delivered again after a restart and already answered; ignored", "session", in.SessionKey)
	g.markAnswered(in)
	return true
}

// recordUser records the turn's user message in its session with its
// origin, once: a restart answering it may find it there already.
// A message the session held already had its turn begun by a process
// that died: its answer may be out (answer.go).
func (g *Gateway) recordUser(sess *session.Session, in channels.Inbound) error {
	added, err := sess.AppendUser(userMessage(in, true), originOf(in))
	if err == nil && !added && recoverable(in) {
		g.answering.set(originID(originOf(in)))
	}
	return err
}

func (g *Gateway) closeInbox() {
	if g.inbox != nil {
		if err := g.inbox.close(); err != nil {
			g.logger.Warn("closing the inbox", "err", err)
		}
	}
}

// answerPending answers, at start, the messages a crash left unanswered
// (the platform acked them, so nobody delivers them again), oldest first
// and before any new message: a recorded reply that may not have gone out
// is sent, a message received within Config.AnswerPending gets a turn,
// an older one is asked to be sent again, and one older than resendWindow
// is let go. A message whose channel this start lacks is kept for a start
// with that channel. Only the process that owns the channels does this:
// the one that opened the inbox.
func (g *Gateway) answerPending() {
	if g.inbox == nil {
		return
	}
	left := g.inboxLeft
	g.inboxLeft = nil
	now := g.now()
	if g.share != nil {
		// Shared: what is waiting is any process's to claim, this one's
		// too, by conversation (share.go), never all at once here.
		left = nil
	}
	for _, l := range left {
		in := inboundOf(l.Key, l.Origin, l.Text, l.Time)
		if now.Sub(l.Time) > resendWindow || g.cfg.AnswerPending <= 0 {
			g.logger.Info("letting go of a message a restart left unanswered", "session", l.Key, "age", now.Sub(l.Time).Round(time.Second))
			g.markAnswered(in)
			continue
		}
		if g.channel(l.Origin.Channel) == nil {
			continue
		}
		if pc := g.recordedCommand(in); pc != nil {
			g.requeueCommand(in, pc, now)
			continue
		}
		sess, err := g.deps.Sessions.Get(l.Key)
		if err != nil {
			g.logger.Warn("cannot open a session to answer a message a restart left", "session", l.Key, "err", err)
			continue
		}
		r := sess.Recorded(l.Origin, l.Time)
		if r.Held && !r.Newest {
			g.markAnswered(in) // a later turn followed: it was answered
			continue
		}
		g.requeue(in, r.Reply, now)
	}
	if err := g.inbox.compact(now); err != nil {
		g.logger.Warn("could not compact the inbox", "err", err)
	}
}

// requeue queues the answer to a message a crash left unanswered: its
// recorded reply when there is one, a turn when it is recent, else a
// request to send it again.
func (g *Gateway) requeue(in channels.Inbound, reply string, now time.Time) {
	age := now.Sub(in.Time)
	var j job
	switch {
	case reply != "":
		g.logger.Info("sending a reply a restart left unsent", "session", in.SessionKey, "age", age.Round(time.Second))
		j = job{in: in, task: func(ctx context.Context) { g.finishPending(ctx, in, channels.KindReply, reply) }}
	case age <= g.cfg.AnswerPending:
		g.logger.Info("answering a message a restart left unanswered", "session", in.SessionKey, "age", age.Round(time.Second))
		j = job{in: in} // a turn records the message once, whether or not the session holds it
	default:
		g.logger.Info("asking to resend a message a restart left unanswered", "session", in.SessionKey, "age", age.Round(time.Second))
		j = job{in: in, task: func(ctx context.Context) { g.finishPending(ctx, in, channels.KindError, restartedNotice) }}
	}
	if err := g.enqueue(j); err != nil {
		g.logger.Warn("could not queue an unanswered message", "session", in.SessionKey, "err", err)
	}
}

// requeueCommand queues a command a crash left unanswered: run again when
// it is recent, else its sender asked to send it again. Its session holds
// nothing of it: a command's reply is not part of the conversation.
func (g *Gateway) requeueCommand(in channels.Inbound, pc *parsedCommand, now time.Time) {
	j := job{in: in, cmd: pc}
	if now.Sub(in.Time) > g.cfg.AnswerPending {
		j = job{in: in, task: func(ctx context.Context) { g.finishPending(ctx, in, channels.KindError, restartedNotice) }}
	}
	g.logger.Info("running a command a restart left unanswered", "session", in.SessionKey, "command", pc.name, "again", j.cmd != nil)
	if err := g.enqueue(j); err != nil {
		g.logger.Warn("could not queue an unanswered command", "session", in.SessionKey, "err", err)
	}
}

// finishPending sends text for a pending message without a turn: its
// working indicator is cleared first, as no turn will clear it.
func (g *Gateway) finishPending(ctx context.Context, in channels.Inbound, kind, text string) {
	if c, ok := g.channel(in.Channel).(channels.WorkingClearer); ok {
		if err := c.ClearWorking(ctx, in); err != nil {
			g.logger.Warn("could not clear the working indicator of an unanswered message", "session", in.SessionKey, "err", err)
		}
	}
	o := g.answerOut(in, kind, text)
	o.Again = true // a reply recorded before the restart may be out
	g.send(o)
	g.markAnswered(in)
}

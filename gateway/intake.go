package gateway

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
)

// Intake: every inbound message goes through Submit. A priority command
// (/stop, /status) runs at once beside its session's queue; anything else
// joins the session's bounded queue, which one worker goroutine per session
// works through in order, so a session's turns never overlap while
// sessions run in parallel. A message over the size limit is cut at once
// and answered without the model.

// worker runs one session's jobs in order; it exists while the session has
// jobs queued or running.
type worker struct {
	key     string
	queue   []job
	running bool
	cancel  context.CancelFunc // of the job running now
	// When conversations are shared (share.go): holding says this
	// process holds the conversation's claim, handled are the messages
	// answered under it (by originID), sweep that the worker was started
	// to take a conversation nobody holds.
	holding bool
	handled map[string]bool
	sweep   bool
	// unordered: a message was queued under the claim since the queue
	// was last put in the inbox's order.
	unordered bool
	current   channels.Inbound // the message of the job running now
	// queued, while the worker holds its claim for a command answered
	// in the background (holdForLater), is closed when a job is queued.
	queued chan struct{}
}

// job is one thing a session's worker does: a chat turn, a command, or an
// internal task (an idle archive), which /stop leaves in the queue.
type job struct {
	in      channels.Inbound
	cmd     *parsedCommand // nil for a chat turn
	task    func(ctx context.Context)
	done    chan Result
	tooLong int // the original size of a message capInbound cut
	// shared: the message is in the inbox, where the process holding its
	// conversation finds it (share.go).
	shared bool
}

// Deliver accepts one inbound message (channels.Sink).
func (g *Gateway) Deliver(ctx context.Context, in channels.Inbound) error {
	_, err := g.Submit(ctx, in)
	return err
}

// Submit accepts one inbound message and returns a channel that receives
// its Result once it has been handled. A chat message, or a command the
// queue runs, is recorded in the inbox before it is queued, and one the
// inbox knows already (a platform delivering it again) is ignored. Once
// shutdown has begun, a message is still not dropped: it is saved in its
// session and its sender told to send it again.
func (g *Gateway) Submit(ctx context.Context, in channels.Inbound) (<-chan Result, error) {
	if in.Time.IsZero() {
		in.Time = g.now()
	}
	in.Audience = g.audienceOf(in)
	if in.Local {
		g.mu.Lock()
		g.local[in.SessionKey] = true
		g.mu.Unlock()
	}
	done := make(chan Result, 1)
	in, tooLong := g.capInbound(in)
	pc := parseCommand(in.Text)
	if tooLong > 0 {
		pc = nil // not run, whatever it starts with
	}
	recorded := false
	if pc == nil || g.recordsCommand(pc) {
		var known bool
		if known, recorded = g.accept(in); known {
			g.logger.Info("message delivered again and accepted before; ignored", "session", in.SessionKey)
			done <- Result{}
			return done, nil
		}
	}
	var err error
	// A message, or a command the inbox keeps, is answered by whichever
	// process holds its conversation, from the inbox: once the inbox
	// holds it.
	shared := g.share != nil && recorded && tooLong == 0
	switch c := g.commandFor(pc); {
	case c != nil && c.priority && !in.InOrder:
		err = g.runPriority(ctx, in, pc, done)
	case in.InOrder:
		err = g.enqueueWait(ctx, job{in: in, cmd: pc, done: done, tooLong: tooLong, shared: shared})
	default:
		err = g.enqueue(job{in: in, cmd: pc, done: done, tooLong: tooLong, shared: shared})
	}
	if errors.Is(err, channels.ErrBusy) {
		g.observer().Busy(in.Channel)
		g.markAnswered(in) // the channel tells its sender it was not taken
	}
	if errors.Is(err, channels.ErrClosed) {
		done <- g.refuseAtShutdown(in)
		return done, nil
	}
	return done, err
}

func (g *Gateway) commandFor(pc *parsedCommand) *command {
	if pc == nil {
		return nil
	}
	return g.commands[pc.name]
}

// runPriority runs a priority command (/stop, /status) beside the session's
// queue, so it works while a turn of that session is running.
func (g *Gateway) runPriority(ctx context.Context, in channels.Inbound, pc *parsedCommand, done chan<- Result) error {
	g.mu.Lock()
	closed := g.closed
	if !closed {
		g.backgroundWG.Add(1)
	}
	g.mu.Unlock()
	if closed {
		return channels.ErrClosed
	}
	go func() {
		defer g.backgroundWG.Done()
		res := g.runCommand(context.WithoutCancel(ctx), in, pc)
		if g.queued(in.SessionKey) == 0 {
			g.releaseSession(in.SessionKey) // /status may have loaded it
		}
		done <- res
	}()
	return nil
}

// releaseSession lets go of the file and lock of a session with no work
// left (session.Store.Release): a conversation holds descriptors only while
// it is being answered, and another process may take it meanwhile. A local
// terminal's conversation is kept: its person is at the terminal, and a
// `chat` beside the gateway must be refused it. A session released while
// a job of it starts after all wakes again on its next write.
func (g *Gateway) releaseSession(key string) {
	g.mu.Lock()
	keep := g.local[key]
	g.mu.Unlock()
	if !keep {
		g.deps.Sessions.Release(key)
	}
}

func (g *Gateway) enqueue(j job) error {
	key := j.in.SessionKey
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return channels.ErrClosed
	}
	w := g.workers[key]
	if w == nil {
		w = &worker{key: key}
		g.workers[key] = w
	}
	if len(w.queue) >= g.cfg.QueueSize {
		return channels.ErrBusy
	}
	w.queue = append(w.queue, j)
	if w.queued != nil {
		close(w.queued)
		w.queued = nil
	}
	if j.shared && w.holding {
		// Another process may have accepted a message of this
		// conversation before this one: the inbox orders them.
		w.unordered = true
	}
	if !w.running {
		w.running = true
		g.workerWG.Add(1)
		go g.runWorker(w)
	}
	return nil
}

// enqueueWait queues j as enqueue does, but waits for room in a full
// queue instead of refusing it: a script piping lines in cannot try again
// later, as a person told the conversation is busy can. It returns ctx's
// error when ctx ends first.
func (g *Gateway) enqueueWait(ctx context.Context, j job) error {
	for {
		g.mu.Lock()
		room := g.room // taken before the try, so no leaving job is missed
		g.mu.Unlock()
		err := g.enqueue(j)
		if !errors.Is(err, channels.ErrBusy) {
			return err
		}
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (g *Gateway) runWorker(w *worker) {
	defer g.workerWG.Done()
	for {
		g.mu.Lock()
		if len(w.queue) == 0 && !w.holding && !w.sweep {
			w.running = false
			delete(g.workers, w.key)
			g.mu.Unlock()
			return
		}
		if g.share != nil && (len(w.queue) == 0 || !w.holding || w.unordered) {
			// Shared conversations: take the claim first, or look for
			// more before letting it go (share.go).
			g.mu.Unlock()
			g.turnover(g.turnCtx, w)
			continue
		}
		j := w.queue[0]
		w.queue = w.queue[1:]
		close(g.room)
		g.room = make(chan struct{})
		ctx, cancel := context.WithCancel(g.turnCtx)
		w.cancel, w.current = cancel, j.in
		g.mu.Unlock()

		res := g.runJob(ctx, j)

		// The job is over before anyone hears of it: a /stop that
		// arrives after the result must find nothing running.
		g.mu.Lock()
		w.cancel = nil
		idle := len(w.queue) == 0
		if g.share != nil && recoverable(j.in) {
			if w.handled == nil {
				w.handled = map[string]bool{}
			}
			w.handled[originID(originOf(j.in))] = true
		}
		g.mu.Unlock()
		cancel()
		if idle {
			g.releaseSession(w.key)
		}
		if j.done != nil {
			j.done <- res
		}
	}
}

func (g *Gateway) runJob(ctx context.Context, j job) Result {
	switch {
	case j.task != nil:
		j.task(ctx)
		return Result{}
	case g.turnCtx.Err() != nil:
		return g.refuseAtShutdown(j.in)
	case j.tooLong > 0:
		return g.answerTooLong(j.in, j.tooLong)
	case j.cmd != nil:
		return g.runCommand(ctx, j.in, j.cmd)
	default:
		return g.observedTurn(ctx, j.in)
	}
}

// refuseAtShutdown handles a message still queued when shutdown ran out of
// time: it is saved in its session, so nothing said is lost, and the sender
// is told it was not answered.
func (g *Gateway) refuseAtShutdown(in channels.Inbound) Result {
	if parseCommand(in.Text) == nil {
		if s, err := g.openSession(in, false); err == nil {
			if err := s.Append(userMessage(in, false)); err != nil {
				g.logger.Error("could not save a message at shutdown", "session", in.SessionKey, "err", err)
			}
		}
	}
	g.send(channels.ReplyTo(in, channels.KindError, shutdownNotice))
	g.markAnswered(in)
	return Result{Reply: shutdownNotice, Err: channels.ErrClosed}
}

// cancelRunning cancels the job running for a session; it reports whether
// there was one.
func (g *Gateway) cancelRunning(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.workers[key]
	if w == nil || w.cancel == nil {
		return false
	}
	w.cancel()
	return true
}

// dropQueued takes a session's waiting messages and commands out of its
// queue (/stop) and returns them; internal tasks (idle archives) stay.
func (g *Gateway) dropQueued(key string) []job {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.workers[key]
	if w == nil {
		return nil
	}
	var dropped, kept []job
	for _, j := range w.queue {
		if j.task != nil {
			kept = append(kept, j)
		} else {
			dropped = append(dropped, j)
		}
	}
	w.queue = kept
	return dropped
}

// queued reports how many jobs wait for a session, including a running one.
func (g *Gateway) queued(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.workers[key]
	if w == nil {
		return 0
	}
	n := len(w.queue)
	if w.cancel != nil {
		n++
	}
	return n
}

var errStopped = errors.New("stopped by /stop")

// shutdownNotice answers a message that shutdown left unanswered.
const shutdownNotice = "dreamgate was shutting down before it could answer this; your message is saved, please send it again."

// QueueDepth is the number of messages waiting behind a running job, over
// all sessions (metrics read it at scrape time).
func (g *Gateway) QueueDepth() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, w := range g.workers {
		n += len(w.queue)
	}
	return n
}

// DefaultMaxMessageBytes is the inbound size limit when Config leaves it 0.
const DefaultMaxMessageBytes = 64 << 10

// capInbound cuts a message longer than the limit right away, so a
// megabyte pasted into a chat is not held, tokenised and replayed: the text
// keeps its first MaxMessageBytes (at a character boundary) and a visible
// marker. It returns the original size, 0 when the message fits.
func (g *Gateway) capInbound(in channels.Inbound) (channels.Inbound, int) {
	limit := g.maxMessageBytes()
	size := len(in.Text)
	if size <= limit {
		return in, 0
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(in.Text[cut]) {
		cut--
	}
	// The concatenation is a fresh string: the original is not kept alive.
	in.Text = in.Text[:cut] +
		fmt.Sprintf("\n\n[cut by dreamgate: this message was %d bytes; only the first %d are kept]", size, cut)
	return in, size
}

func (g *Gateway) maxMessageBytes() int {
	if g.cfg.MaxMessageBytes > 0 {
		return g.cfg.MaxMessageBytes
	}
	return DefaultMaxMessageBytes
}

// answerTooLong answers a message capInbound cut, without asking the model:
// the cut message and the answer are saved in the session (so the record
// says what happened, and nothing looks unanswered after a restart), and
// the sender is told how long is too long.
func (g *Gateway) answerTooLong(in channels.Inbound, size int) Result {
	notice := fmt.Sprintf("Your message is too long for me (%s; the limit is %s), so I did not answer it; "+
		"only its first %s is kept in this conversation. Please send a shorter message, or split it into parts.",
		formatBytes(size), formatBytes(g.maxMessageBytes()), formatBytes(g.maxMessageBytes()))
	g.logger.Warn("over-long message cut and not answered", "session", in.SessionKey, "bytes", size, "limit", g.maxMessageBytes())
	if sess, err := g.openSession(in, true); err != nil {
		g.logger.Error("cannot open session", "session", in.SessionKey, "err", err)
	} else if err := sess.Append(
		userMessage(in, false),
		llm.Message{Role: llm.RoleAssistant, Content: notice},
	); err != nil {
		g.logger.Error("cannot save the cut message", "session", in.SessionKey, "err", err)
	}
	g.send(channels.ReplyTo(in, channels.KindReply, notice))
	g.markAnswered(in)
	return Result{Reply: notice}
}

// formatBytes writes a size the way people read it: "64 KiB", "5.0 MiB".
func formatBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

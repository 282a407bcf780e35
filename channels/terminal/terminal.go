// Package terminal is the built-in channel: a chat on stdin/stdout for the
// person at the machine, who is always an admin. Replies go to stdout;
// errors and progress lines go to stderr, so a one-shot `chat -m` can be
// scripted.
//
// It imports only channels and the audience leaf (its conversations are
// the operator's).
package terminal

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
)

// Name is the adapter name, used in session keys ("terminal:<name>").
const Name = "terminal"

// Config wires the terminal to its streams.
type Config struct {
	In       io.Reader // nil: no input (one-shot mode)
	Out, Err io.Writer
	// Session names the conversation: the key is "terminal:<Session>".
	Session string
	// User is recorded as the sender; "" means the OS user.
	User string
	// Prompt is printed before each line is read, when non-empty.
	Prompt string
	// Interactive says a person types the input. Lines that are not typed
	// (piped in by a script) are answered strictly in order
	// (channels.Inbound.InOrder), so /status there reports on the lines
	// before it.
	Interactive bool
	// MaxLineBytes bounds one line of input; a longer line is reported
	// and skipped. 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// Stream shows replies on Out as the model writes them. It is meant for
	// a person watching a terminal: the text of a step that ends in a tool
	// call is shown too, so a script reading Out should leave it off.
	Stream bool
	// OutTerminal and ErrTerminal say that Out and Err are terminals: the
	// control characters of what is written there (a reply, an error) are
	// shown, not obeyed, so a model cannot drive the person's terminal.
	// Output that is not a terminal keeps the exact text.
	OutTerminal, ErrTerminal bool
	// Edit gives the person line editing and history (arrow keys, Home,
	// End, Up for the lines typed before) when In is a terminal: it is put
	// in raw mode while the chat reads it, and what is printed meanwhile
	// goes above the line being typed. Out must be the same terminal. When
	// In is not a terminal, lines are read as they come.
	Edit bool
}

// Adapter is the terminal channel.
type Adapter struct {
	cfg  Config
	mu   sync.Mutex // serialises writes to Out and Err, and guards midLine
	eof  chan struct{}
	once sync.Once
	// started and left are when the adapter was made and the person
	// left: Health's Since (a zero time in /healthz told nothing).
	started time.Time
	left    atomic.Pointer[time.Time]
	// midLine is set while streamed text on Out has not ended its line.
	midLine bool
	// ed reads the lines while the person edits them (Config.Edit); nil
	// without one and once the input has ended. pending is a streamed
	// reply's unfinished line, held back while ed is on: the line being
	// typed is drawn again after each line printed.
	ed      *editor
	pending strings.Builder
	// notSent counts the lines read but not sent (refused, too long);
	// failed the lines answered with an error (the model call failed, the
	// turn was stopped or cut short by a shutdown).
	notSent atomic.Int64
	failed  atomic.Int64
}

var (
	_ channels.Channel        = (*Adapter)(nil)
	_ channels.HealthReporter = (*Adapter)(nil)
	_ channels.Streamer       = (*Adapter)(nil)
)

// New returns a terminal channel.
func New(cfg Config) *Adapter {
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Err == nil {
		cfg.Err = os.Stderr
	}
	if cfg.Session == "" {
		cfg.Session = "default"
	}
	if cfg.User == "" {
		cfg.User = os.Getenv("USER")
	}
	return &Adapter{cfg: cfg, eof: make(chan struct{}), started: time.Now()}
}

func (a *Adapter) maxLine() int {
	if a.cfg.MaxLineBytes > 0 {
		return a.cfg.MaxLineBytes
	}
	return DefaultMaxLineBytes
}

// Name implements channels.Channel.
func (a *Adapter) Name() string { return Name }

// SessionKey is the key of the terminal conversation.
func (a *Adapter) SessionKey() string { return Name + ":" + a.cfg.Session }

// Inbound builds the message for one line typed (or passed with -m).
func (a *Adapter) Inbound(text string) channels.Inbound {
	return channels.Inbound{
		Channel:    Name,
		ChatID:     a.cfg.Session,
		SessionKey: a.SessionKey(),
		SenderID:   a.cfg.User,
		SenderName: a.cfg.User,
		Text:       text,
		Time:       time.Now(),
		Audience:   audience.Audience{Kind: audience.Operator, Platform: Name},
		Local:      true,
		InOrder:    !a.cfg.Interactive,
	}
}

// QuitCommand ends the terminal chat as Ctrl-D does. It is the terminal's
// own: it never reaches the gateway.
const QuitCommand = "/quit"

// EOF is closed when the person has left: the input ended (Ctrl-D, a closed
// pipe) or they typed /quit. The program that owns the terminal decides
// what leaving means (the gateway and the chat both stop).
func (a *Adapter) EOF() <-chan struct{} { return a.eof }

// leave marks the input as ended and waits for ctx, as Run must not return
// before it ends.
func (a *Adapter) leave(ctx context.Context) error {
	a.once.Do(func() {
		now := time.Now()
		a.left.Store(&now)
		close(a.eof)
	})
	<-ctx.Done()
	return nil
}

// Run reads lines and delivers each non-empty one until the input ends or
// ctx does. The reading goroutine blocks in Read and cannot be interrupted;
// it ends with the input, which for stdin is the end of the process.
func (a *Adapter) Run(ctx context.Context, sink channels.Sink) error {
	if a.cfg.In == nil {
		return a.leave(ctx)
	}
	lines := make(chan string)
	ed := a.startEditor()
	defer a.stopEditor()
	go func() {
		defer close(lines)
		if ed != nil {
			a.editLines(ctx, ed, a.maxLine(), lines)
			return
		}
		a.readLines(ctx, a.cfg.In, a.maxLine(), lines)
	}()
	a.prompt()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				a.stopEditor()
				// Ctrl-D leaves the cursor after the prompt: end that line
				// so the shell's prompt starts on its own.
				if a.cfg.Prompt != "" {
					a.write(a.cfg.Out, "")
				}
				return a.leave(ctx)
			}
			text := strings.TrimSpace(line)
			if text == "" {
				a.prompt()
				continue
			}
			if strings.EqualFold(text, QuitCommand) {
				a.stopEditor()
				return a.leave(ctx)
			}
			// Piped lines (InOrder) wait for room in a full queue, so a
			// script is refused only when the gateway goes away.
			if err := sink.Deliver(ctx, a.Inbound(text)); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				a.notSent.Add(1)
				a.write(a.cfg.Err, "Not sent: "+err.Error()+".")
			}
		}
	}
}

// NotSent is how many lines of input were read but not sent: refused by
// the gateway, or too long. A program that ends after the input does
// should say so in its exit status.
func (a *Adapter) NotSent() int { return int(a.notSent.Load()) }

// Failed is how many lines were answered with an error (channels.KindError:
// the model call failed, the turn was stopped or cut short by a shutdown)
// instead of an answer. A program that ends after the input does should
// say so in its exit status too: a script wants to know either way.
func (a *Adapter) Failed() int { return int(a.failed.Load()) }

// Send prints a reply to stdout, an error or progress line to stderr. A
// reply already streamed only has its line ended.
func (a *Adapter) Send(_ context.Context, out channels.Outbound) error {
	w := a.cfg.Out
	if out.Kind == channels.KindError || out.Kind == channels.KindProgress {
		w = a.cfg.Err
	}
	if out.Kind == channels.KindError {
		a.failed.Add(1)
	}
	if out.Streamed && out.Kind == channels.KindReply {
		a.mu.Lock()
		a.endLineLocked()
		a.mu.Unlock()
	} else {
		a.write(w, out.Text)
	}
	if out.Kind != channels.KindProgress {
		a.prompt()
	}
	return nil
}

// StartStream implements channels.Streamer: with Config.Stream, replies
// appear on Out as they are written.
func (a *Adapter) StartStream(channels.Inbound) channels.Stream {
	if !a.cfg.Stream {
		return nil
	}
	return &stream{a: a}
}

// stream shows one turn. What a model leaks of its reasoning is never
// shown (channels.ReasoningFilter): the gateway strips it from the final
// reply, which then matches what was shown and is not printed again.
type stream struct {
	a      *Adapter
	filter channels.ReasoningFilter
}

func (s *stream) Write(fragment string) {
	text := s.filter.Write(fragment)
	if text == "" {
		return
	}
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	text = s.a.safe(s.a.cfg.Out, text)
	if s.a.ed != nil {
		s.a.streamEdited(text)
		return
	}
	fmt.Fprint(s.a.cfg.Out, text)
	s.a.midLine = !strings.HasSuffix(text, "\n")
}

// Break ends the line of a step's text, so the next step starts on its own.
func (s *stream) Break() {
	s.filter.Reset()
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	s.a.endLineLocked()
}

func (a *Adapter) endLineLocked() {
	if a.pending.Len() > 0 {
		a.printLocked(a.cfg.Out, a.pending.String()+"\n")
		a.pending.Reset()
	}
	if a.midLine {
		fmt.Fprintln(a.cfg.Out)
		a.midLine = false
	}
}

// Health implements channels.HealthReporter.
func (a *Adapter) Health() channels.Health {
	select {
	case <-a.eof:
		return channels.Health{State: channels.StateStopped, Detail: "input closed", Since: *a.left.Load()}
	default:
		return channels.Health{State: channels.StateConnected, Since: a.started}
	}
}

func (a *Adapter) write(w io.Writer, text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.endLineLocked() // a stream cut short leaves its line open
	a.printLocked(w, a.safe(w, strings.TrimRight(text, "\n"))+"\n")
}

// safe returns text as it may be written to w.
func (a *Adapter) safe(w io.Writer, text string) string {
	if w == a.cfg.Out && a.cfg.OutTerminal || w == a.cfg.Err && a.cfg.ErrTerminal {
		return visibleControls(text)
	}
	return text
}

func (a *Adapter) prompt() {
	if a.cfg.Prompt == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ed != nil {
		return // the editor draws it
	}
	fmt.Fprint(a.cfg.Out, a.cfg.Prompt)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/channels/terminal"
	"github.com/dreamgate/dreamgate/gateway"
)

// cmdChat is the terminal chat: interactive, or one turn with -m.
func cmdChat(ctx context.Context, e *env, args []string) error {
	fs := e.flags("chat")
	message := fs.String("m", "", "send one message, print the reply and exit")
	sessionName := fs.String("session", "default", "conversation name (the session key is terminal:<name>)")
	if err := e.parse(fs, args, 0); err != nil {
		if *message != "" && fs.NArg() > 0 {
			// The usual slip: a message of several words without quotes.
			return &exitError{code: 2, err: fmt.Errorf("dreamgate chat: unexpected argument %q; put a message of several words in quotes: -m %q", fs.Arg(0), strings.Join(append([]string{*message}, fs.Args()...), " "))}
		}
		return err
	}
	if err := checkSessionName(*sessionName); err != nil {
		return &exitError{code: 2, err: err}
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	// The chat owns the terminal: only errors are logged, so a failed
	// one-shot turn leaves exactly one sentence on stderr.
	logger := e.logger(slog.LevelError)
	a, err := newApp(cfg, logger)
	if err != nil {
		return err
	}
	defer a.close()
	// A one-shot turn does not open the memory repository unless the
	// message is a command that needs it.
	g, _ := a.gateway(cfg.Dream.Enabled && (*message == "" || needsDream(*message)))
	if *message != "" {
		return oneTurn(ctx, e, g, *sessionName, *message)
	}
	return chatLines(ctx, e, g, *sessionName)
}

// oneTurn is `chat -m`: one message, its reply on stdout.
func oneTurn(ctx context.Context, e *env, g *gateway.Gateway, sessionName, message string) error {
	term := terminal.New(terminal.Config{Out: e.stdout, Err: e.stderr, Session: sessionName, OutTerminal: e.isTTY(e.stdout), ErrTerminal: e.isTTY(e.stderr)})
	g.AddChannel(term)
	done, err := g.Submit(ctx, term.Inbound(message))
	if err != nil {
		return err
	}
	var res gateway.Result
	select {
	case res = <-done:
	case <-ctx.Done():
		res.Err = ctx.Err()
	}
	// Shutdown waits for background work such as the archive of /new:
	// a one-shot run must not exit before it is written.
	sctx, cancel := shutdownContext()
	defer cancel()
	_ = g.Shutdown(sctx)
	if res.Err != nil || res.Unanswered || term.Failed() > 0 {
		// The one-sentence explanation is already on stderr (a
		// failure) or is the reply (no answer): a script must not
		// take the notice for the model's answer.
		return &exitError{code: 1, err: errors.New("")}
	}
	return nil
}

// chatLines is the chat on stdin: a person at a terminal, or lines piped in.
func chatLines(ctx context.Context, e *env, g *gateway.Gateway, sessionName string) error {
	prompt := ""
	if e.stdinIsTTY() {
		prompt = "> "
	}
	t := terminal.New(terminal.Config{In: e.stdin, Out: e.stdout, Err: e.stderr, Session: sessionName, Prompt: prompt, Interactive: e.stdinIsTTY(), Stream: e.streamReplies(), OutTerminal: e.isTTY(e.stdout), ErrTerminal: e.isTTY(e.stderr),
		Edit: e.streamReplies()})
	g.AddChannel(t)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan struct{})
	go func() { _ = g.Run(runCtx); close(ran) }()
	select {
	case <-t.EOF():
	case <-ctx.Done():
	}
	// A /dream still running when the input ends finishes; a signal cuts it
	// short (it rolls back and keeps its batch for the next Dream).
	go func() {
		select {
		case <-ctx.Done():
			g.CancelBackground()
		case <-ran:
		}
	}()
	sctx, cancel := e.chatShutdownContext(ctx, !e.stdinIsTTY())
	defer cancel()
	err := g.Shutdown(sctx)
	stop()
	<-ran
	if err != nil {
		return err
	}
	return notSentError(t)
}

// notSentError makes lines of input that were not sent, or were answered
// with an error instead of an answer (each already said on stderr), fail
// the command: a script must not take a partial run for a whole one.
func notSentError(t *terminal.Adapter) error {
	var parts []string
	if n := t.NotSent(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d line(s) of input were not sent", n))
	}
	if n := t.Failed(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d line(s) of input were not answered", n))
	}
	if len(parts) == 0 {
		return nil
	}
	return &exitError{code: 1, err: errors.New("dreamgate: " + strings.Join(parts, "; "))}
}

// maxSessionName and maxSessionBytes bound --session: the conversation's
// files are named after its key (in base64, with a suffix as long as 40
// bytes when /new sets it aside), and a file name may not exceed 255 bytes.
const (
	maxSessionName  = 64
	maxSessionBytes = 128
)

// checkSessionName refuses a --session name that cannot name a
// conversation: empty, too long for its file names, or with control
// characters.
func checkSessionName(name string) error {
	if name == "" || utf8.RuneCountInString(name) > maxSessionName || len(name) > maxSessionBytes || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return fmt.Errorf("dreamgate chat: --session must be 1 to %d characters (at most %d bytes), without control characters", maxSessionName, maxSessionBytes)
	}
	return nil
}

// needsDream reports whether a one-shot message needs Dream wired in
// (/dream* commands, and /status, which shows the last Dream).
func needsDream(msg string) bool {
	for _, p := range []string{"/dream", "/status"} {
		if strings.HasPrefix(strings.TrimSpace(msg), p) {
			return true
		}
	}
	return false
}

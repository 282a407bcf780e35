package terminal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/term"
)

// editorMaxLine is the longest line x/term's Terminal holds, in
// characters; it ignores the keys typed past it.
const editorMaxLine = 4096

// editor reads the person's lines with line editing and history (arrow
// keys, Home/End, Ctrl-A/E/K/U/W, Up and Down through the lines typed
// before): x/term's Terminal on the input in raw mode. Everything printed
// while it runs goes through it, so that what is printed lands above the
// line being typed, which is then drawn again, and line ends get the \r a
// terminal in raw mode no longer adds.
//
// Only a person at a terminal gets one: piped input is read as it was.
type editor struct {
	t  *term.Terminal
	fd int

	mu    sync.Mutex
	state *term.State // nil once restored
}

// newEditor puts in into raw mode and draws prompt before each line; it
// fails when in is not a terminal.
func newEditor(in *os.File, out io.Writer, prompt string) (*editor, error) {
	fd := int(in.Fd())
	if !term.IsTerminal(fd) {
		return nil, errors.New("not a terminal")
	}
	state, err := term.MakeRaw(fd)
	if err != nil {
		return nil, err
	}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{in, out}, prompt)
	// A terminal that knows no size (0x0) keeps the editor's 80x24.
	if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
		_ = t.SetSize(w, h)
	}
	return &editor{t: t, fd: fd, state: state}, nil
}

// readLine reads one line as the person edited it. Ctrl-D on an empty line
// and Ctrl-C (raw mode turns it into a key, no longer a signal) end the
// input, as Ctrl-D and Ctrl-C did before.
func (e *editor) readLine() (string, error) {
	line, err := e.t.ReadLine()
	if errors.Is(err, term.ErrPasteIndicator) {
		err = nil // a pasted line is a line
	}
	return line, err
}

// Write prints p above the line being typed, which it draws again after
// p. p should end its line: the prompt is drawn right after it.
func (e *editor) Write(p []byte) (int, error) { return e.t.Write(p) }

// restore gives the terminal back its mode. It is safe to call more than
// once.
func (e *editor) restore() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != nil {
		_ = term.Restore(e.fd, e.state)
		e.state = nil
	}
}

// startEditor turns line editing on when the config asks for it and the
// input is a terminal; nil otherwise.
func (a *Adapter) startEditor() *editor {
	in, ok := a.cfg.In.(*os.File)
	if !a.cfg.Edit || !ok {
		return nil
	}
	ed, err := newEditor(in, a.cfg.Out, a.cfg.Prompt)
	if err != nil {
		return nil // lines are read as they come
	}
	a.mu.Lock()
	a.ed = ed
	a.mu.Unlock()
	return ed
}

// stopEditor gives the terminal its mode back once the person has left
// (or the chat stops): what is printed after that is printed as before.
func (a *Adapter) stopEditor() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ed == nil {
		return
	}
	a.endLineLocked()
	a.ed.restore()
	a.ed = nil
}

// editLines sends each line the person enters to lines until the input
// ends or ctx does. A line longer than max is not sent, as when read
// without the editor.
func (a *Adapter) editLines(ctx context.Context, ed *editor, max int, lines chan<- string) {
	for {
		line, err := ed.readLine()
		if err != nil {
			return // Ctrl-D, Ctrl-C or a read error: the input has ended
		}
		switch {
		case utf8.RuneCountInString(line) >= editorMaxLine:
			// The editor drops what is typed past its limit: the line is
			// not whole, and sending its start would lose the rest silently.
			a.notSent.Add(1)
			a.write(a.cfg.Err, fmt.Sprintf("That line reached the %d characters a line typed here can hold, so it was not sent; pipe a longer text in instead (dreamgate chat < file).", editorMaxLine))
			continue
		case len(line) > max:
			a.notSent.Add(1)
			a.write(a.cfg.Err, fmt.Sprintf("That line was too long (%d bytes; the limit is %d), so it was not sent.", len(line), max))
			continue
		}
		select {
		case lines <- line:
		case <-ctx.Done():
			return
		}
	}
}

// streamEdited shows a streamed reply's text a whole line at a time while
// the editor is on; the rest waits for its line's end (endLineLocked).
// a.mu is held.
func (a *Adapter) streamEdited(text string) {
	a.pending.WriteString(text)
	held := a.pending.String()
	i := strings.LastIndexByte(held, '\n')
	if i < 0 {
		return
	}
	a.printLocked(a.cfg.Out, held[:i+1])
	a.pending.Reset()
	a.pending.WriteString(held[i+1:])
}

// printLocked writes text to w, through the editor when it is on and w is
// the terminal it draws on. a.mu is held.
func (a *Adapter) printLocked(w io.Writer, text string) {
	if a.ed != nil && (w == a.cfg.Out || w == a.cfg.Err && a.cfg.ErrTerminal) {
		_, _ = a.ed.Write([]byte(text))
		return
	}
	_, _ = io.WriteString(w, text)
}

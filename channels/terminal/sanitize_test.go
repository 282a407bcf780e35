package terminal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
)

const hostile = "\x1b]0;PWNED\a\x1b]52;c;aGk=\a\x1b[2Jhi\rOVERWRITE\u009b31m\x7f"

func hasControl(s string) bool {
	for _, r := range s {
		if isControl(r) {
			return true
		}
	}
	return false
}

// At a terminal, no control character of a reply, a streamed fragment or
// an error reaches it: each is shown instead.
func TestTerminalShowsControlCharacters(t *testing.T) {
	var out, errOut bytes.Buffer
	a := New(Config{Out: &out, Err: &errOut, Stream: true, OutTerminal: true, ErrTerminal: true})
	in := a.Inbound("hi")
	_ = a.Send(t.Context(), channels.ReplyTo(in, channels.KindReply, hostile+"\n\tindented"))
	st := a.StartStream(in)
	st.Write("\x1b]0;")
	st.Write("PWNED\a streamed")
	_ = a.Send(t.Context(), channels.ReplyTo(in, channels.KindError, "failed: "+hostile))
	for name, s := range map[string]string{"stdout": out.String(), "stderr": errOut.String()} {
		if hasControl(s) || strings.ContainsRune(s, '\r') {
			t.Errorf("%s holds control characters: %q", name, s)
		}
	}
	if want := "^[]0;PWNED^G^[]52;c;aGk=^G^[[2Jhi^MOVERWRITEM-^[31m^?\n\tindented\n"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("stdout = %q, want it to start %q", out.String(), want)
	}
	if !strings.Contains(out.String(), "^[]0;PWNED^G streamed") {
		t.Errorf("stream shown as %q", out.String())
	}
}

// Piped output keeps the model's exact bytes: scripts read stdout.
func TestPipedOutputKeepsExactText(t *testing.T) {
	var out bytes.Buffer
	a := New(Config{Out: &out, Err: &bytes.Buffer{}})
	_ = a.Send(t.Context(), channels.ReplyTo(a.Inbound("hi"), channels.KindReply, hostile))
	if out.String() != hostile+"\n" {
		t.Errorf("stdout = %q", out.String())
	}
}

func TestVisibleControls(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain ünïcode\n\ttab", "plain ünïcode\n\ttab"},
		{"line\r\nnext", "line\nnext"},
		{"a\x00b", "a^@b"},
		{"bad \x9b byte", "bad \uFFFD byte"},
	}
	for _, tt := range tests {
		if got := visibleControls(tt.in); got != tt.want {
			t.Errorf("visibleControls(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

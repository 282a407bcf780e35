package llm

import (
	"io"
	"strings"
	"testing"
)

// A stream's end marker is found however the reads split it, and only the
// marker itself counts.
func TestStreamBodySeesDone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reads []string
		done  bool
	}{
		{"one read", []string{"data: {}\n\ndata: [DONE]\n\n"}, true},
		{"split in the marker", []string{"data: {}\n\ndata: [DO", "NE]\n\n"}, true},
		{"byte by byte", strings.Split("data: [DONE]\n\n", ""), true},
		{"split after a short read", []string{"data: {}\n\nda", "ta", ": [DONE]"}, true},
		{"cut off", []string{"data: {}\n\ndata: [DO"}, false},
		{"no marker", []string{"data: {\"x\":\"[DONE]\"}\n\n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &streamBody{ReadCloser: io.NopCloser(strings.NewReader(""))}
			for _, r := range tc.reads {
				b.see([]byte(r))
			}
			if b.done != tc.done {
				t.Errorf("done = %v, want %v", b.done, tc.done)
			}
		})
	}
}

// Close reads the rest of a finished stream, so the connection can be
// reused, and nothing of a stream cut short, which may never end.
func TestStreamBodyClose(t *testing.T) {
	for _, done := range []bool{true, false} {
		rest := &countReader{r: strings.NewReader("0\r\n\r\n")}
		b := &streamBody{ReadCloser: io.NopCloser(rest), done: done}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if read := rest.n > 0; read != done {
			t.Errorf("done=%v: Close read %d bytes of the rest", done, rest.n)
		}
	}
}

type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

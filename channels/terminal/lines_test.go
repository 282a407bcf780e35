package terminal

import (
	"bytes"
	"strings"
	"testing"
)

// A line over the limit is reported on stderr and skipped; the lines after
// it are still read and delivered (bufio.Scanner stopped at it, silently).
func TestOverLongLineIsReportedAndReadingGoesOn(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		long  int
	}{
		{"over a small limit", 1000, 2000},
		{"over the default limit, across many buffer fills", 0, DefaultMaxLineBytes + 300<<10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			input := "hello\n" + strings.Repeat("x", tc.long) + "\n" +
				strings.Repeat("y", 100<<10) + "\r\n" + "after\n" + "last"
			// The reader goroutine has finished when EOF is closed, so plain
			// buffers are read safely after it.
			var out, errOut bytes.Buffer
			a := New(Config{In: strings.NewReader(input), Out: &out, Err: &errOut, MaxLineBytes: tc.limit})
			s := &sink{}
			if err := runToEOF(t, a, s); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, in := range s.got {
				got = append(got, in.Text)
			}
			want := []string{"hello", strings.Repeat("y", 100<<10), "after", "last"}
			if tc.limit > 0 {
				want = []string{"hello", "after", "last"} // the y line is over 1000 bytes too
			}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("delivered %d lines (%.40q…), want %d", len(got), strings.Join(got, "|"), len(want))
			}
			if !strings.Contains(errOut.String(), "too long") || !strings.Contains(errOut.String(), "not sent") {
				t.Errorf("stderr = %q; the over-long line should be reported", errOut.String())
			}
			if n, want := a.NotSent(), 5-len(want); n != want {
				t.Errorf("NotSent = %d, want %d", n, want)
			}
		})
	}
}

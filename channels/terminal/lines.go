package terminal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DefaultMaxLineBytes bounds one line of input when Config leaves it 0.
const DefaultMaxLineBytes = 1 << 20

// readLines sends each line of r (without its line break) to lines until r
// ends, fails or ctx ends. A line longer than max is not held in memory: it
// is read to its end and dropped, the user is told so on Err, and reading
// goes on with the next line. (bufio.Scanner would stop at such a line and
// silently drop every line after it.)
func (a *Adapter) readLines(ctx context.Context, r io.Reader, max int, lines chan<- string) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	dropped := 0 // bytes of the over-long line being skipped
	for {
		chunk, err := br.ReadSlice('\n')
		size := len(chunk)
		if size > 0 && chunk[size-1] == '\n' {
			size-- // the line break is not part of the line
		}
		switch {
		case dropped > 0:
			dropped += size
		case len(line)+size > max:
			dropped = len(line) + size
			line = nil
		default:
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the line goes on
		}
		if dropped > 0 {
			a.notSent.Add(1)
			a.write(a.cfg.Err, fmt.Sprintf("That line was too long (%d bytes; the limit is %d), so it was not sent.", dropped, max))
			a.prompt()
			dropped = 0
		} else if len(line) > 0 {
			select {
			case lines <- strings.TrimRight(string(line), "\r\n"):
			case <-ctx.Done():
				return
			}
		}
		line = line[:0]
		if err != nil {
			return // io.EOF, or a read error: the input has ended
		}
	}
}

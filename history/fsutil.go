package history

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// fileMode is the mode of the history and cursor files: owner-only, for
// the archive is made of conversations.
const fileMode fs.FileMode = 0o600

// readIntFile reads a bare non-negative integer (.cursor, .dream_cursor).
// present is false when the file is missing; valid is false when it holds
// anything else (nanobot treats both as "no value").
func readIntFile(path string) (n int, present, valid bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, false, nil
	}
	if err != nil {
		return 0, false, false, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	n, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if perr != nil || n < 0 {
		return 0, true, false, nil
	}
	return n, true, true, nil
}

// readLines calls fn with each newline-terminated line of r, without the
// newline, and where in r it starts, and returns the bytes those lines took. A last line without a
// newline is not passed on and not counted: it is either being written by
// another process right now or was torn by a crash. fn may stop the scan by
// returning false. The slice passed to fn is only valid during the call.
func readLines(r io.Reader, fn func(line []byte, at int64) bool) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var consumed int64
	var long []byte // a line longer than the buffer, being assembled
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			line := chunk
			if long != nil {
				line = append(long, chunk...)
				long = nil
			}
			at := consumed
			consumed += int64(len(line))
			if !fn(line[:len(line)-1], at) {
				return consumed, nil
			}
		case errors.Is(err, bufio.ErrBufferFull):
			long = append(long, chunk...)
		case errors.Is(err, io.EOF):
			return consumed, nil
		default:
			return consumed, err
		}
	}
}

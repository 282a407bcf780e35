//go:build unix

package eval

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Reading a FIFO ends with the context: while no one has opened it for
// writing (the open blocks), and while a writer holds it open and sends
// nothing (the read blocks).
func TestLoadFromAFIFOEndsWithTheContext(t *testing.T) {
	for _, writer := range []bool{false, true} {
		name := map[bool]string{false: "no writer", true: "a silent writer"}[writer]
		t.Run(name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "scenario.json")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			errs := make(chan error, 1)
			go func() {
				_, err := Load(ctx, fifo)
				errs <- err
			}()
			if writer {
				// Opening for writing waits for the reader's open: once it
				// returns, Load is reading.
				w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
			}
			cancel()
			if err := <-errs; !errors.Is(err, context.Canceled) {
				t.Errorf("Load: %v, want context.Canceled", err)
			}
			if !writer {
				// Let the blocked open return, so the test leaves nothing
				// behind.
				if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					w.Close()
				}
			}
		})
	}
}

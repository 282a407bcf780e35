package adminsock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

// socketPath is a socket in a short temporary folder: a unix socket's path
// is limited to about 100 bytes, which a test's TempDir can pass.
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "as-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, FileName)
}

func serve(t *testing.T, path string, h Handler) *Server {
	t.Helper()
	s, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Serve(h)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// A command's output reaches the caller as it is written, stdout and
// stderr apart, then its exit status; the socket is the owner's alone.
func TestCallRunsTheCommandOnTheServer(t *testing.T) {
	path := socketPath(t)
	release := make(chan struct{})
	serve(t, path, func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		fmt.Fprintf(stdout, "running %s\n", strings.Join(args, " "))
		<-release
		fmt.Fprintln(stderr, "a warning")
		fmt.Fprintln(stdout, "done")
		return 3
	})
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", fi.Mode(), err)
	}
	var out testkit.Buffer
	var errb bytes.Buffer
	got := make(chan int, 1)
	go func() {
		code, err := Call(t.Context(), path, []string{"dream", "restore", "abc"}, &out, &errb)
		if err != nil {
			t.Error(err)
		}
		got <- code
	}()
	// The first line arrives while the command still runs.
	out.WaitFor(t, "running dream restore abc\n")
	close(release)
	if code := <-got; code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	if out.String() != "running dream restore abc\ndone\n" || errb.String() != "a warning\n" {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
}

// Without a gateway there is nothing to call; a socket a dead process
// left is replaced by the next gateway, and a live one is not taken over.
func TestNoGatewayStaleAndInUse(t *testing.T) {
	path := socketPath(t)
	if _, err := Call(t.Context(), path, []string{"status"}, io.Discard, io.Discard); !errors.Is(err, ErrNoGateway) {
		t.Errorf("no socket: %v, want ErrNoGateway", err)
	}
	// A socket file with nobody listening, as a killed process leaves it.
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := Call(t.Context(), path, []string{"status"}, io.Discard, io.Discard); !errors.Is(err, ErrNoGateway) {
		t.Errorf("stale socket: %v, want ErrNoGateway", err)
	}
	serve(t, path, func(context.Context, []string, io.Writer, io.Writer) int { return 0 })
	if code, err := Call(t.Context(), path, []string{"status"}, io.Discard, io.Discard); err != nil || code != 0 {
		t.Errorf("after the stale socket was replaced: exit %d, %v", code, err)
	}
	if _, err := Listen(path); !errors.Is(err, ErrInUse) {
		t.Errorf("a second Listen: %v, want ErrInUse", err)
	}
}

// Closing the server ends a command still running (its context), and the
// caller is told the gateway stopped; the socket file goes with it.
func TestCloseEndsRunningCommands(t *testing.T) {
	path := socketPath(t)
	started := make(chan struct{})
	s, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Serve(func(ctx context.Context, _ []string, stdout, _ io.Writer) int {
		close(started)
		<-ctx.Done()
		return 1
	})
	errc := make(chan error, 1)
	go func() {
		_, err := Call(t.Context(), path, []string{"dream", "run"}, io.Discard, io.Discard)
		errc <- err
	}()
	<-started
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // no grace: cut it now
	_ = s.Close(ctx)
	if err := <-errc; err == nil {
		t.Error("a command cut short reported success")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket file is still there: %v", err)
	}
}

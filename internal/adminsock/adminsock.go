// Package adminsock is the running gateway's local admin socket: a unix
// socket in its state directory through which the operator's commands on
// the same machine (dreamgate status, dream restore, backup, …) are run by
// the gateway itself, with its secrets, its account's files and its own
// parts, and answered with their output and exit status.
//
// Reaching the socket is the secret: it is the owner's alone (0600, in the
// owner-only state directory), and on Linux a connection from any account
// other than the gateway's own or root is closed unread (SO_PEERCRED). It
// is never a network address.
//
// The wire is HTTP/1.1 over the socket: POST /run with the command line as
// JSON, answered by a stream of JSON lines, each a piece of stdout or
// stderr, the last the exit status, so a long command (a Dream) shows its
// progress as it goes.
//
// It imports nothing of ours.
package adminsock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
)

// FileName is the socket's name in the state directory.
const FileName = "admin.sock"

var (
	// ErrInUse is Listen's error when a gateway already answers on the
	// socket (another process with the same state directory).
	ErrInUse = errors.New("another gateway already answers on the admin socket")
	// ErrNoGateway is Call's error when nothing answers on the socket: no
	// gateway runs with this state directory (or one left it behind).
	ErrNoGateway = errors.New("no gateway answers on the admin socket")
	// ErrRefused is Call's error when the socket is there but this account
	// may not use it.
	ErrRefused = errors.New("the admin socket is another account's")
)

// Handler runs one command line (args, without the program's name) and
// returns its exit status; what it writes to stdout and stderr reaches the
// caller as it is written. ctx ends when the caller goes away.
type Handler func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// request is the body of POST /run.
type request struct {
	Args []string `json:"args"`
}

// frame is one line of the answer: a piece of stdout or stderr, or the
// exit status, which ends it.
type frame struct {
	Out  []byte `json:"out,omitempty"`
	Err  []byte `json:"err,omitempty"`
	Exit *int   `json:"exit,omitempty"`
}

// maxRequest bounds a command line.
const maxRequest = 64 << 10

// Server answers on the socket.
type Server struct {
	path     string
	ln       net.Listener
	srv      *http.Server
	done     chan struct{}
	commands sync.WaitGroup // the commands running
}

// Listen makes the socket at path, owner-only. A socket left behind by a
// process that died is replaced; one a live gateway answers on is not
// (ErrInUse).
func Listen(path string) (*Server, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("admin socket %s: a file that is not a socket is in the way", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, ErrInUse
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("admin socket %s: remove the one left behind: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	// The umask already leaves it owner-only; say so whatever it is.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin socket %s: %w", path, err)
	}
	return &Server{path: path, ln: peerChecked(ln), done: make(chan struct{})}, nil
}

// Path is where the socket is.
func (s *Server) Path() string { return s.path }

// Serve answers with h until Close; it returns at once.
func (s *Server) Serve(h Handler) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /run", func(w http.ResponseWriter, r *http.Request) {
		s.commands.Add(1)
		defer s.commands.Done()
		serveRun(w, r, h)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(s.ln)
	}()
}

// Close stops answering: commands still running get until ctx ends, then
// their callers' connections are closed (and their contexts end). It
// returns once every command has returned, so that nothing uses what the
// handler reaches after that. The socket file is removed.
func (s *Server) Close(ctx context.Context) error {
	if s.srv == nil {
		return s.ln.Close()
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	s.commands.Wait()
	return err
}

func serveRun(w http.ResponseWriter, r *http.Request, h Handler) {
	var req request
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequest)).Decode(&req); err != nil || len(req.Args) == 0 {
		http.Error(w, "a command line is needed", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	fw := &frameWriter{w: w, enc: json.NewEncoder(w)}
	if f, ok := w.(http.Flusher); ok {
		fw.flush = f.Flush
	}
	code := h(r.Context(), req.Args, fw.stream(false), fw.stream(true))
	fw.write(frame{Exit: &code})
}

// frameWriter writes the answer's frames, one at a time, each flushed at
// once so the caller sees output as it is written.
type frameWriter struct {
	mu    sync.Mutex
	w     io.Writer
	enc   *json.Encoder
	flush func()
}

func (f *frameWriter) write(fr frame) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enc.Encode(fr); err != nil {
		return err
	}
	if f.flush != nil {
		f.flush()
	}
	return nil
}

// stream is stdout, or stderr when toErr.
func (f *frameWriter) stream(toErr bool) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		fr := frame{Out: bytes.Clone(p)}
		if toErr {
			fr = frame{Err: bytes.Clone(p)}
		}
		if err := f.write(fr); err != nil {
			return 0, err
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Call runs args on the gateway answering at path, copying its output to
// stdout and stderr as it comes, and returns its exit status. It returns
// ErrNoGateway when nothing answers there and ErrRefused when this account
// may not use the socket; ending ctx ends the command.
func Call(ctx context.Context, path string, args []string, stdout, stderr io.Writer) (int, error) {
	body, err := json.Marshal(request{Args: args})
	if err != nil {
		return 0, err
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableKeepAlives: true,
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://gateway/run", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, dialError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return 0, fmt.Errorf("the gateway refused the command: %s", bytes.TrimSpace(msg))
	}
	return readFrames(resp.Body, stdout, stderr)
}

// readFrames copies the answer's output until its exit status.
func readFrames(r io.Reader, stdout, stderr io.Writer) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var fr frame
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			return 0, fmt.Errorf("the gateway's answer: %w", err)
		}
		switch {
		case fr.Exit != nil:
			return *fr.Exit, nil
		case fr.Err != nil:
			if _, err := stderr.Write(fr.Err); err != nil {
				return 0, err
			}
		default:
			if _, err := stdout.Write(fr.Out); err != nil {
				return 0, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("the gateway's answer: %w", err)
	}
	return 0, errors.New("the gateway stopped before the command ended")
}

// dialError names why the socket could not be reached: nothing there (or
// nothing listening), or not this account's to use.
func dialError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ECONNREFUSED):
		return ErrNoGateway
	case errors.Is(err, fs.ErrPermission):
		return ErrRefused
	}
	var ne *net.OpError
	if errors.As(err, &ne) && ne.Op == "dial" {
		return fmt.Errorf("%w: %v", ErrNoGateway, err)
	}
	return err
}

// Package mcptest is an MCP server for tests, written with the same SDK the
// client uses. Tests serve it over streamable HTTP on 127.0.0.1 (Handler)
// or over stdio from a helper process: the test binary itself, re-run with
// ServeEnv set, calls MaybeServe first thing in TestMain.
//
// Its tools: echo (text), add (structured result), big (a long text), fail
// (a tool error), slow (answers only when cancelled), crash (exits the
// stdio process; calls the crash hook over HTTP), env (reads a variable of
// the server's environment), secret (for deny lists), grow (adds the
// tool late, so the server tells its clients that its list changed), and
// note and notes, which keep notes and read them back: a stateful server,
// as a notes or memory server is. The stdio helper keeps its notes in the
// file NotesEnv names (relative to its working directory), so that they
// outlive the process; otherwise they live as long as the server.
//
// It imports no package of ours.
package mcptest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment variables of the stdio helper process.
const (
	// ServeEnv, set to "stdio", makes MaybeServe serve and exit.
	ServeEnv = "DREAMGATE_MCPTEST_SERVE"
	// StartsEnv names a file that gets one line per start of the helper.
	StartsEnv = "DREAMGATE_MCPTEST_STARTS"
	// FailEnv, set to "1", makes the helper exit at once with status 1,
	// like a server that cannot start.
	FailEnv = "DREAMGATE_MCPTEST_FAIL"
	// HangEnv, set to "1", makes the helper read its input and never
	// answer, like a server stuck at start; it exits when stdin closes.
	HangEnv = "DREAMGATE_MCPTEST_HANG"
	// NotesEnv names the file of the helper's notes.
	NotesEnv = "DREAMGATE_MCPTEST_NOTES"
)

// Tools are the names of the server's tools, in the order it lists them.
var Tools = []string{"add", "big", "crash", "echo", "env", "fail", "grow", "note", "notes", "secret", "slow"}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

type bigIn struct {
	N int `json:"n" jsonschema:"how many characters"`
}

type envIn struct {
	Name string `json:"name"`
}

type none struct{}

type noteIn struct {
	Text string `json:"text" jsonschema:"the note to keep"`
}

// notebook keeps notes in a file, or in memory when file is "".
type notebook struct {
	mu    sync.Mutex
	file  string
	notes []string
}

func (n *notebook) add(note string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.file == "" {
		n.notes = append(n.notes, note)
		return nil
	}
	f, err := os.OpenFile(n.file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, strings.ReplaceAll(note, "\n", " ")); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (n *notebook) all() (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.file == "" {
		return strings.Join(n.notes, "\n"), nil
	}
	b, err := os.ReadFile(n.file)
	if os.IsNotExist(err) {
		return "", nil
	}
	return strings.TrimSpace(string(b)), err
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// NewServer builds the test server, its notes kept in memory. crash runs
// when the crash tool is called (nil: nothing happens).
func NewServer(crash func()) *mcp.Server { return newServer(crash, "") }

// newServer builds the test server, its notes kept in notesFile ("": in
// memory).
func newServer(crash func(), notesFile string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, nil)
	addNoteTools(s, &notebook{file: notesFile})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Returns n characters."},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", in.N)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			r := text("the fail tool failed on purpose")
			r.IsError = true
			return r, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Never answers until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Makes the server die."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			if crash != nil {
				crash()
			}
			return text("crashed"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Reads an environment variable of the server."},
		func(_ context.Context, _ *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(in.Name)
			if !ok {
				return text(in.Name + " is not set"), nil, nil
			}
			return text(in.Name + "=" + v), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "secret", Description: "A tool a deny list hides."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			return text("the secret"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Adds the tool late."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "late", Description: "Added by grow."},
				func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
					return text("late"), nil, nil
				})
			return text("grown"), nil, nil
		})
	return s
}

func addNoteTools(s *mcp.Server, book *notebook) {
	mcp.AddTool(s, &mcp.Tool{Name: "note", Description: "Keeps a note."},
		func(_ context.Context, _ *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, any, error) {
			if err := book.add(in.Text); err != nil {
				return nil, nil, err
			}
			return text("noted"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "notes", Description: "Reads every note kept."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			all, err := book.all()
			if err != nil {
				return nil, nil, err
			}
			if all == "" {
				return text("no notes"), nil, nil
			}
			return text("notes:\n" + all), nil, nil
		})
}

// Handler serves NewServer(crash) over streamable HTTP. When header is not
// empty, requests must carry header: value or get a 401.
func Handler(crash func(), header, value string) http.Handler {
	srv := NewServer(crash)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if header == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(header) != value {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// PerPathHandler serves over streamable HTTP a test server of its own for
// each URL path, its notes in memory: a remote server that keeps one state
// per path, as one told the scope in its URL would.
func PerPathHandler() http.Handler {
	var mu sync.Mutex
	servers := map[string]*mcp.Server{}
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		mu.Lock()
		defer mu.Unlock()
		s := servers[r.URL.Path]
		if s == nil {
			s = NewServer(nil)
			servers[r.URL.Path] = s
		}
		return s
	}, nil)
}

// MaybeServe serves the test server over stdin/stdout and exits when
// ServeEnv is "stdio"; otherwise it returns at once. Call it first in
// TestMain.
func MaybeServe() {
	if os.Getenv(ServeEnv) != "stdio" {
		return
	}
	if p := os.Getenv(StartsEnv); p != "" {
		if f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
		}
	}
	if os.Getenv(FailEnv) == "1" {
		fmt.Fprintln(os.Stderr, "mcptest: failing at start on purpose")
		os.Exit(1)
	}
	if os.Getenv(HangEnv) == "1" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	srv := newServer(func() { os.Exit(3) }, os.Getenv(NotesEnv))
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

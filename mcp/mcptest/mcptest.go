// Package mcptest is an MCP server for tests, written with the same SDK the
// client uses. Tests serve it over streamable HTTP on 127.0.0.1 (Handler)
// or over stdio from a helper process: the test binary itself, re-run with
// ServeEnv set, calls MaybeServe first thing in TestMain.
//
// Its tools: echo (text), add (structured result), big (a long text), fail
// (a tool error), slow (answers only when cancelled), crash (exits the
// stdio process; calls the crash hook over HTTP), env (reads a variable of
// the server's environment), secret (for deny lists) and grow (adds the
// tool late, so the server tells its clients that its list changed).
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
)

// Tools are the names of the server's tools, in the order it lists them.
var Tools = []string{"add", "big", "crash", "echo", "env", "fail", "grow", "secret", "slow"}

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

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// NewServer builds the test server. crash runs when the crash tool is
// called (nil: nothing happens).
func NewServer(crash func()) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, nil)
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
	srv := NewServer(func() { os.Exit(3) })
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

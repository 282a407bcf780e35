package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/internal/textcut"
	"github.com/dreamgate/dreamgate/llm"
)

var _ agent.Tool = (*tool)(nil)

// Limits on what a server's tool definition and its errors may cost.
const (
	maxNameLen     = 64 // OpenAI's limit on function names
	maxDescription = 2000
	maxErrorChars  = 1000
)

// tool is one tool of one server, as the model sees it.
type tool struct {
	srv    *server
	remote string // the server's own name for it
	def    llm.ToolDef
}

var unsafeChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_-]`) })

// ToolName is the name the model sees for a server's tool:
// mcp_<server>_<tool>, with characters a provider would refuse replaced by
// '_' and, past 64 characters, cut and made unique with a hash.
func ToolName(serverName, toolName string) string {
	name := "mcp_" + unsafeChars().ReplaceAllString(serverName, "_") + "_" + unsafeChars().ReplaceAllString(toolName, "_")
	if len(name) <= maxNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(serverName + "\x00" + toolName))
	return name[:maxNameLen-9] + "_" + hex.EncodeToString(sum[:4])
}

func newTool(s *server, st *sdk.Tool) *tool {
	desc := st.Description
	if desc == "" {
		desc = st.Title
	}
	desc, _ = textcut.Chars(desc, maxDescription, "…")
	return &tool{
		srv:    s,
		remote: st.Name,
		def: llm.ToolDef{
			Name:        ToolName(s.cfg.Name, st.Name),
			Description: fmt.Sprintf("[MCP server %s] %s", s.cfg.Name, desc),
			Parameters:  schema(st.InputSchema),
		},
	}
}

// schema is the tool's input schema as a JSON object schema; a server that
// sends none (or something else) gets an empty object schema, which every
// provider accepts. A schema without "type" is taken as an object's.
func schema(in any) json.RawMessage {
	empty := json.RawMessage(`{"type":"object","properties":{}}`)
	b, err := json.Marshal(in)
	if err != nil {
		return empty
	}
	var obj map[string]any
	if json.Unmarshal(b, &obj) != nil || obj == nil {
		return empty
	}
	_, typed := obj["type"]
	_, dialect := obj["$schema"]
	if typed && !dialect {
		return b
	}
	obj["type"] = "object"
	// Some OpenAI-compatible providers refuse a "$schema" keyword.
	delete(obj, "$schema")
	if b, err = json.Marshal(obj); err != nil {
		return empty
	}
	return b
}

func (t *tool) Def() llm.ToolDef { return t.def }

// Run calls the tool on its server, starting the server first when needed.
// The call (start included) is bounded by the server's timeout. Neither
// its arguments nor its result are logged (they are what people said and
// what the server holds): only their sizes, at debug.
func (t *tool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	s := t.srv
	s.begin()
	defer s.end()
	s.log.Debug("MCP tool call", "tool", t.remote, "args_bytes", len(args))
	callCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	start := s.m.now()

	sess, _, err := s.ensure(callCtx)
	if err != nil {
		return "", t.failure(ctx, callCtx, err)
	}
	res, err := sess.CallTool(callCtx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) && ctx.Err() == nil && callCtx.Err() == nil {
			// Not an answer from the server and not our timeout: the
			// connection is gone (the process died, the endpoint went away).
			s.lost(sess, "it stopped during a call", err)
			return "", fmt.Errorf("MCP server %s stopped working during the call; it will be started again on the next call", s.cfg.Name)
		}
		return "", t.failure(ctx, callCtx, err)
	}
	s.worked()
	out := render(res)
	s.log.Debug("MCP tool answered", "tool", t.remote, "is_error", res.IsError,
		"result_chars", len(out), "took", s.m.now().Sub(start).Round(time.Millisecond))
	if res.IsError {
		if out == "" {
			out = "the tool reported an error without a message"
		}
		return "", fmt.Errorf("%s: %s", t.def.Name, out)
	}
	return out, nil
}

// failure turns a failed call into the one error the model sees.
func (t *tool) failure(parent, callCtx context.Context, err error) error {
	s := t.srv
	var rpc *jsonrpc.Error
	var down *downError
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("%s: %w", t.def.Name, parent.Err())
	case callCtx.Err() != nil:
		s.log.Warn("MCP tool call timed out", "tool", t.remote, "timeout", s.cfg.Timeout)
		return fmt.Errorf("%s did not answer within %s, so the call was abandoned", t.def.Name, s.cfg.Timeout)
	case errors.As(err, &down):
		return down
	case errors.As(err, &rpc):
		msg, _ := textcut.Chars(rpc.Message, maxErrorChars, "…")
		return fmt.Errorf("MCP server %s refused the call: %s", s.cfg.Name, msg)
	case errors.Is(err, errClosed):
		return fmt.Errorf("%s is not available: the gateway is shutting down", t.def.Name)
	default:
		s.log.Warn("MCP tool call failed", "tool", t.remote, "err", llm.RedactError(err, ""))
		return fmt.Errorf("%s failed; the reason is in the gateway log", t.def.Name)
	}
}

// render turns a result into the text the model reads: the text parts in
// order, placeholders for media, and the structured content as JSON unless
// a text part already carries exactly that JSON.
func render(res *sdk.CallToolResult) string {
	var parts []string
	var structured []byte
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil && string(b) != "null" {
			structured = b
		}
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			if structured != nil && sameJSON(c.Text, structured) {
				continue
			}
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource %s, %s, %d bytes, not shown]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				parts = append(parts, string(b))
			}
		}
	}
	if structured != nil {
		var buf bytes.Buffer
		if json.Indent(&buf, structured, "", "  ") == nil {
			structured = buf.Bytes()
		}
		parts = append(parts, "Structured result:\n"+string(structured))
	}
	return strings.Join(parts, "\n")
}

// sameJSON reports whether text is the JSON value want (the SDK fills the
// text content of a structured result with the same JSON).
func sameJSON(text string, want []byte) bool {
	var a, b any
	if json.Unmarshal([]byte(text), &a) != nil || json.Unmarshal(want, &b) != nil {
		return false
	}
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

package llmtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/llm"
)

// Request is one chat-completions request as the fake received it.
type Request struct {
	Model    string
	Messages []llm.Message
	// Tools are the names of the function tools offered.
	Tools        []string
	Stream       bool
	IncludeUsage bool
	// MaxTokens is max_tokens, or max_completion_tokens when that is sent.
	MaxTokens int
	// Temperature is nil when the request sent none.
	Temperature *float64
	Header      http.Header
	Body        []byte
	Received    time.Time
	// PromptTokens and CachedTokens are the prompt tokens the fake counted
	// for the request and how many of them its prompt cache held (see the
	// package doc), whatever usage the reply reported; 0 for a refused
	// request.
	PromptTokens, CachedTokens int
	// CacheKey is the prompt_cache_key sent, "" when none was.
	CacheKey string
	// Problem is why the fake refused the request with a 400, as OpenAI
	// would (a malformed message, an unanswered tool call …); empty when
	// the request was valid.
	Problem string
}

// The wire structs are the fake's own reading of OpenAI's format, kept
// apart from go-openai's so the client is checked independently.
type wireRequest struct {
	Model         *string         `json:"model"`
	Messages      json.RawMessage `json:"messages"`
	Tools         []wireTool      `json:"tools"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int      `json:"max_tokens"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
	Temperature         *float64 `json:"temperature"`
	PromptCacheKey      *string  `json:"prompt_cache_key"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// decodeRequest reads body into a Request. The error, if any, is the
// problem the fake answers 400 for; the Request holds what could be read.
func decodeRequest(body []byte) (Request, error) {
	var r Request
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return r, fmt.Errorf("body is not a JSON object: %w", err)
	}
	if w.Model != nil {
		r.Model = *w.Model
	}
	r.Stream = w.Stream
	r.IncludeUsage = w.StreamOptions != nil && w.StreamOptions.IncludeUsage
	r.MaxTokens = w.MaxTokens
	if w.MaxCompletionTokens > 0 {
		r.MaxTokens = w.MaxCompletionTokens
	}
	r.Temperature = w.Temperature
	if w.PromptCacheKey != nil {
		r.CacheKey = *w.PromptCacheKey
	}
	for _, t := range w.Tools {
		if t.Function != nil {
			r.Tools = append(r.Tools, t.Function.Name)
		}
	}

	var raw []wireMessage
	if len(w.Messages) > 0 {
		if err := json.Unmarshal(w.Messages, &raw); err != nil {
			return r, fmt.Errorf("messages: %w", err)
		}
	}
	var problems []error
	for i, m := range raw {
		msg, err := decodeMessage(m)
		if err != nil {
			problems = append(problems, fmt.Errorf("messages[%d]: %w", i, err))
		}
		r.Messages = append(r.Messages, msg)
	}

	switch {
	case w.Model == nil || *w.Model == "":
		problems = append(problems, errors.New("missing required parameter: model"))
	case len(raw) == 0:
		problems = append(problems, errors.New("messages must be a non-empty array"))
	}
	if w.StreamOptions != nil && !w.Stream {
		problems = append(problems, errors.New("stream_options is only allowed when stream is enabled"))
	}
	if w.Temperature != nil && (*w.Temperature < 0 || *w.Temperature > 2) {
		problems = append(problems, fmt.Errorf("temperature %v is outside [0, 2]", *w.Temperature))
	}
	for i, t := range w.Tools {
		if err := checkTool(t); err != nil {
			problems = append(problems, fmt.Errorf("tools[%d]: %w", i, err))
		}
	}
	if err := r.CheckToolPairs(); err != nil {
		problems = append(problems, err)
	}
	return r, errors.Join(problems...)
}

func decodeMessage(m wireMessage) (llm.Message, error) {
	msg := llm.Message{Role: m.Role, ToolCallID: m.ToolCallID, Name: m.Name}
	var problems []error
	switch m.Role {
	case llm.RoleSystem, "developer", llm.RoleUser, llm.RoleAssistant, llm.RoleTool:
	default:
		problems = append(problems, fmt.Errorf("unknown role %q", m.Role))
	}

	content, images, present, err := decodeContent(m.Content)
	msg.Content, msg.Images = content, images
	switch {
	case err != nil:
		problems = append(problems, err)
	case !present && !(m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0):
		problems = append(problems, fmt.Errorf("missing content on a %s message", m.Role))
	case len(images) > 0 && m.Role != llm.RoleUser:
		// OpenAI: "Image URLs are only allowed for messages with role 'user'".
		problems = append(problems, fmt.Errorf("image parts on a message of role %s", m.Role))
	}

	if m.Role == llm.RoleTool && m.ToolCallID == "" {
		problems = append(problems, errors.New("tool message without tool_call_id"))
	}
	if len(m.ToolCalls) > 0 && m.Role != llm.RoleAssistant {
		problems = append(problems, fmt.Errorf("tool_calls on a %s message", m.Role))
	}
	for j, tc := range m.ToolCalls {
		call, err := decodeToolCall(tc)
		if err != nil {
			problems = append(problems, fmt.Errorf("tool_calls[%d]: %w", j, err))
		}
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	return msg, errors.Join(problems...)
}

// decodeContent reads a string, an array of text and image_url parts,
// null or nothing. present is false for null and for a missing key. An
// image given as a data: URL is recorded with its type and bytes; one given
// as an http(s) URL (which OpenAI fetches itself) is recorded without them.
func decodeContent(raw json.RawMessage) (text string, images []llm.Image, present bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil, false, nil
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", nil, false, fmt.Errorf("content: %w", err)
		}
		return text, nil, true, nil
	}
	var parts []struct {
		Type     string  `json:"type"`
		Text     *string `json:"text"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, false, errors.New("content must be a string, an array of parts or null")
	}
	var b strings.Builder
	for i, p := range parts {
		switch p.Type {
		case "text":
			if p.Text == nil {
				return "", nil, false, fmt.Errorf("content[%d]: text part without text", i)
			}
			b.WriteString(*p.Text)
		case "image_url":
			if p.ImageURL == nil {
				return "", nil, false, fmt.Errorf("content[%d]: image_url part without image_url", i)
			}
			img, err := decodeImageURL(p.ImageURL.URL)
			if err != nil {
				return "", nil, false, fmt.Errorf("content[%d]: %w", i, err)
			}
			images = append(images, img)
		}
	}
	return b.String(), images, true, nil
}

// decodeImageURL reads an image_url's url: a base64 data: URL of an image
// type, or an http(s) URL.
func decodeImageURL(u string) (llm.Image, error) {
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return llm.Image{}, nil
	}
	meta, data, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	mime, isB64 := strings.CutSuffix(meta, ";base64")
	if !ok || !strings.HasPrefix(u, "data:") || !isB64 {
		return llm.Image{}, errors.New("image_url.url must be an http(s) URL or a base64 data: URL")
	}
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		return llm.Image{}, fmt.Errorf("image type %q is not supported (png, jpeg, gif, webp)", mime)
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil || len(b) == 0 {
		return llm.Image{}, errors.New("image_url.url: the data: URL is not valid base64 image data")
	}
	return llm.Image{MIME: mime, Data: b}, nil
}

func decodeToolCall(tc wireToolCall) (llm.ToolCall, error) {
	call := llm.ToolCall{ID: tc.ID, Name: tc.Function.Name}
	var problems []error
	if tc.ID == "" {
		problems = append(problems, errors.New("missing id"))
	}
	if tc.Type != "function" {
		problems = append(problems, fmt.Errorf("type is %q, want \"function\"", tc.Type))
	}
	if tc.Function.Name == "" {
		problems = append(problems, errors.New("missing function.name"))
	}
	if err := json.Unmarshal(tc.Function.Arguments, &call.Arguments); err != nil {
		problems = append(problems, errors.New("function.arguments must be a string"))
	}
	return call, errors.Join(problems...)
}

func checkTool(t wireTool) error {
	if t.Type != "function" || t.Function == nil {
		return fmt.Errorf("type is %q, want a function tool", t.Type)
	}
	if t.Function.Name == "" {
		return errors.New("missing function.name")
	}
	if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && p[0] != '{' {
		return errors.New("function.parameters must be a JSON Schema object")
	}
	return nil
}

// CheckToolPairs checks the rule OpenAI (and Anthropic) enforce on tool
// calls: an assistant message with tool calls is followed directly by
// tool messages answering each of its call ids exactly once, and every
// tool message answers such a call. A second result for one id (a note
// pushed as another result of the last call) is a known way to break an
// agent: the provider refuses the request with a 400, every time.
func (r Request) CheckToolPairs() error {
	var problems []error
	for i := 0; i < len(r.Messages); i++ {
		m := r.Messages[i]
		if m.Role == llm.RoleTool {
			problems = append(problems, fmt.Errorf("messages[%d]: tool result for %q does not follow an assistant tool call", i, m.ToolCallID))
			continue
		}
		if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		open := make(map[string]bool, len(m.ToolCalls))
		for _, tc := range m.ToolCalls {
			if open[tc.ID] {
				problems = append(problems, fmt.Errorf("messages[%d]: tool call id %q used twice", i, tc.ID))
			}
			open[tc.ID] = true
		}
		answered := make(map[string]bool, len(open))
		j := i + 1
		for ; j < len(r.Messages) && r.Messages[j].Role == llm.RoleTool; j++ {
			id := r.Messages[j].ToolCallID
			switch {
			case !open[id]:
				problems = append(problems, fmt.Errorf("messages[%d]: tool result for unknown call %q", j, id))
			case answered[id]:
				problems = append(problems, fmt.Errorf("messages[%d]: second tool result for call %q", j, id))
			}
			answered[id] = true
		}
		for _, tc := range m.ToolCalls {
			if !answered[tc.ID] {
				problems = append(problems, fmt.Errorf("messages[%d]: tool call %q has no result", i, tc.ID))
			}
		}
		i = j - 1
	}
	return errors.Join(problems...)
}

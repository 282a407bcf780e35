package llm

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"

	openai "github.com/sashabaranov/go-openai"
)

// emptySchema is sent for a tool without parameters: providers refuse
// "parameters": null.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// wireRequest converts req to go-openai's form, and says what the doer
// must mend in the body go-openai encodes from it.
func (c *Client) wireRequest(req Request, model string) (openai.ChatCompletionRequest, bodyMend, error) {
	msgs, fill := toWireMessages(req.Messages)
	mend := bodyMend{fillContent: fill, cacheKey: c.cacheKey(req.CacheKey)}
	tools, err := toWireTools(req.Tools)
	if err != nil {
		return openai.ChatCompletionRequest{}, mend, err
	}
	w := openai.ChatCompletionRequest{
		Model:     model,
		Messages:  msgs,
		Tools:     tools,
		MaxTokens: c.cfg.MaxTokens,
	}
	if req.MaxTokens > 0 {
		w.MaxTokens = req.MaxTokens
	}
	switch t := c.cfg.Temperature; {
	case t == 0:
		// go-openai omits a zero temperature, which would leave the
		// provider's default (often 1.0); the smallest float is greedy too.
		w.Temperature = math.SmallestNonzeroFloat32
	case t > 0:
		w.Temperature = t
	}
	adaptToModel(&w)
	return w, mend, nil
}

// adaptToModel moves parameters that go-openai refuses for reasoning models
// (o1/o3/o4, gpt-5 …) to the form those models take, instead of failing.
func adaptToModel(w *openai.ChatCompletionRequest) {
	v := openai.NewReasoningValidator()
	for range 3 {
		err := v.Validate(*w)
		switch {
		case err == nil:
			return
		case errors.Is(err, openai.ErrReasoningModelMaxTokensDeprecated):
			w.MaxCompletionTokens, w.MaxTokens = w.MaxTokens, 0
		case errors.Is(err, openai.ErrReasoningModelLimitationsOther),
			errors.Is(err, openai.ErrReasoningSamplingUnsupported):
			w.Temperature = 0
		default:
			return // sent as is; go-openai's refusal becomes ErrRejected
		}
	}
}

func toWireMessages(msgs []Message) ([]openai.ChatCompletionMessage, bool) {
	out := make([]openai.ChatCompletionMessage, len(msgs))
	fill := false
	for i, m := range msgs {
		w := openai.ChatCompletionMessage{
			Role:       m.Role,
			Content:    m.Content,
			Name:       m.Name,
			ToolCallID: m.ToolCallID,
		}
		if len(m.ToolCalls) > 0 {
			w.ToolCalls = make([]openai.ToolCall, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				args := tc.Arguments
				if args == "" {
					// go-openai would omit "arguments"; providers require it.
					args = "{}"
				}
				w.ToolCalls[j] = openai.ToolCall{
					ID:       tc.ID,
					Type:     openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: tc.Name, Arguments: args},
				}
			}
		}
		if len(m.Images) > 0 {
			w.Content, w.MultiContent = "", imageParts(m)
		} else if m.Content == "" {
			fill = true
		}
		out[i] = w
	}
	return out, fill
}

// imageParts is m's content as parts: its text, then each image as a
// data: URL (go-openai refuses Content and MultiContent together).
func imageParts(m Message) []openai.ChatMessagePart {
	parts := make([]openai.ChatMessagePart, 0, 1+len(m.Images))
	if m.Content != "" {
		parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: m.Content})
	}
	for _, img := range m.Images {
		parts = append(parts, openai.ChatMessagePart{
			Type: openai.ChatMessagePartTypeImageURL,
			ImageURL: &openai.ChatMessageImageURL{
				URL:    "data:" + img.MIME + ";base64," + base64.StdEncoding.EncodeToString(img.Data),
				Detail: openai.ImageURLDetailAuto,
			},
		})
	}
	return parts
}

func toWireTools(tools []ToolDef) ([]openai.Tool, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]openai.Tool, len(tools))
	for i, t := range tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = emptySchema
		} else if !json.Valid(params) {
			return nil, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		out[i] = openai.Tool{
			Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		}
	}
	return out, nil
}

func fromWireToolCalls(tcs []openai.ToolCall) []ToolCall {
	if len(tcs) == 0 {
		return nil
	}
	out := make([]ToolCall, len(tcs))
	for i, tc := range tcs {
		out[i] = ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
	}
	return fillToolCallIDs(out)
}

// fillToolCallIDs gives an id to calls that came without one (some local
// servers send none): every tool result must name the call it answers.
func fillToolCallIDs(tcs []ToolCall) []ToolCall {
	for i := range tcs {
		if tcs[i].ID == "" {
			tcs[i].ID = "call_" + rand.Text()
		}
	}
	return tcs
}

func fromWireUsage(u openai.Usage) Usage {
	out := Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CachedTokens = d.CachedTokens
	}
	return out
}

// bodyMend is what the doer changes in the body go-openai encoded.
type bodyMend struct {
	// fillContent gives every message a "content" key. go-openai encodes
	// content with omitempty, so an empty tool result or user message
	// would be sent without one — OpenAI and Ollama answer 400 — and an
	// assistant message that only calls tools without one, which
	// vLLM-style servers refuse and Ollama takes only as "". An empty
	// string is accepted by all of them.
	fillContent bool
	// cacheKey, when set, is sent as prompt_cache_key, which go-openai's
	// request has no field for.
	cacheKey string
}

func (m bodyMend) needed() bool { return m.fillContent || m.cacheKey != "" }

// apply rewrites req's body as m says.
func (m bodyMend) apply(req *http.Request) error {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if err := req.Body.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	body, err = m.body(body)
	if err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(body)), nil
	}
	return nil
}

func (m bodyMend) body(body []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("decode request: %w", err)
	}
	if m.fillContent {
		var msgs []map[string]json.RawMessage
		if err := json.Unmarshal(top["messages"], &msgs); err != nil {
			return nil, fmt.Errorf("decode messages: %w", err)
		}
		for _, msg := range msgs {
			if _, ok := msg["content"]; !ok {
				msg["content"] = json.RawMessage(`""`)
			}
		}
		raw, err := json.Marshal(msgs)
		if err != nil {
			return nil, fmt.Errorf("encode messages: %w", err)
		}
		top["messages"] = raw
	}
	if m.cacheKey != "" {
		raw, err := json.Marshal(m.cacheKey)
		if err != nil {
			return nil, fmt.Errorf("encode prompt_cache_key: %w", err)
		}
		top["prompt_cache_key"] = raw
	}
	out, err := json.Marshal(top)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return out, nil
}

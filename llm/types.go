package llm

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/internal/textcut"
)

// Roles of a chat message, as the OpenAI chat-completions format names them.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Finish reasons the rest of the program cares about; providers may send others.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
)

// Purposes name the buckets usage is recorded under.
const (
	PurposeChat          = "chat"
	PurposeArchive       = "archive"
	PurposeDreamAnalysis = "dream-analysis"
	PurposeDreamEdit     = "dream-edit"
)

// Message is one chat message. Its JSON form is the OpenAI/nanobot one, so
// session files stay readable by other tools.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool result.
	Name string `json:"name,omitempty"`
	// Time is when the message was recorded in its session. It is kept in
	// session files and archive transcripts and never sent to the model.
	Time time.Time `json:"timestamp,omitzero"`
	// Sender names who wrote a user message that came from a chat platform
	// (its display name there), so that an archive of a conversation with
	// several people says who said what. The session keeps it in the
	// message's origin (json "-" here); it is never sent to the model.
	Sender string `json:"-"`
	// Images go to the model beside Content as image parts, on a user
	// message to a model that reads images. They are never written to
	// session files (json "-"): a caller sets them on the one request they
	// belong to, and Content carries a marker naming them for the record.
	Images []Image `json:"-"`
}

// maxSenderLabel caps SenderLabel, in characters.
const maxSenderLabel = 64

// SenderLabel is Sender as transcripts and replays show it, "USER (Ana)"
// or "[Ana] …": one line of at most 64 characters, without the brackets,
// parentheses and colons those forms are delimited by; "" when Sender is.
func (m Message) SenderLabel() string {
	if m.Sender == "" {
		return ""
	}
	name := strings.Map(func(r rune) rune {
		switch {
		case strings.ContainsRune("()[]:", r):
			return -1
		case r < ' ' || r == 0x7f:
			return ' '
		}
		return r
	}, m.Sender)
	name = strings.Join(strings.Fields(name), " ")
	name, _ = textcut.Chars(name, maxSenderLabel, "")
	return name
}

// Image is a picture sent with a message: its bytes and their MIME type
// (image/png, image/jpeg, image/gif or image/webp — what vision models
// take). It is sent inline as a data: URL.
type Image struct {
	MIME string
	Data []byte
}

// ToolCall is one function call the model asked for. Arguments is the raw
// JSON text the model produced; it may be malformed.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

type toolCallJSON struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// MarshalJSON writes the OpenAI shape {"id","type":"function","function":{…}}.
func (tc ToolCall) MarshalJSON() ([]byte, error) {
	var j toolCallJSON
	j.ID, j.Type = tc.ID, "function"
	j.Function.Name, j.Function.Arguments = tc.Name, tc.Arguments
	return json.Marshal(j)
}

// UnmarshalJSON reads the OpenAI shape.
func (tc *ToolCall) UnmarshalJSON(b []byte) error {
	var j toolCallJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("decode tool call: %w", err)
	}
	tc.ID, tc.Name, tc.Arguments = j.ID, j.Function.Name, j.Function.Arguments
	return nil
}

// ToolDef describes a tool offered to the model. Parameters is a JSON Schema
// object.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Request is one chat-completions call.
type Request struct {
	// Model overrides the client's configured model when non-empty.
	Model    string
	Messages []Message
	Tools    []ToolDef
	// MaxTokens overrides the configured completion limit when > 0.
	MaxTokens int
	// Purpose is the usage bucket (PurposeChat, …); empty counts as chat.
	Purpose string
	// CacheKey names the calls that share a prompt prefix — a chat turn's
	// session key, or one name for all archive calls and one per Dream
	// phase, whose instructions every such call repeats — so that a
	// provider that takes a prompt-cache hint can send them to where that
	// prefix is cached. Only a
	// hash of it is sent, as prompt_cache_key, and only where
	// Config.PromptCacheKey allows; "" sends none.
	CacheKey string
	// OnDelta, when set, makes the call streamed and receives each content
	// fragment as it arrives. The Response is the same as unstreamed.
	OnDelta func(fragment string)

	// tries, when > 0, lowers the client's MaxTries for this call: a chain
	// tries a model back from its cooldown once when another can answer.
	tries int
	// fallback: a chain has another model to ask if this call fails, so
	// the call is not retried past a hang (Client.chat's retry) and a
	// streamed answer must begin within Config.FirstByte.
	fallback bool
}

// Response is the model's answer.
type Response struct {
	Content      string
	ToolCalls    []ToolCall
	FinishReason string
	Model        string
	Usage        Usage
}

// Usage counts tokens; Calls counts completed model calls.
type Usage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	// CachedTokens are the prompt tokens the provider served from its
	// prompt cache, as it reports them (prompt_tokens_details.cached_tokens);
	// they are part of PromptTokens, billed at a discount. 0 from providers
	// that report none.
	CachedTokens int `json:"cachedTokens,omitempty"`
	Calls        int `json:"calls"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		CachedTokens:     u.CachedTokens + o.CachedTokens,
		Calls:            u.Calls + o.Calls,
	}
}

// Package channels is the contract between the gateway and the chat
// platforms: typed inbound and outbound messages, the Channel interface every
// adapter implements, and the optional capabilities an adapter may add.
//
// It also holds what the chat adapters share beneath the contract, so each
// is written once: Delivery (the bounded queue between a platform reader and
// the gateway, in-order delivery, the busy notice, the hand-over at stop of
// what was acked or read but not delivered), SendRetry (how long a send is
// retried through rate limits and server errors before it is dropped),
// HealthTracker, RecentSet (the bounded dedupe set), TTLCache (what the
// platform said about a conversation, for a while), SplitMessage and
// ImageType (which downloads are images a model takes).
// channels/channeltest is the contract test every adapter runs against its
// fake.
//
// The adapters live in subpackages (terminal, slack, discord); each keeps its
// platform library's types to itself. Of ours this package imports only
// leaves (audience, internal/backoff, internal/reasoning); an adapter
// imports it and those leaves.
package channels

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/dreamgate/dreamgate/audience"
)

// Inbound is one message a person sent to the bot, already filtered by the
// adapter (own messages, duplicates, allowFrom, channel policy) and with the
// bot mention stripped, so "@bot /dream-log" arrives as "/dream-log".
type Inbound struct {
	Channel  string // adapter name: "terminal", "slack", "discord"
	ChatID   string // platform conversation id (channel, DM)
	ThreadID string // platform thread id; "" outside threads
	// SessionKey names the conversation, one session per key:
	// "terminal:<name>", "slack:<channel>[:<thread_ts>]" or
	// "discord:<channel>[:thread:<id>]", e.g. "slack:C1:1712.55".
	SessionKey string
	SenderID   string // platform user id
	SenderName string
	// Audience is who can read the conversation, as the platform says
	// (a DM, a private or public channel, a workspace, a shared channel),
	// never as a message says: it decides which memory the turn may see
	// and where what is said is kept. Every adapter sets a valid one.
	Audience  audience.Audience
	MessageID string // platform message id, used for reactions and replies
	Text      string
	Time      time.Time
	// Local marks the machine's own user (the terminal), who is always an
	// admin.
	Local bool
	// InOrder says the sender reads the answers in the order of its
	// messages (lines piped into the terminal chat by a script): commands
	// that otherwise overtake the messages waiting before them (/status,
	// /stop) wait their turn.
	InOrder bool
	// Context holds earlier messages of the conversation the bot had not
	// seen (a Slack thread it is mentioned in, the Discord message being
	// replied to), oldest first. The gateway adds them to a new session
	// once, marked as context; an existing session ignores them.
	Context []ContextMessage
	// Images are pictures sent with the message, downloaded by an adapter
	// configured for a model that reads images (else they are only named
	// in Text). The gateway shows them to the model for this message's
	// turn; the session keeps a marker naming them, not the bytes.
	Images []Image
}

// Image is one picture of an Inbound: its file name, MIME type (one of
// ImageType's) and bytes (at most MaxImageBytes).
type Image struct {
	Name string
	MIME string
	Data []byte
}

// ContextMessage is one earlier message handed over as Inbound.Context.
type ContextMessage struct {
	SenderName string
	Text       string
	Time       time.Time
	// FromBot marks the bot's own earlier messages.
	FromBot bool
}

// Command describes a chat command the gateway understands, for adapters
// that declare commands to their platform (Slack slash commands, Discord
// application commands). The gateway's table is the source; cmd passes it
// to the adapters.
type Command struct {
	Name        string // without the slash: "dream-log"
	Description string
	// Arg names the one optional argument ("sha"), "" when it takes none.
	Arg   string
	Admin bool
}

// Kinds of outbound message.
const (
	KindReply    = ""         // the answer to a turn or command
	KindError    = "error"    // a turn failed; Text is one sentence for the user
	KindProgress = "progress" // a status line while work goes on (e.g. "Dreaming…")
)

// Outbound is one message the bot sends. Adapters split Text to their
// platform's limit themselves (SplitMessage).
type Outbound struct {
	Channel    string
	ChatID     string
	ThreadID   string
	SessionKey string
	ReplyTo    string // MessageID of the inbound this answers, if any
	Kind       string
	Text       string
	// Streamed says that Text is exactly what the channel's Stream for this
	// turn has already shown, since its last Break: the channel finishes
	// the reply without showing it again. Only a channel that returned a
	// Stream for the turn gets it.
	Streamed bool
	// Key names the answer to one inbound message (AnswerKey), so that it
	// is posted at most once by whichever process sends it: each part is
	// posted under PostKey(Key, part) (Discord's nonce, Slack's message
	// metadata) and recorded (PostLog). "" posts under keys of its own.
	Key string
	// Again says the answer may have been posted before by a process that
	// died before recording that its message was answered (a restart, or
	// another process taking the conversation over): a part whose key the
	// post record or the platform already shows is not posted again.
	Again bool
}

// AnswerKey is the key of the answer to in (Outbound.Key): its platform,
// conversation and message id, so every process derives the same one. ""
// for a message without an id (the terminal's).
func AnswerKey(in Inbound) string {
	if in.MessageID == "" {
		return ""
	}
	return in.Channel + "/" + in.ChatID + "/" + in.MessageID
}

// PostKey is the idempotency key of part (from 0) of the answer key
// names: 24 hex characters (Discord takes a nonce of up to 25), the
// same in every process.
func PostKey(key string, part int) string {
	sum := sha256.Sum256([]byte(key + "#" + strconv.Itoa(part)))
	return hex.EncodeToString(sum[:12])
}

// PostLog records the parts of answers that were posted, by PostKey,
// shared by every process on one store, so an answer sent again skips
// what was posted. An adapter without one relies on the platform alone.
type PostLog interface {
	// Posted reports whether a post was recorded under key.
	Posted(key string) (bool, error)
	// Record notes that the post under key went out as the platform's
	// message id.
	Record(key, messageID string) error
}

// ReplyTo builds the outbound that answers in.
func ReplyTo(in Inbound, kind, text string) Outbound {
	return Outbound{
		Channel: in.Channel, ChatID: in.ChatID, ThreadID: in.ThreadID,
		SessionKey: in.SessionKey, ReplyTo: in.MessageID, Kind: kind, Text: text,
	}
}

// ErrClosed is returned by a Sink that no longer accepts messages because the
// gateway is shutting down.
var ErrClosed = errors.New("gateway is shutting down")

// ErrBusy is returned by a Sink whose queue for that session is full.
var ErrBusy = errors.New("too many messages waiting for this conversation")

// Sink receives inbound messages from a channel. Deliver returns once the
// message is accepted (queued), not when it is answered; a nil error means the
// gateway owns it and will answer it. ErrClosed and ErrBusy say it was not
// accepted.
type Sink interface {
	Deliver(ctx context.Context, in Inbound) error
}

// Channel is one chat platform.
type Channel interface {
	// Name is the adapter name used in Inbound.Channel and session keys.
	Name() string
	// Run connects and delivers inbound messages to sink until ctx ends,
	// reconnecting with backoff by itself after a drop. It returns nil when
	// ctx ends, and an error only when it cannot go on (bad credentials).
	Run(ctx context.Context, sink Sink) error
	// Send delivers one message, split to the platform's limit, retrying
	// transient failures and rate limits. An error means it was not
	// delivered after the retries.
	Send(ctx context.Context, out Outbound) error
}

// Typer is implemented by channels that can show that the bot is working
// (Discord's typing indicator, Slack's "eyes" reaction). The returned stop
// func ends the indicator; it is safe to call more than once.
type Typer interface {
	StartTyping(ctx context.Context, in Inbound) (stop func())
}

// WorkingClearer is implemented by channels whose working indicator stays
// on a message when the process dies mid-turn (Slack's "eyes" reaction).
// ClearWorking takes it off in's message; the gateway calls it at start for
// the messages a crash left unanswered. An error means it is still there.
type WorkingClearer interface {
	ClearWorking(ctx context.Context, in Inbound) error
}

// Streamer is implemented by channels that can show a reply while the
// model is still writing it (the terminal, when a person watches it).
type Streamer interface {
	// StartStream begins a turn's stream, or returns nil when this
	// conversation is not streamed.
	StartStream(in Inbound) Stream
}

// Stream shows one turn's answer as it is written. Its methods are called
// from one goroutine; the turn ends with a Send, Streamed when its text was
// shown in full.
type Stream interface {
	// Write shows a fragment of the model's text.
	Write(fragment string)
	// Break ends a model step whose text came before a tool call: what
	// follows is a new step.
	Break()
}

// States reported by HealthReporter.
const (
	StateConnecting   = "connecting"
	StateConnected    = "connected"
	StateReconnecting = "reconnecting"
	StateStopped      = "stopped"
	// StateStandby: another process of the store serves this channel's
	// connection (a Discord shard); this one takes it over if that one
	// dies.
	StateStandby = "standby"
	StateFailed  = "failed"
)

// Health is a channel's connection state for /healthz.
type Health struct {
	State  string    `json:"state"`
	Detail string    `json:"detail,omitempty"`
	Since  time.Time `json:"since"`
	// Reconnects counts the returns to StateConnected after the first,
	// and RateLimitWaits the platform's rate-limit answers waited out,
	// both since the process started (for /metrics).
	Reconnects     int `json:"reconnects,omitempty"`
	RateLimitWaits int `json:"rateLimitWaits,omitempty"`
}

// HealthReporter is implemented by channels that hold a connection.
type HealthReporter interface {
	Health() Health
}

package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Sentinel kinds of failure. Every error the Client returns wraps exactly one
// of them (or context.Canceled / context.DeadlineExceeded when the caller's
// context ended), so callers can decide with errors.Is.
var (
	// ErrUnavailable: the endpoint could not be reached, kept failing with
	// 5xx/429/timeouts after the retries, or the breaker is open.
	ErrUnavailable = errors.New("model unavailable")
	// ErrRejected: the provider refused the request (4xx other than 429);
	// retrying the same request cannot help.
	ErrRejected = errors.New("model rejected the request")
	// ErrMalformed: the provider answered, but the body could not be read as
	// a chat completion.
	ErrMalformed = errors.New("malformed model response")
)

// Error carries what went wrong with a model call. Reason is short and safe to
// show a user; Err holds the full chain (possibly with a provider body) and is
// for logs only.
type Error struct {
	Kind   error
	Status int
	// Code is the provider's error code ("model_not_found",
	// "context_length_exceeded") when it sent an identifier; "" otherwise.
	Code string
	// ContextLength: the provider refused the prompt as longer than the
	// model takes (a 400 or 413 saying so).
	ContextLength bool
	Reason        string
	Err           error
	// names are the client's setting names for UserMessage's hints.
	names Names
	// noKey: the client sent no API key, so a refusal is not of a key.
	noKey bool
}

func (e *Error) Error() string {
	msg := e.Kind.Error()
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// UserMessage turns any error from a model call into one sentence fit for a
// chat: it never includes a provider body, a token or a stack.
func UserMessage(err error) string {
	var le *Error
	var ce *ChainError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "The request was cancelled."
	case errors.As(err, &ce) && len(ce.Failures) > 1:
		// Each model's own sentence: the operator may have one thing to
		// fix per model (a key here, a server there).
		parts := make([]string, 0, len(ce.Failures))
		for _, f := range ce.Failures {
			parts = append(parts, f.Model+": "+UserMessage(f.Err))
		}
		return "No model answered. " + strings.Join(parts, " ")
	case errors.As(err, &le) && errors.Is(le.Kind, ErrRejected):
		names := le.names.withDefaults()
		switch le.Status {
		case http.StatusUnauthorized, http.StatusForbidden:
			if le.noKey {
				return fmt.Sprintf("The model provider wants an API key (HTTP %d), and no API key is set (%s).", le.Status, names.APIKey)
			}
			return fmt.Sprintf("The model provider refused the API key (HTTP %d); check %s.", le.Status, names.APIKey)
		case http.StatusNotFound:
			return fmt.Sprintf("The model or endpoint was not found (HTTP 404); check %s and %s.", names.Model, names.BaseURL)
		}
		if le.Status > 0 {
			return fmt.Sprintf("The model rejected the request (HTTP %d); check the model name and settings.", le.Status)
		}
		return "The model rejected the request; check the model name and settings."
	case errors.As(err, &le) && errors.Is(le.Kind, ErrMalformed):
		return "The model returned a response that could not be read."
	case errors.As(err, &le) && errors.Is(le.Kind, ErrUnavailable):
		if strings.HasPrefix(le.Reason, reasonConnect) {
			// Most often a model server that is not running, or the
			// wrong address: say which setting holds it.
			return fmt.Sprintf("The model is unavailable: %s; check that its server is running and that %s is right.", le.Reason, le.names.withDefaults().BaseURL)
		}
		if le.Reason != "" {
			return "The model is unavailable: " + le.Reason + "."
		}
		return "The model is unavailable."
	case errors.Is(err, context.DeadlineExceeded):
		return "The model did not answer in time."
	default:
		return "The model call failed."
	}
}

// OperatorAbsent is the one sentence a chat user who is not the operator
// hears when a model call failed, whatever the cause: the endpoint, the
// config keys to check and the provider's status are the operator's
// business (they go to the log), not something to show in a shared channel.
const OperatorAbsent = "The assistant's model is not answering right now; the operator has been told."

// PublicMessage is UserMessage for a chat user who is not the operator
// (Slack, Discord): OperatorAbsent for every failure but a cancellation.
// The operator reads UserMessage in the log or on the terminal.
func PublicMessage(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "The request was cancelled."
	default:
		return OperatorAbsent
	}
}

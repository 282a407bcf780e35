package slack

import "errors"

var (
	// ErrInvalidConfig is wrapped by every error New returns for a bad
	// Config; the message names the field (e.g. `slack.appToken: must start
	// with "xapp-"`).
	ErrInvalidConfig = errors.New("invalid slack config")
	// ErrAuth is wrapped by the error Run returns when Slack rejects a token
	// (invalid_auth, not_authed, account_inactive, token_revoked): retrying
	// cannot help until the configuration changes.
	ErrAuth = errors.New("slack rejected the token")
	// ErrAlreadyRunning is returned by Run when the adapter is already
	// running.
	ErrAlreadyRunning = errors.New("slack adapter is already running")
)

// configError names the offending field.
type configError struct {
	field, problem string
}

func (e *configError) Error() string { return "slack." + e.field + ": " + e.problem }

func (e *configError) Unwrap() error { return ErrInvalidConfig }

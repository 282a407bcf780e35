package slack

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// How sender names are looked up: once per user, a failure retried after
// nameRetryAfter, the lookup bounded by nameTimeout because deliveries wait
// for it.
const (
	nameTimeout    = 3 * time.Second
	nameRetryAfter = 10 * time.Minute
)

// names maps Slack user ids to the names people see, so the model can tell
// who said what in a team channel. It needs the users:read scope; without
// it, it says so once and the sender stays known by id.
type names struct {
	mu      sync.Mutex
	known   map[string]string
	failed  map[string]time.Time // ids whose lookup failed, and when
	noScope bool
}

func newNames() *names {
	return &names{known: map[string]string{}, failed: map[string]time.Time{}}
}

// senderName returns the display name of user, "" when it is not known.
func (a *Adapter) senderName(ctx context.Context, user string) string {
	n := a.names
	if user == "" {
		return ""
	}
	n.mu.Lock()
	name, ok := n.known[user]
	skip := n.noScope || time.Since(n.failed[user]) < nameRetryAfter
	n.mu.Unlock()
	if ok || skip {
		return name
	}

	ctx, cancel := context.WithTimeout(ctx, min(nameTimeout, a.apiTimeout))
	defer cancel()
	u, err := a.api.GetUserInfoContext(ctx, user)

	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.known) >= recentCap {
		clear(n.known)
	}
	if len(n.failed) >= recentCap {
		clear(n.failed)
	}
	if err != nil {
		var serr slack.SlackErrorResponse
		if errors.As(err, &serr) && serr.Err == "missing_scope" {
			n.noScope = true
			a.log.Warn("slack app has no users:read scope; senders are known by their ids only")
			return ""
		}
		n.failed[user] = time.Now()
		a.log.Info("slack sender name lookup failed", "user", user, "err", err)
		return ""
	}
	name = displayName(u)
	n.known[user] = name
	delete(n.failed, user)
	return name
}

// displayName is what Slack shows for u: the display name, else the full
// name, else the handle.
func displayName(u *slack.User) string {
	for _, s := range []string{u.Profile.DisplayName, u.Profile.RealName, u.RealName, u.Name} {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

package slack

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/dreamgate/dreamgate/channels"
)

// People: who a person is to the workspace a conversation belongs to, from
// what Slack says of them (users.info, or users.list for many at once),
// never from an event's or a command's payload alone: a full member, a
// guest (is_restricted, is_ultra_restricted), or a person of another
// organisation (their team_id is not the workspace's, nor one of their
// Enterprise Grid workspaces; is_stranger). Guests and people of another
// organisation read no team memory (see audience.go). The same lookup
// gives the name Slack shows for them.
//
// What Slack said is kept personTTL; a failed lookup personFailTTL, during
// which the person counts as an outsider: when Slack cannot say, the
// narrower audience wins.

const (
	personTTL     = 10 * time.Minute
	personFailTTL = time.Minute
	personTimeout = 3 * time.Second
	// listAbove: when more members of a channel than this are not known,
	// users.list describes the whole workspace at once (pages of
	// listPage, within listTimeout, at most once per personTTL), instead
	// of one users.info each.
	listAbove   = 20
	listPage    = 200
	listTimeout = 30 * time.Second
	// maxLookups bounds the users.info calls one channel's description
	// makes; members left undescribed count as outsiders.
	maxLookups = 50
)

// standing is who a person is to one workspace.
type standing uint8

const (
	standingUnknown  standing = iota // Slack could not say
	standingMember                   // a full member
	standingGuest                    // a multi- or single-channel guest
	standingExternal                 // a person of another organisation
)

func (s standing) String() string {
	return [...]string{"unknown", "member", "guest", "external"}[s]
}

// person is what Slack said of one user.
type person struct {
	found   bool // Slack described them
	name    string
	team    string   // team_id: their own workspace
	teams   []string // enterprise_user.teams: every workspace of theirs
	guest   bool     // is_restricted or is_ultra_restricted
	strange bool     // is_stranger: Slack shows only part of them
	deleted bool
}

func personOf(u *slack.User) person {
	return person{
		found: true, name: displayName(u), team: u.TeamID, teams: u.Enterprise.Teams,
		guest: u.IsRestricted || u.IsUltraRestricted, strange: u.IsStranger, deleted: u.Deleted,
	}
}

// standingIn is who p is to the workspace team.
func (p person) standingIn(team string) standing {
	switch {
	case !p.found:
		return standingUnknown
	case p.strange, team != "" && p.team != team && !slices.Contains(p.teams, team):
		return standingExternal
	case p.guest:
		return standingGuest
	}
	return standingMember
}

// people is the adapter's cache of what Slack said of people.
type people struct {
	cache   *channels.TTLCache[person]
	noScope atomic.Bool // users:read is missing: nobody can be described
	mu      sync.Mutex
	listed  map[string]time.Time // workspace -> when users.list last described it
}

func newPeople(now func() time.Time) *people {
	return &people{cache: channels.NewTTLCache[person](recentCap, now), listed: map[string]time.Time{}}
}

// person returns what Slack says of user, through the cache.
func (a *Adapter) person(ctx context.Context, user string) person {
	if user == "" || a.people.noScope.Load() {
		return person{}
	}
	if p, ok := a.people.cache.Get(user); ok {
		return p
	}
	callCtx, cancel := context.WithTimeout(ctx, min(personTimeout, a.apiTimeout))
	u, err := a.api.GetUserInfoContext(callCtx, user)
	cancel()
	switch code := slackErrorCode(err); {
	case err == nil:
		p := personOf(u)
		a.people.cache.Put(user, p, personTTL)
		return p
	case ctx.Err() != nil:
		return person{} // stopping: nothing to remember
	case code == "missing_scope":
		if a.people.noScope.CompareAndSwap(false, true) {
			a.log.Warn("slack app has no users:read scope: senders are known by their ids only, and nobody can be told from a guest, so DMs and channels read none of the team's memory (reinstall the app with users:read)", "err", err)
		}
	case code == "user_not_found":
		// Not a person of the workspace, by Slack's own answer.
		a.people.cache.Put(user, person{}, personTTL)
	default:
		a.log.Info("slack cannot describe a person; until it can, they count as a guest", "user", user, "err", err)
		a.people.cache.Put(user, person{}, personFailTTL)
	}
	return person{}
}

// standing is who user is to the workspace team.
func (a *Adapter) standing(ctx context.Context, team, user string) standing {
	return a.person(ctx, user).standingIn(team)
}

// senderName returns the name Slack shows for user, "" when it is not
// known.
func (a *Adapter) senderName(ctx context.Context, user string) string {
	return a.person(ctx, user).name
}

// outsiderAmong reports whether one of members (but skip, the bot itself,
// and deleted accounts) is not a full member of the workspace team, or
// cannot be told from one.
func (a *Adapter) outsiderAmong(ctx context.Context, team string, members []string, skip string) bool {
	members = slices.DeleteFunc(slices.Clone(members), func(id string) bool { return id == skip || id == "" })
	unknown := 0
	for _, id := range members {
		if _, ok := a.people.cache.Get(id); !ok {
			unknown++
		}
	}
	if unknown > listAbove {
		a.listPeople(ctx, team)
	}
	lookups := 0
	for _, id := range members {
		p, ok := a.people.cache.Get(id)
		if !ok {
			if lookups == maxLookups || a.people.noScope.Load() {
				return true // cannot tell: the narrower audience
			}
			lookups++
			p = a.person(ctx, id)
		}
		if !p.deleted && p.standingIn(team) != standingMember {
			return true
		}
	}
	return false
}

// listPeople describes every person of the workspace team at once
// (users.list), at most once per personTTL; what it could not list is
// asked of users.info one by one.
func (a *Adapter) listPeople(ctx context.Context, team string) {
	pp := a.people
	pp.mu.Lock()
	last, done := pp.listed[team]
	if done && a.now().Sub(last) < personTTL || pp.noScope.Load() {
		pp.mu.Unlock()
		return
	}
	pp.listed[team] = a.now()
	pp.mu.Unlock()
	callCtx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	users, err := a.api.GetUsersContext(callCtx, slack.GetUsersOptionTeamID(team), slack.GetUsersOptionLimit(listPage), slack.GetUsersOptionIncludeLocale(false))
	for i := range users {
		a.people.cache.Put(users[i].ID, personOf(&users[i]), personTTL)
	}
	if err != nil && ctx.Err() == nil {
		a.log.Info("slack cannot list the workspace's people; looking them up one by one", "team", team, "listed", len(users), "err", err)
	}
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

package slack

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/channels"
)

// rawMessage is the part of an app_mention or message event the filter
// needs, free of slack-go types.
type rawMessage struct {
	mention     bool // an app_mention event
	channel     string
	channelType string // message events: im, channel, group, mpim
	user, botID string
	subtype     string
	text        string
	ts          string
	threadTS    string
	edited      bool
	files       []fileRef
}

// verdict is what the filter decided about one event.
type verdict int

const (
	verdictAccept verdict = iota
	verdictOwn
	verdictSubtype
	verdictDuplicate
	verdictNotAllowedDM // sender not in allowFrom, in a DM: tell them once
	verdictNotAllowed   // sender not in allowFrom, in a channel: stay silent
	verdictChannel      // channel not in allowChannels
	verdictPolicy       // group policy says no
	verdictEmpty
)

func (v verdict) String() string {
	return [...]string{"accept", "own", "subtype", "duplicate", "not_allowed_dm", "not_allowed", "channel", "policy", "empty"}[v]
}

// plainSubtypes are message subtypes that are still a person's post.
var plainSubtypes = map[string]bool{"": true, "file_share": true, "thread_broadcast": true}

var unescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// filter applies the inbound rules in the contract's order: own messages,
// non-post subtypes and edits, duplicates (same channel+ts: Slack retries,
// message + app_mention for one post, replays), allowFrom, allowChannels,
// the group policy. On verdictAccept and verdictNotAllowedDM the Inbound is
// filled in (for the latter, only to address the reply).
func (a *Adapter) filter(m rawMessage, botUserID, botID string, mentionRE *regexp.Regexp) (channels.Inbound, verdict) {
	if (botUserID != "" && m.user == botUserID) || (botID != "" && m.botID == botID) {
		return channels.Inbound{}, verdictOwn
	}
	if !plainSubtypes[m.subtype] || m.edited || m.user == "" || m.ts == "" || m.channel == "" {
		return channels.Inbound{}, verdictSubtype
	}
	if !a.seen.Add(m.channel + "/" + m.ts) {
		return channels.Inbound{}, verdictDuplicate
	}
	dm := m.channelType == "im" || strings.HasPrefix(m.channel, "D")
	in := a.inbound(m, dm, mentionRE)
	if len(a.allowFrom) > 0 && !a.allowFrom[m.user] {
		if dm {
			return in, verdictNotAllowedDM
		}
		return channels.Inbound{}, verdictNotAllowed
	}
	if !dm {
		if len(a.allowChannels) > 0 && !a.allowChannels[m.channel] {
			return channels.Inbound{}, verdictChannel
		}
		mentioned := m.mention || mentions(m.text, botUserID)
		if a.cfg.GroupPolicy == PolicyMention && !mentioned {
			return channels.Inbound{}, verdictPolicy
		}
	}
	if in.Text == "" && len(m.files) == 0 {
		return channels.Inbound{}, verdictEmpty
	}
	return in, verdictAccept
}

// mentions reports whether text contains <@id> or <@id|label>.
func mentions(text, id string) bool {
	return id != "" && (strings.Contains(text, "<@"+id+">") || strings.Contains(text, "<@"+id+"|"))
}

// inbound builds the message the gateway sees: mention stripped, Slack's
// entities decoded, thread and session chosen.
func (a *Adapter) inbound(m rawMessage, dm bool, mentionRE *regexp.Regexp) channels.Inbound {
	text := m.text
	if mentionRE != nil {
		text = mentionRE.ReplaceAllString(text, " ")
	}
	text = unescaper.Replace(strings.TrimSpace(text))
	thread := m.threadTS
	if thread == "" && !dm && a.cfg.ReplyInThread {
		// A top-level channel post opens its own thread, and so its own
		// session; a DM without a thread stays in the DM's session.
		thread = m.ts
	}
	key := Name + ":" + m.channel
	if thread != "" {
		key += ":" + thread
	}
	return channels.Inbound{
		Channel:    Name,
		ChatID:     m.channel,
		ThreadID:   thread,
		SessionKey: key,
		SenderID:   m.user,
		MessageID:  m.ts,
		Text:       text,
		Time:       parseTS(m.ts),
	}
}

// parseTS turns Slack's "1712345678.000100" into a time.
func parseTS(ts string) time.Time {
	secs, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return time.Time{}
	}
	var ns int64
	if frac != "" {
		frac = (frac + "000000000")[:9]
		ns, _ = strconv.ParseInt(frac, 10, 64)
	}
	return time.Unix(s, ns)
}

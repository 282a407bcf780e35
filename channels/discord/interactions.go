package discord

import (
	"encoding/json"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/dreamgate/dreamgate/channels"
)

// A slash command's interaction is answered through its token (the
// webhook of /webhooks/{application}/{token}) for 15 minutes. Once the
// deferral was answered, the token is kept in the reply handles
// (Config.Handles) under the command's MessageID, so that the process
// answering the command — this one after a restart, or another on the
// same store — edits the deferred "thinking…" into the answer and follows
// it up, as the process that deferred it would have. The handles count
// the parts sent, so a process taking over after the first part follows
// up rather than editing it away.

// keptInteraction is the record of a deferred interaction.
type keptInteraction struct {
	ID        string `json:"id"`
	AppID     string `json:"app_id"`
	Token     string `json:"token"`
	Ephemeral bool   `json:"ephemeral,omitempty"`
}

// keepInteraction keeps it's token once its deferral was answered. When
// the store cannot keep it, this process keeps it in its memory (a
// restart then cannot answer through it), and says so.
func (a *Adapter) keepInteraction(it *interaction) {
	data, err := json.Marshal(keptInteraction{ID: it.i.ID, AppID: it.i.AppID, Token: it.i.Token, Ephemeral: it.ephemeral})
	if err != nil {
		a.log.Warn("discord: cannot record a slash command's interaction", "err", err)
		return
	}
	key, expires := interactionPrefix+it.i.ID, it.created.Add(interactionTTL)
	if err := a.replyHandles().Keep(key, data, expires); err != nil {
		a.log.Warn("discord: the store could not keep a slash command's interaction; only this process can answer through it", "interaction", it.i.ID, "err", err)
		_ = a.localHandles.Keep(key, data, expires)
	}
}

// keptInteraction returns the interaction kept under key, deferred by
// another process or before a restart (nil when none is kept or it
// expired): its deferral was answered, and its first part was sent when
// a part of the answer was.
func (a *Adapter) keptInteraction(key string) *interaction {
	now := a.now()
	for _, h := range []channels.ReplyHandles{a.replyHandles(), &a.localHandles} {
		data, uses, ok, err := h.Handle(key, now)
		if err != nil {
			a.log.Warn("discord: cannot read a slash command's interaction from the store", "err", err)
			continue
		}
		if !ok {
			continue
		}
		var k keptInteraction
		if err := json.Unmarshal(data, &k); err != nil {
			a.log.Warn("discord: a slash command's interaction record does not parse", "err", err)
			return nil
		}
		it := &interaction{
			i:         &discordgo.Interaction{ID: k.ID, AppID: k.AppID, Token: k.Token, Type: discordgo.InteractionApplicationCommand},
			created:   now,
			acked:     make(chan struct{}),
			ephemeral: k.Ephemeral,
		}
		close(it.acked)
		it.originalSet = uses > 0
		return it
	}
	return nil
}

// usedInteraction books a part of it's answer as sent, for a process that
// answers it later.
func (a *Adapter) usedInteraction(it *interaction) {
	key, now := interactionPrefix+it.i.ID, a.now()
	for _, h := range []channels.ReplyHandles{a.replyHandles(), &a.localHandles} {
		if ok, err := h.Use(key, maxParts, now); err != nil {
			a.log.Warn("discord: cannot book a part of a slash command's answer in the store", "err", err)
		} else if ok {
			return
		}
	}
}

// maxParts bounds the parts of an answer an interaction's count books:
// more than any answer has.
const maxParts = 1 << 20

// replyHandles are Config.Handles, or this process's memory without them.
func (a *Adapter) replyHandles() channels.ReplyHandles {
	if a.handles != nil {
		return a.handles
	}
	return &a.localHandles
}

// now is the clock interactions expire by.
func (a *Adapter) now() time.Time {
	if a.tune.now != nil {
		return a.tune.now()
	}
	return time.Now()
}

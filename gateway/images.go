package gateway

import (
	"fmt"
	"strings"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
)

// Images sent with a message (Inbound.Images, from an adapter configured
// for a model that reads images) are shown to the model during that
// message's turn only: every model call of the turn carries them as image
// parts on the user message. The session records a marker naming each
// image, never its bytes, so later turns, replays after a restart and the
// archive see only the marker — and the marker says so, so that nothing
// the model reads claims it can still see an image it cannot (seed 003).

// userMessage is the session record of in: its text, then one marker line
// per image. seen says whether the model is shown the images with it.
func userMessage(in channels.Inbound, seen bool) llm.Message {
	m := llm.Message{Role: llm.RoleUser, Content: in.Text, Time: in.Time}
	if len(in.Images) == 0 {
		return m
	}
	lines := make([]string, 0, len(in.Images)+1)
	if in.Text != "" {
		lines = append(lines, in.Text, "")
	}
	for _, img := range in.Images {
		if seen {
			lines = append(lines, fmt.Sprintf("[image %s (%s, %s): attached to this message; visible only while answering it, not kept]",
				img.Name, strings.ToUpper(strings.TrimPrefix(img.MIME, "image/")), formatBytes(len(img.Data))))
		} else {
			lines = append(lines, fmt.Sprintf("[image %s: sent with this message, never shown to the assistant]", img.Name))
		}
	}
	m.Content = strings.Join(lines, "\n")
	return m
}

// showImages puts in's images on the turn's user message, the last of msgs
// (a copy: the session's own record stays without them).
func showImages(msgs []llm.Message, in channels.Inbound) {
	if len(in.Images) == 0 || len(msgs) == 0 || msgs[len(msgs)-1].Role != llm.RoleUser {
		return
	}
	imgs := make([]llm.Image, len(in.Images))
	for i, img := range in.Images {
		imgs[i] = llm.Image{MIME: img.MIME, Data: img.Data}
	}
	msgs[len(msgs)-1].Images = imgs
}

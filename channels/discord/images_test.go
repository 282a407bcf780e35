package discord

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// With Images on, image attachments are downloaded from the CDN into
// Inbound.Images (an image-only message too, which is delivered) and leave
// no marker; an image over the cap, one in a format models refuse and one
// whose bytes are no image are named. Images off keeps today's marker and
// downloads nothing.
func TestImageAttachments(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR pixels")
	gif := []byte("GIF89a tiny")
	h := newHarness(t, harnessOpts{cfg: Config{Images: true}})

	id := h.inject(fakediscord.Message{ChannelID: "C1", Content: "<@BOT1>", Attachments: []fakediscord.File{
		{Name: "chart.png", ContentType: "image/png", Data: png},
	}})
	in := h.expectNext(id)
	if in.Text != "" || len(in.Images) != 1 {
		t.Fatalf("image-only message: text %q, %d images", in.Text, len(in.Images))
	}
	if img := in.Images[0]; img.Name != "chart.png" || img.MIME != "image/png" || !bytes.Equal(img.Data, png) {
		t.Errorf("image = %s %s %q", img.Name, img.MIME, img.Data)
	}

	id = h.inject(fakediscord.Message{ChannelID: "C1", Content: "<@BOT1> compare", Attachments: []fakediscord.File{
		{Name: "a.gif", ContentType: "image/gif", Data: gif},
		{Name: "huge.png", ContentType: "image/png", Data: png, Size: 6 << 20},
		{Name: "scan.tiff", ContentType: "image/tiff", Data: []byte("II*\x00")},
		{Name: "fake.jpg", ContentType: "image/jpeg", Data: []byte("<html>not found</html>")},
	}})
	in = h.expectNext(id)
	if len(in.Images) != 1 || in.Images[0].Name != "a.gif" || in.Images[0].MIME != "image/gif" {
		t.Errorf("images = %+v, want a.gif only", in.Images)
	}
	want := "compare\n\n" +
		"[image: huge.png (6.0 MB; not shown: larger than the 5.0 MB limit for images)]\n" +
		"[image: scan.tiff (not shown: only PNG, JPEG, GIF and WebP images are)]\n" +
		"[image: fake.jpg (not shown: only PNG, JPEG, GIF and WebP images are)]"
	if in.Text != want {
		t.Errorf("text = %q\nwant   %q", in.Text, want)
	}

	off := newHarness(t, harnessOpts{})
	id = off.inject(fakediscord.Message{ChannelID: "C1", Content: "<@BOT1>", Attachments: []fakediscord.File{
		{Name: "chart.png", ContentType: "image/png", Data: png},
	}})
	if in := off.expectNext(id); len(in.Images) != 0 || in.Text != "[image: chart.png (not shown: this assistant cannot see images)]" {
		t.Errorf("images off: text %q, %d images", in.Text, len(in.Images))
	}
	for _, r := range off.fake.Requests() {
		if strings.HasPrefix(r.Path, "/attachments/") {
			t.Errorf("images off: downloaded %s", r.Path)
		}
	}
}

package slack

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

var (
	pngBytes  = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR pixels")
	jpegBytes = []byte("\xff\xd8\xff\xe0\x00\x10JFIF photo")
)

// With Images on, a post's images are downloaded with the bot token into
// Inbound.Images (an image-only post too) and leave no marker in the text;
// an image over the cap, one in a format models refuse and a download that
// is not an image are named instead. Images off keeps today's marker.
func TestImagesDownloadedForAVisionModel(t *testing.T) {
	h := startHarness(t, harnessOpts{cfg: func(c *Config) { c.Images = true }})
	h.inject(fakeslack.Event{Channel: "D1", User: "U1", Subtype: "file_share", Files: []fakeslack.File{
		{ID: "F1", Name: "chart.png", Mimetype: "image/png", Filetype: "png", Content: pngBytes},
	}})
	in := h.sink.next(t)
	if in.Text != "" || len(in.Images) != 1 {
		t.Fatalf("image-only post: text %q, %d images", in.Text, len(in.Images))
	}
	if img := in.Images[0]; img.Name != "chart.png" || img.MIME != "image/png" || !bytes.Equal(img.Data, pngBytes) {
		t.Errorf("image = %s %s %q", img.Name, img.MIME, img.Data)
	}

	h.inject(fakeslack.Event{Channel: "D1", User: "U1", Subtype: "file_share", Text: "compare", Files: []fakeslack.File{
		{ID: "F2", Name: "photo.jpg", Mimetype: "image/jpeg", Filetype: "jpg", Content: jpegBytes},
		{ID: "F3", Name: "huge.png", Mimetype: "image/png", Filetype: "png", Content: pngBytes, Size: 6 << 20},
		{ID: "F4", Name: "scan.tiff", Mimetype: "image/tiff", Filetype: "tiff", Content: []byte("II*\x00")},
		{ID: "F5", Name: "notes.txt", Mimetype: "text/plain", Filetype: "text", Content: []byte("hello")},
	}})
	in = h.sink.next(t)
	if len(in.Images) != 1 || in.Images[0].Name != "photo.jpg" || in.Images[0].MIME != "image/jpeg" {
		t.Errorf("images = %+v, want photo.jpg only", in.Images)
	}
	for _, want := range []string{
		"compare\n\n",
		"[image huge.png: not shown — 6 MiB is over the 5 MiB limit for images]",
		"[image scan.tiff (image/tiff): not shown — only PNG, JPEG, GIF and WebP images are]",
		"File notes.txt:\n```\nhello\n```",
	} {
		if !strings.Contains(in.Text, want) {
			t.Errorf("post text lacks %q:\n%s", want, in.Text)
		}
	}
	if strings.Contains(in.Text, "photo.jpg") {
		t.Errorf("a downloaded image is also named in the text:\n%s", in.Text)
	}

	// Without files:read Slack answers with its sign-in page: not an image.
	h2 := startHarness(t, harnessOpts{cfg: func(c *Config) { c.Images = true }, fake: fakeslack.Config{NoFilesScope: true}})
	h2.inject(fakeslack.Event{Channel: "D1", User: "U1", Subtype: "file_share", Files: []fakeslack.File{
		{ID: "F1", Name: "chart.png", Mimetype: "image/png", Filetype: "png", Content: pngBytes},
	}})
	if in := h2.sink.next(t); len(in.Images) != 0 || in.Text != "[image chart.png: could not be downloaded]" {
		t.Errorf("without the scope: text %q, %d images", in.Text, len(in.Images))
	}

	// Off (the default): named, not downloaded.
	h3 := startHarness(t, harnessOpts{})
	h3.inject(fakeslack.Event{Channel: "D1", User: "U1", Subtype: "file_share", Files: []fakeslack.File{
		{ID: "F1", Name: "chart.png", Mimetype: "image/png", Filetype: "png", Content: pngBytes},
	}})
	if in := h3.sink.next(t); len(in.Images) != 0 || in.Text != "[image chart.png: not shown — this model does not read images]" {
		t.Errorf("images off: text %q, %d images", in.Text, len(in.Images))
	}
	if n := h3.fake.Downloads(); n != 0 {
		t.Errorf("images off: %d downloads", n)
	}
}

package slack

import (
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// Mentioned inside a thread it has not seen, the bot hands the thread's
// earlier messages over as Context, oldest first, names resolved, its own
// marked; later posts and the mention itself are not among them, and the
// next mention in the thread reads nothing again.
func TestThreadContextForANewThread(t *testing.T) {
	h := startHarness(t, harnessOpts{fake: fakeslack.Config{Users: map[string]string{"U1": "Ana", "U2": "Bo"}}})
	msgs := h.fake.Seed(
		fakeslack.Message{Channel: "C1", User: "U2", Text: "the deploy failed &amp; nobody knows why"},
	)
	parent := msgs[0].TS
	h.fake.Seed(
		fakeslack.Message{Channel: "C1", User: "U1", Text: "same here", ThreadTS: parent},
		fakeslack.Message{Channel: "C1", User: h.fake.BotUserID(), BotID: h.fake.BotID(), Text: "an earlier answer", ThreadTS: parent},
		fakeslack.Message{Channel: "C1", User: "U9", Text: "", ThreadTS: parent}, // empty: skipped
	)
	mentionTS := h.fake.NewTS()
	h.fake.Seed(fakeslack.Message{Channel: "C1", User: "U1", Text: "later, not context", ThreadTS: parent})
	h.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> what happened?", TS: mentionTS, ThreadTS: parent})
	in := h.sink.next(t)
	if in.Text != "what happened?" || in.ThreadID != parent {
		t.Fatalf("inbound = %+v", in)
	}
	got := in.Context
	if len(got) != 3 {
		t.Fatalf("context = %+v, want 3 messages", got)
	}
	want := []channels.ContextMessage{
		{SenderName: "Bo", Text: "the deploy failed & nobody knows why"},
		{SenderName: "Ana", Text: "same here"},
		{FromBot: true, Text: "an earlier answer"},
	}
	for i, w := range want {
		g := got[i]
		if g.SenderName != w.SenderName || g.Text != w.Text || g.FromBot != w.FromBot || g.Time.IsZero() {
			t.Errorf("context[%d] = %+v, want %+v", i, g, w)
		}
	}
	h.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> and now?", ThreadTS: parent})
	if in := h.sink.next(t); len(in.Context) != 0 {
		t.Errorf("second mention in the thread carries context %+v", in.Context)
	}
	// A top-level mention opens its own thread: nothing to read.
	h.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> hi"})
	if in := h.sink.next(t); len(in.Context) != 0 {
		t.Errorf("top-level mention carries context %+v", in.Context)
	}
	if n := h.fake.CallCount("conversations.replies"); n != 1 {
		t.Errorf("conversations.replies called %d times, want 1", n)
	}
}

// The thread read is bounded by count and characters, newest kept; a read
// Slack refuses (no history scope) leaves the message without context.
func TestThreadContextBounded(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	parent := h.fake.Seed(fakeslack.Message{Channel: "C1", User: "U2", Text: "start"})[0].TS
	for i := range 100 {
		text := strings.Repeat("word ", 60)
		if i == 99 {
			text = "newest"
		}
		h.fake.Seed(fakeslack.Message{Channel: "C1", User: "U2", Text: text, ThreadTS: parent})
	}
	h.fake.Seed(fakeslack.Message{Channel: "C1", User: "U2", Text: strings.Repeat("x", 5000), ThreadTS: parent})
	h.fake.Seed(fakeslack.Message{Channel: "C1", User: "U2", Text: "last", ThreadTS: parent})
	h.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> sum up", ThreadTS: parent})
	in := h.sink.next(t)
	chars := 0
	for _, m := range in.Context {
		chars += len(m.Text)
	}
	n := len(in.Context)
	if n == 0 || n > contextMessages || chars > contextChars || in.Context[n-1].Text != "last" || !strings.HasSuffix(in.Context[n-2].Text, "…(cut)") {
		t.Errorf("context: %d messages, %d chars, last %q", n, chars, in.Context[n-1].Text)
	}

	h2 := startHarness(t, harnessOpts{fake: fakeslack.Config{NoHistoryScope: true}})
	h2.inject(fakeslack.Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> hi", ThreadTS: "1700000000.000001"})
	if in := h2.sink.next(t); in.Text != "hi" || len(in.Context) != 0 {
		t.Errorf("without the scope: %+v", in)
	}
}

// Files shared with a post reach the turn: text fenced under its name
// (also a file-only post, which used to be dropped), an image and a binary
// named with a marker, an oversized file and one Slack hides (files.info)
// handled; the download carries the bot token.
func TestFilesReadIntoTheTurn(t *testing.T) {
	h := startHarness(t, harnessOpts{cfg: func(c *Config) { c.MaxFileBytes = 64 }})
	h.inject(fakeslack.Event{Channel: "D1", User: "U1", Subtype: "file_share", Files: []fakeslack.File{
		{ID: "F1", Name: "notes.txt", Mimetype: "text/plain", Filetype: "text", Content: []byte("line one\n```inner fence```\n")},
	}})
	in := h.sink.next(t)
	want := "File notes.txt:\n````\nline one\n```inner fence```\n````"
	if in.Text != want {
		t.Errorf("file-only post = %q, want %q", in.Text, want)
	}

	h.inject(fakeslack.Event{Channel: "D1", User: "U1", Subtype: "file_share", Text: "look at these", Files: []fakeslack.File{
		{ID: "F2", Name: "report.png", Mimetype: "image/png", Filetype: "png", Content: []byte{0x89, 'P', 'N', 'G'}},
		{ID: "F3", Name: "big.log", Mimetype: "text/plain", Filetype: "text", Content: []byte(strings.Repeat("x", 100))},
		{ID: "F4", Name: "spec.pdf", Mimetype: "application/pdf", Filetype: "pdf", Content: []byte("%PDF")},
		{ID: "F5", Name: "main.go", Mimetype: "text/plain", Filetype: "go", Content: []byte("package main\n"), Hidden: true},
	}})
	in = h.sink.next(t)
	for _, want := range []string{
		"look at these\n\n",
		"[image report.png: not shown — this model does not read images]",
		"[file big.log: not read — 100 B is over the 64 B limit]",
		"[file spec.pdf (application/pdf): not read — only text files are]",
		"File main.go:\n```go\npackage main\n```",
	} {
		if !strings.Contains(in.Text, want) {
			t.Errorf("post text lacks %q:\n%s", want, in.Text)
		}
	}
	if n := h.fake.CallCount("files.info"); n != 1 {
		t.Errorf("files.info called %d times, want 1 (for the hidden file)", n)
	}
	if n := h.fake.Downloads(); n != 2 {
		t.Errorf("%d downloads, want 2 (the text files within the limit)", n)
	}
}

// Without files:read the file is named, not guessed at, and the post is
// still answered.
func TestFilesWithoutScope(t *testing.T) {
	h := startHarness(t, harnessOpts{fake: fakeslack.Config{NoFilesScope: true}})
	h.inject(fakeslack.Event{Channel: "D1", User: "U1", Subtype: "file_share", Files: []fakeslack.File{
		{ID: "F1", Name: "a.txt", Mimetype: "text/plain", Content: []byte("hi")},
		{ID: "F2", Hidden: true},
	}})
	in := h.sink.next(t)
	for _, want := range []string{"[file a.txt: could not be downloaded]", "[file F2: could not be read"} {
		if !strings.Contains(in.Text, want) {
			t.Errorf("post text lacks %q:\n%s", want, in.Text)
		}
	}
}

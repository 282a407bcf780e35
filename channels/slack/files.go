package slack

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/internal/mdfence"
)

// Files shared with a post reach the turn as text: a text-like file is
// downloaded (url_private, bot token, files:read) and fenced under its
// name; an image, when Config.Images is on, is downloaded into
// Inbound.Images; anything else is named with a marker that says why it is
// not there, so the model neither guesses at it nor ignores it.

const (
	// maxFilesPerPost bounds the files read from one post.
	maxFilesPerPost = 10
	// fileTimeout bounds reading the files of one post.
	fileTimeout = 20 * time.Second
)

// fileRef is the part of a Slack file the adapter needs, free of
// slack-go types.
type fileRef struct {
	id, name, mimetype, filetype string
	size                         int64
	url                          string // url_private_download or url_private; "" = ask files.info
}

func fileRefs(files []slack.File) []fileRef {
	out := make([]fileRef, 0, len(files))
	for _, f := range files {
		u := f.URLPrivateDownload
		if u == "" {
			u = f.URLPrivate
		}
		if f.FileAccess == "check_file_info" {
			u = ""
		}
		out = append(out, fileRef{id: f.ID, name: f.Name, mimetype: f.Mimetype, filetype: f.Filetype, size: int64(f.Size), url: u})
	}
	return out
}

// textFiletypes are Slack filetypes (and name extensions) of text worth
// reading although their mimetype may say otherwise.
var textFiletypes = map[string]bool{
	"text": true, "txt": true, "markdown": true, "md": true, "post": false, "csv": true, "tsv": true,
	"json": true, "yaml": true, "yml": true, "xml": true, "html": true, "css": true, "javascript": true,
	"js": true, "ts": true, "typescript": true, "go": true, "python": true, "py": true, "rust": true,
	"rs": true, "java": true, "kotlin": true, "c": true, "cpp": true, "h": true, "csharp": true,
	"ruby": true, "rb": true, "php": true, "shell": true, "sh": true, "bash": true, "sql": true,
	"diff": true, "patch": true, "log": true, "toml": true, "ini": true, "dockerfile": true,
	"makefile": true, "swift": true, "scala": true, "lua": true, "perl": true, "r": true, "tex": true,
}

// isText reports whether f is worth downloading as text.
func (f fileRef) isText() bool {
	mt, _, _ := mime.ParseMediaType(f.mimetype)
	switch {
	case strings.HasPrefix(mt, "text/"):
		return true
	case mt == "application/json", mt == "application/xml", mt == "application/x-yaml", mt == "application/yaml",
		mt == "application/javascript", mt == "application/x-sh", mt == "application/sql", mt == "application/toml":
		return true
	}
	ext := strings.TrimPrefix(strings.ToLower(path.Ext(f.name)), ".")
	return textFiletypes[strings.ToLower(f.filetype)] || textFiletypes[ext]
}

func (f fileRef) isImage() bool {
	return strings.HasPrefix(f.mimetype, "image/") || f.filetype == "png" || f.filetype == "jpg" || f.filetype == "gif"
}

// readFiles renders the files of one post for the turn, in order, within
// one deadline: every delivery of the adapter waits behind them. Images
// read for the model come back apart from the text.
func (a *Adapter) readFiles(ctx context.Context, files []fileRef) (string, []channels.Image) {
	ctx, cancel := context.WithTimeout(ctx, min(fileTimeout, a.apiTimeout))
	defer cancel()
	var parts []string
	var images []channels.Image
	for i, f := range files {
		if i == maxFilesPerPost {
			parts = append(parts, fmt.Sprintf("[%d more files: not read — at most %d per message]", len(files)-i, maxFilesPerPost))
			break
		}
		text, img := a.readFile(ctx, f)
		if img != nil {
			images = append(images, *img)
			continue
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, "\n\n"), images
}

// readFile renders one file as text, or returns it as an image for the
// model.
func (a *Adapter) readFile(ctx context.Context, f fileRef) (string, *channels.Image) {
	if f.url == "" || f.name == "" {
		info, err := a.fileInfo(ctx, f.id)
		if err != nil {
			a.log.Warn("slack files.info failed", "file", f.id, "err", err)
			return fmt.Sprintf("[file %s: could not be read — Slack did not give the bot access to it]", orID(f)), nil
		}
		f = info
	}
	name := orID(f)
	switch {
	case f.isImage() && a.cfg.Images:
		return a.readImage(ctx, f)
	case f.isImage():
		return fmt.Sprintf("[image %s: not shown — this model does not read images]", name), nil
	case !f.isText():
		return fmt.Sprintf("[file %s (%s): not read — only text files are]", name, kindOf(f)), nil
	case a.cfg.MaxFileBytes < 0:
		return fmt.Sprintf("[file %s: not read — reading files is off in this gateway]", name), nil
	case f.size > a.cfg.MaxFileBytes:
		return fmt.Sprintf("[file %s: not read — %s is over the %s limit]", name, byteSize(f.size), byteSize(a.cfg.MaxFileBytes)), nil
	}
	body, err := a.download(ctx, f.url, a.cfg.MaxFileBytes)
	switch {
	case errors.Is(err, errTooLarge):
		return fmt.Sprintf("[file %s: not read — it is over the %s limit]", name, byteSize(a.cfg.MaxFileBytes)), nil
	case err != nil:
		a.log.Warn("slack file download failed", "file", f.id, "err", err)
		return fmt.Sprintf("[file %s: could not be downloaded]", name), nil
	case !utf8.Valid(body):
		return fmt.Sprintf("[file %s: not read — it is not UTF-8 text]", name), nil
	}
	return fmt.Sprintf("File %s:\n%s", name, fence(string(body), fenceInfo(f))), nil
}

// readImage downloads an image for the model, or names it with the
// reason it is not shown. Its type is judged from the bytes: without
// files:read Slack answers a download with an HTML sign-in page.
func (a *Adapter) readImage(ctx context.Context, f fileRef) (string, *channels.Image) {
	name := orID(f)
	switch {
	case a.cfg.MaxFileBytes < 0:
		return fmt.Sprintf("[image %s: not shown — reading files is off in this gateway]", name), nil
	case f.size > channels.MaxImageBytes:
		return fmt.Sprintf("[image %s: not shown — %s is over the %s limit for images]", name, byteSize(f.size), byteSize(channels.MaxImageBytes)), nil
	}
	body, err := a.download(ctx, f.url, channels.MaxImageBytes)
	switch {
	case errors.Is(err, errTooLarge):
		return fmt.Sprintf("[image %s: not shown — it is over the %s limit for images]", name, byteSize(channels.MaxImageBytes)), nil
	case err != nil:
		a.log.Warn("slack image download failed", "file", f.id, "err", err)
		return fmt.Sprintf("[image %s: could not be downloaded]", name), nil
	}
	mt, ok := channels.ImageType(body)
	switch {
	case !ok && channels.IsImageType(declaredType(f)):
		// Slack said it is such an image, so what came back is something
		// else (a sign-in page).
		a.log.Warn("slack image download returned no image", "file", f.id, "bytes", len(body))
		return fmt.Sprintf("[image %s: could not be downloaded]", name), nil
	case !ok:
		return fmt.Sprintf("[image %s (%s): not shown — only PNG, JPEG, GIF and WebP images are]", name, kindOf(f)), nil
	}
	return "", &channels.Image{Name: name, MIME: mt, Data: body}
}

func (a *Adapter) fileInfo(ctx context.Context, id string) (fileRef, error) {
	info, _, _, err := a.api.GetFileInfoContext(ctx, id, 0, 0)
	if err != nil {
		return fileRef{}, fmt.Errorf("files.info %s: %w", id, err)
	}
	refs := fileRefs([]slack.File{*info})
	return refs[0], nil
}

var errTooLarge = errors.New("file over the size limit")

// download fetches a url_private with the bot token (slack-go sends it
// only to Slack's hosts or the configured API host), refusing to read
// past limit bytes.
func (a *Adapter) download(ctx context.Context, url string, limit int64) ([]byte, error) {
	w := &capWriter{max: limit}
	if err := a.api.GetFileContext(ctx, url, w); err != nil {
		if w.over {
			return nil, errTooLarge
		}
		return nil, fmt.Errorf("download file: %w", err)
	}
	return w.buf, nil
}

// capWriter keeps at most max bytes and fails past them.
type capWriter struct {
	buf  []byte
	max  int64
	over bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	if int64(len(w.buf)+len(p)) > w.max {
		w.over = true
		return 0, errTooLarge
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// fence wraps text in a code fence longer than any backtick run in it, so
// the file cannot close it early.
func fence(text, info string) string {
	f := mdfence.For(text)
	return f + info + "\n" + strings.TrimRight(text, "\n") + "\n" + f
}

func fenceInfo(f fileRef) string {
	if t := strings.ToLower(f.filetype); t != "" && t != "text" && textFiletypes[t] {
		return t
	}
	return ""
}

// declaredType is the MIME type Slack gives f.
func declaredType(f fileRef) string {
	mt, _, _ := mime.ParseMediaType(f.mimetype)
	return mt
}

func orID(f fileRef) string {
	if f.name != "" {
		return f.name
	}
	return f.id
}

func kindOf(f fileRef) string {
	if f.mimetype != "" {
		return f.mimetype
	}
	if f.filetype != "" {
		return f.filetype
	}
	return "unknown type"
}

// byteSize renders n as people read it: 900 B, 256 KiB, 3.2 MiB.
func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.4g KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.2g MiB", float64(n)/(1<<20))
	}
}

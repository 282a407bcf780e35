package discord

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/internal/mdfence"
)

// DefaultMaxFileBytes is the default cap on a text attachment read into a
// turn.
const DefaultMaxFileBytes = 256 << 10

// maxFilesPerMessage bounds the attachments of one message that are read;
// Discord allows 10.
const maxFilesPerMessage = 10

// textExtensions are file names read as text whatever content type Discord
// guessed (it often sends none, or application/octet-stream, for code).
var textExtensions = map[string]bool{
	".txt": true, ".md": true, ".markdown": true, ".rst": true, ".log": true, ".csv": true, ".tsv": true,
	".json": true, ".jsonl": true, ".yaml": true, ".yml": true, ".toml": true, ".ini": true, ".cfg": true,
	".conf": true, ".env": true, ".xml": true, ".html": true, ".htm": true, ".css": true, ".svg": true,
	".go": true, ".py": true, ".js": true, ".mjs": true, ".ts": true, ".tsx": true, ".jsx": true,
	".rs": true, ".java": true, ".kt": true, ".c": true, ".h": true, ".cc": true, ".cpp": true, ".hpp": true,
	".cs": true, ".rb": true, ".php": true, ".swift": true, ".sh": true, ".bash": true, ".zsh": true,
	".ps1": true, ".sql": true, ".lua": true, ".pl": true, ".r": true, ".scala": true, ".diff": true,
	".patch": true, ".tex": true, ".proto": true, ".graphql": true, ".dockerfile": true, ".mod": true, ".sum": true,
}

// textTypes are content types read as text besides text/*.
var textTypes = map[string]bool{
	"application/json": true, "application/xml": true, "application/yaml": true, "application/x-yaml": true,
	"application/toml": true, "application/javascript": true, "application/x-sh": true, "application/sql": true,
	"application/x-ndjson": true, "image/svg+xml": true,
}

// attachmentKind sorts an attachment: "text" is read into the turn,
// "image" and "file" are only named.
func attachmentKind(at *discordgo.MessageAttachment) string {
	ct, _, _ := mime.ParseMediaType(at.ContentType)
	ext := strings.ToLower(path.Ext(at.Filename))
	switch {
	case strings.HasPrefix(ct, "text/") || textTypes[ct] || textExtensions[ext]:
		return "text"
	case strings.HasPrefix(ct, "image/"):
		return "image"
	}
	return "file"
}

// attachmentsText renders a message's attachments for the turn: text files
// as fenced blocks with their name (up to maxFileBytes each), other files
// as one clear line each, so the model knows they were there and that it
// cannot see them. Images are such a line too, unless the adapter reads
// them for the model (Config.Images): then they come back apart.
func (a *Adapter) attachmentsText(ctx context.Context, atts []*discordgo.MessageAttachment) (string, []channels.Image) {
	var b strings.Builder
	var images []channels.Image
	for i, at := range atts {
		if at == nil {
			continue
		}
		if i < maxFilesPerMessage && a.images && attachmentKind(at) == "image" {
			line, img := a.readImage(ctx, at)
			if img != nil {
				images = append(images, *img)
				continue
			}
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(line)
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		name := at.Filename
		if i >= maxFilesPerMessage {
			fmt.Fprintf(&b, "[attachment: %s (not read: too many files in one message)]", name)
			continue
		}
		switch attachmentKind(at) {
		case "image":
			fmt.Fprintf(&b, "[image: %s (not shown: this assistant cannot see images)]", name)
			continue
		case "file":
			fmt.Fprintf(&b, "[file: %s (%s, binary; not read)]", name, sizeText(at.Size))
			continue
		}
		if at.Size > a.maxFileBytes {
			fmt.Fprintf(&b, "[file: %s (%s; not read: larger than the %s limit)]", name, sizeText(at.Size), sizeText(a.maxFileBytes))
			continue
		}
		data, err := a.download(ctx, at.URL, a.maxFileBytes)
		switch {
		case err != nil:
			a.log.Warn("discord: attachment download failed", "file_len", at.Size, "err", err)
			fmt.Fprintf(&b, "[file: %s (could not be downloaded)]", name)
		case len(data) > a.maxFileBytes:
			fmt.Fprintf(&b, "[file: %s (not read: larger than the %s limit)]", name, sizeText(a.maxFileBytes))
		case !utf8.Valid(data) || strings.ContainsRune(string(data), 0):
			fmt.Fprintf(&b, "[file: %s (%s, binary; not read)]", name, sizeText(len(data)))
		default:
			text := strings.TrimRight(string(data), "\n")
			fence := mdfence.For(text)
			fmt.Fprintf(&b, "File %s:\n%s%s\n%s\n%s", name, fence, fenceLang(name), text, fence)
		}
	}
	return b.String(), images
}

// readImage downloads an image attachment for the model, or returns the
// line naming it with the reason it is not shown. The type is judged from
// the bytes, not from what Discord guessed.
func (a *Adapter) readImage(ctx context.Context, at *discordgo.MessageAttachment) (string, *channels.Image) {
	name := at.Filename
	if at.Size > channels.MaxImageBytes {
		return fmt.Sprintf("[image: %s (%s; not shown: larger than the %s limit for images)]", name, sizeText(at.Size), sizeText(channels.MaxImageBytes)), nil
	}
	data, err := a.download(ctx, at.URL, channels.MaxImageBytes)
	switch {
	case err != nil:
		a.log.Warn("discord: image download failed", "file_len", at.Size, "err", err)
		return fmt.Sprintf("[image: %s (could not be downloaded)]", name), nil
	case len(data) > channels.MaxImageBytes:
		return fmt.Sprintf("[image: %s (not shown: larger than the %s limit for images)]", name, sizeText(channels.MaxImageBytes)), nil
	}
	mt, ok := channels.ImageType(data)
	if !ok {
		return fmt.Sprintf("[image: %s (not shown: only PNG, JPEG, GIF and WebP images are)]", name), nil
	}
	return "", &channels.Image{Name: name, MIME: mt, Data: data}
}

func fenceLang(name string) string {
	ext := strings.TrimPrefix(strings.ToLower(path.Ext(name)), ".")
	if ext == "txt" || ext == "log" {
		return ""
	}
	return ext
}

func sizeText(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// download fetches an attachment from Discord's CDN, at most limit+1
// bytes. The CDN needs no token, so none is sent.
func (a *Adapter) download(ctx context.Context, url string, limit int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, a.tune.downloadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("attachment request: %w", err)
	}
	req.Header.Set("User-Agent", a.session.UserAgent)
	resp, err := a.session.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download attachment: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download attachment: HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("read attachment: %w", err)
	}
	return data, nil
}

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/gateway"
)

// The Slack app manifest declares every gateway command as a slash
// command (but Slack's own /status), so what /help lists on Slack exists in
// an app created from it, and asks for the scopes they need.
func TestSlackManifestDeclaresTheCommands(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "channels", "slack", "manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	manifest := string(b)
	for _, c := range gateway.Commands() {
		decl := "- command: /" + c.Name + "\n"
		if c.Name == "status" {
			if strings.Contains(manifest, decl) {
				t.Error("the manifest declares /status, which is Slack's own")
			}
			continue
		}
		if !strings.Contains(manifest, decl) {
			t.Errorf("the manifest lacks %q", strings.TrimSpace(decl))
		}
	}
	for _, scope := range []string{"- commands", "- files:read"} {
		if !strings.Contains(manifest, scope) {
			t.Errorf("the manifest lacks the scope %q", scope)
		}
	}
}

// slackManifestEvents reads the bot events the Slack app manifest
// subscribes to (settings.event_subscriptions.bot_events), so that the
// end-to-end tests' fake Slack sends the app what Slack would send an
// app made from it. No YAML library here: the list is read by lines.
func slackManifestEvents(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "channels", "slack", "manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	in := false
	for line := range strings.SplitSeq(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "bot_events:":
			in = true
		case !in || trimmed == "" || strings.HasPrefix(trimmed, "#"):
		case strings.HasPrefix(trimmed, "- "):
			events = append(events, strings.TrimSpace(strings.TrimPrefix(trimmed, "- ")))
		default:
			in = false
		}
	}
	if len(events) == 0 {
		t.Fatal("the manifest subscribes to no bot events")
	}
	return events
}

// The manifest subscribes to every event that says a channel's readers
// changed (a channel made private or public is announced only as a
// message, to apps subscribed to message.channels or message.groups), and
// the Slack README says so.
func TestSlackManifestSubscribesToAudienceChanges(t *testing.T) {
	events := slackManifestEvents(t)
	readme, err := os.ReadFile(filepath.Join(repoRoot, "channels", "slack", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"app_mention", "message.im", "message.channels", "message.groups", "channel_shared", "channel_unshared",
		"channel_id_changed", "member_joined_channel", "member_left_channel",
	} {
		if !slices.Contains(events, want) {
			t.Errorf("the manifest does not subscribe to %s", want)
		}
		if !strings.Contains(string(readme), "`"+want+"`") {
			t.Errorf("the Slack README does not name %s", want)
		}
	}
}

package main

import (
	"os"
	"path/filepath"
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

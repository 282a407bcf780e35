package agent

import (
	"errors"
	"testing"

	"github.com/dreamgate/dreamgate/workspace"
)

// The policies follow the workspace layout: chat may write no file the
// program maintains, and Dream may use exactly the memory files.
func TestPoliciesFollowTheWorkspaceLayout(t *testing.T) {
	chat, dream := ChatPolicy(), DreamPolicy()
	for _, rel := range []string{
		workspace.History, workspace.Cursor, workspace.DreamCursor, workspace.DreamLedger, workspace.LegacyDreamState,
		workspace.HistoryLock, workspace.DreamLock, workspace.GitIgnore, workspace.GitDir + "/config",
	} {
		if err := chat.check(rel, true); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("chat may write %s: %v", rel, err)
		}
		if err := dream.check(rel, false); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("Dream may read %s: %v", rel, err)
		}
	}
	for _, rel := range workspace.MemoryFiles() {
		if err := dream.check(rel, true); err != nil {
			t.Errorf("Dream may not edit the memory file %s: %v", rel, err)
		}
		if err := chat.check(rel, false); err != nil {
			t.Errorf("chat may not read the memory file %s: %v", rel, err)
		}
	}
	if err := dream.check(workspace.Agents, false); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("Dream may read %s: %v", workspace.Agents, err)
	}
}

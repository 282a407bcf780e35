package dream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/dreamgate/dreamgate/workspace"
)

// readJSON decodes the JSON file at path into v; ok is false when there is
// no file. what names the file in errors ("dream state").
func readJSON(path, what string, v any) (ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", what, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("decode %s: %w", what, err)
	}
	return true, nil
}

// writeJSON writes v as indented JSON through the workspace's atomic
// write (temp file, fsync, rename), so a kill leaves the old file or the
// new one.
func writeJSON(path, what string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	if err := workspace.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	return nil
}

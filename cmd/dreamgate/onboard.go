package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/dreamgate/dreamgate/llm"
)

// cmdOnboard creates the config file and the workspace, never overwriting.
func cmdOnboard(_ context.Context, e *env, args []string) error {
	fs := e.flags("onboard")
	if err := e.parse(fs, args, 0); err != nil {
		return err
	}
	path := e.configPath
	if path == "" {
		path = defaultConfigPath()
	}
	wrote, err := writeDefaultConfig(path)
	if err != nil {
		return err
	}
	if wrote {
		fmt.Fprintf(e.stdout, "Wrote %s\n", path)
	} else {
		fmt.Fprintf(e.stdout, "Kept %s (it exists)\n", path)
	}
	cfg, err := loadConfig(path, e.getenv)
	if err != nil {
		return err
	}
	created, err := openWorkspace(cfg, e.logger(slog.LevelWarn), true)
	if err != nil {
		return err
	}
	if len(created) > 0 {
		fmt.Fprintf(e.stdout, "Workspace %s: added %s\n", cfg.Workspace, strings.Join(created, ", "))
	} else {
		fmt.Fprintf(e.stdout, "Workspace %s: complete, nothing changed\n", cfg.Workspace)
	}
	fmt.Fprintf(e.stdout, "Model: %s at %s. Edit the config or set OPENAI_BASE_URL, OPENAI_API_KEY and DREAMGATE_MODEL to change it.\n", cfg.LLM.Model, llm.RedactURL(cfg.LLM.BaseURL))
	return nil
}

// writeDefaultConfig writes the defaults to path unless a file is there.
func writeDefaultConfig(path string) (bool, error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("config %s: %w", path, err)
	}
	data, err := json.MarshalIndent(defaultConfig(), "", "  ")
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("create config dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, fmt.Errorf("write config: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return false, fmt.Errorf("write config: %w", err)
	}
	return true, f.Close()
}

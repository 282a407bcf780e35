package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
)

// The operator at the terminal sees every memory scope; `--scope NAME`
// narrows `dream run|log|restore` and `status` to one: a folder name under
// scopes/ (team-slack-t0123abcd, person-slack-t0123abcd-u0456efgh, …), or
// "default" for the workspace root's files.

// defaultScopeName names the default scope on the command line.
const defaultScopeName = "default"

// scopeChoice is what --scope chose: one scope, or every one.
type scopeChoice struct {
	scope audience.Scope
	one   bool
}

// scopeFlag adds --scope to fs.
func scopeFlag(fs *flag.FlagSet) *scopeChoice {
	c := &scopeChoice{}
	fs.Func("scope", `only this memory scope: a folder name under scopes/, or "default" for the workspace root's files (default: every scope)`, func(v string) error {
		if v == defaultScopeName {
			c.scope, c.one = audience.Default, true
			return nil
		}
		s, err := audience.ParseScope(v)
		if err != nil || s == audience.Default {
			return errors.New(`not a memory scope: use a folder name under scopes/ (e.g. team-slack-t0123abcd) or "default"`)
		}
		c.scope, c.one = s, true
		return nil
	})
	return c
}

// scopes is the choice as Dream takes it.
func (c *scopeChoice) scopes() dream.Scopes {
	if !c.one {
		return dream.AllScopes()
	}
	return dream.OnlyScopes(c.scope)
}

// keep is the choice as the memory log takes it: nil for every file.
func (c *scopeChoice) keep() func(path string) bool {
	if !c.one {
		return nil
	}
	return func(p string) bool {
		s, ok := audience.ScopeOfPath(p)
		return ok && s == c.scope
	}
}

// name is the scope as the operator types it.
func (c *scopeChoice) name() string {
	if c.scope == audience.Default {
		return defaultScopeName
	}
	return string(c.scope)
}

// knownScopes lists the scope folders the workspace ws holds, sorted.
func knownScopes(ws string) ([]audience.Scope, error) {
	entries, err := os.ReadDir(filepath.Join(ws, audience.ScopesDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the memory scopes: %w", err)
	}
	var out []audience.Scope
	for _, e := range entries {
		if s, err := audience.ParseScope(e.Name()); err == nil && s != audience.Default && e.IsDir() {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}

package main

import (
	"flag"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/memory"
)

// The operator at the terminal sees every memory scope; `--scope NAME`
// narrows `dream run|log|restore` and `status` to one: a folder name under
// scopes/ (team-slack-t0123abcd, person-slack-t0123abcd-u0456efgh, …), or
// "default" for the workspace root's files.

// scopeChoice is what --scope chose: one scope, or every one.
type scopeChoice struct {
	scope audience.Scope
	one   bool
}

// memoryOf is the workspace's memory as the config keeps it: the one
// place memory.scoped is read; everything else asks the value it makes.
func memoryOf(cfg Config) *memory.Memory {
	return memory.New(memory.NewDisk(cfg.Workspace), !cfg.Memory.Scoped)
}

// scopeFlag adds --scope to fs.
func scopeFlag(fs *flag.FlagSet) *scopeChoice {
	c := &scopeChoice{}
	fs.Func("scope", `only this memory scope: a folder name under scopes/, or "default" for the workspace root's files (default: every scope)`, func(v string) error {
		s, err := memory.ParseName(v)
		if err != nil {
			return err
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
func (c *scopeChoice) name() string { return memory.Name(c.scope) }

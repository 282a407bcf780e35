package dream

import (
	"path"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// A restored deep Dream holds. Undoing a deep Dream brings back to hot
// memory what it had merged or moved to cold memory, usually over the
// scope's budget: without a hold, the next Dream would find the scope too
// big and take the same lines out again at once. So the restore's commit
// carries a size the scope's memory must grow past first (trailer
// Dream-Hold; the ledger's progress.DeepHeld takes it in): its size after
// the restore plus as much again as the restore brought back. Until then
// no deep Dream runs for the scope (not for its size, its age or a
// prompt's request) and a batch retires no aged line. Undoing the restore
// (the deep Dream's change back) ends the hold.

// Hold is a scope whose restored deep Dream holds: its memory (Tokens
// after the restore, as the deep Dream counts them) is not compacted
// again, by a deep Dream or by the aging of a batch, until it grows past
// Until.
type Hold struct {
	Scope  audience.Scope
	Tokens int
	Until  int
}

// undidDeep says the restore commit r undid a deep Dream.
func (d *Dreamer) undidDeep(r gitstore.Commit) bool {
	rev := gitstore.Reverts(r)
	if rev == "" {
		return false
	}
	c, _, err := d.repo.Show(rev, func(string) bool { return false })
	return err == nil && isDeep(c)
}

// scopeTokens is the scope's hot memory in tokens, as a deep Dream counts
// it: its files as they stand, or as changes leave them.
func (d *Dreamer) scopeTokens(s audience.Scope, changes []gitstore.Change) (int, error) {
	files, err := d.readDeepFiles(s)
	if err != nil {
		return 0, err
	}
	for _, f := range files {
		p := f.rel
		if s != DefaultScope {
			p = path.Join(s.Dir(), f.rel)
		}
		for _, ch := range changes {
			if ch.Path == p {
				f.data = ch.Data
				if ch.Remove {
					f.data = nil
				}
				f.f = memline.ParseFile(f.data)
			}
		}
	}
	return d.hotTokens(s, files), nil
}

// stillHeld says a restored deep Dream still holds the scope: its memory
// has not grown past the hold. Once it has, the hold ends.
func (d *Dreamer) stillHeld(h *held, s audience.Scope) (bool, error) {
	until := h.scope(s).DeepHeld
	if until == 0 {
		return false, nil
	}
	n, err := d.scopeTokens(s, nil)
	if err != nil {
		return false, err
	}
	if n <= until {
		return true, nil
	}
	d.log.Info("a restored deep Dream no longer holds: the memory grew past it", "scope", string(s), "tokens", n, "held_until", until)
	if err := h.released(s); err != nil {
		d.log.Warn("dream progress not saved", "scope", string(s), "err", err)
	}
	return false, nil
}

// released ends a scope's hold.
func (h *held) released(s audience.Scope) error {
	return h.update(func(r *record) { r.scope(s).DeepHeld = 0 })
}

package dream

import (
	"fmt"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
)

// A scope's Dream is leased. Several processes on one store (the
// PostgreSQL engine) each run the Dream schedule; a Dream dreams a scope
// only while its process holds the scope's lease, so the lease decides
// who dreams it, and a scope whose lease another process holds is left to
// that one. Every taking of a lease raises its epoch, and the Dream's
// writes of that scope are checked against it by the store: the ledger's
// record is written only if the lease is still at the epoch (in the same
// transaction), and a step is committed to the memory repository only
// after the store confirmed it, so a holder that lost its lease (its
// connection ended while it went on) writes nothing over its successor.
// A process that dies holding a lease lets it go with its connection; the
// next Dream elsewhere takes it (a takeover) and resumes the scope from
// the ledger, its recovery finishing what the dead one's step left.

// ScopeLeases lease scopes' Dreams (the store's leases).
type ScopeLeases interface {
	// Lease takes name without waiting; ok is false when another process
	// holds it; epoch is this holding's.
	Lease(name string) (epoch int64, ok, takenOver bool, err error)
	// Unlease lets name go.
	Unlease(name string) error
	// CheckFence fails with store.ErrLeaseLost unless name's lease is
	// still at epoch.
	CheckFence(name string, epoch int64) error
}

// ShareScopes makes this Dreamer lease each scope it dreams from l. Call
// it before the first Run.
func (d *Dreamer) ShareScopes(l ScopeLeases) { d.leases = l }

// scopeLease names a scope's Dream lease.
func scopeLease(s audience.Scope) string {
	if s == audience.Default {
		return "dream (default scope)"
	}
	return "dream " + string(s)
}

// leaseScope takes scope's lease for the holder, whose ledger writes are
// fenced by it until unleaseScope; false when another process holds it
// (or the store cannot say), and the scope is left alone.
func (d *Dreamer) leaseScope(h *held, scope audience.Scope) bool {
	if d.leases == nil {
		return true
	}
	name := scopeLease(scope)
	epoch, ok, takenOver, err := d.leases.Lease(name)
	switch {
	case err != nil:
		d.log.Warn("dream could not lease a scope; leaving it for the next run", "scope", string(scope), "err", err)
		return false
	case !ok:
		d.log.Info("dream leaves a scope to the process holding its lease", "scope", string(scope))
		return false
	}
	if takenOver {
		d.log.Info("dream took a scope over from a process that died dreaming it; resuming from the ledger", "scope", string(scope), "epoch", epoch)
	}
	h.fence = &store.Fence{Lease: name, Epoch: epoch}
	return true
}

// unleaseScope lets the holder's lease go.
func (d *Dreamer) unleaseScope(h *held) {
	if d.leases == nil || h.fence == nil {
		return
	}
	if err := d.leases.Unlease(h.fence.Lease); err != nil {
		d.log.Warn("dream could not let a scope's lease go; it ends with this process's connection", "lease", h.fence.Lease, "err", err)
	}
	h.fence = nil
}

// checkFence confirms with the store, before a step's commit, that the
// holder still holds its lease.
func (d *Dreamer) checkFence(h *held) error {
	if d.leases == nil || h == nil || h.fence == nil {
		return nil
	}
	if err := d.leases.CheckFence(h.fence.Lease, h.fence.Epoch); err != nil {
		return fmt.Errorf("the step is not committed: %w", err)
	}
	return nil
}

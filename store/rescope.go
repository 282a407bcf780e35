package store

import "github.com/dreamgate/dreamgate/audience"

// ArchiveRescoper is an archive whose entries can be moved to another
// memory scope: the operator's correction (dreamgate memory move) of
// entries archived under an audience that had changed before the gateway
// saw it. Both engines' archives are rescopers.
type ArchiveRescoper interface {
	History
	// Rescope gives the entries pick chooses, among those not in to
	// already, the scope to, keeping everything else of them (cursor,
	// timestamp, content, session, source), in one atomic change, and
	// returns them as they were, oldest first. A scope
	// audience.ParseScope refuses is an error, and nothing changes.
	Rescope(pick func(Entry) bool, to audience.Scope) ([]Entry, error)
}

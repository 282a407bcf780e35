package store

import (
	"bytes"
	"fmt"
	"slices"
)

// ArchiveImporter is an archive that takes entries as they are, cursors
// and all: the destination of a copy between engines (dreamgate migrate
// --to-postgres, dreamgate export, a backup). Both engines' archives are
// importers.
type ArchiveImporter interface {
	History
	// Import adds the entries whose cursors are above the archive's last
	// cursor, in the order given (which must be rising), durably, and
	// skips the others: they were copied before. It returns how many it
	// added; the last cursor becomes the last one added.
	Import(entries []Entry) (added int, err error)
	// RaiseLastCursor makes the last cursor handed out at least n, so
	// that numbering goes on past cursors the source handed out and
	// dropped.
	RaiseLastCursor(n int) error
}

// copyPage is how many entries a copy reads and writes at a time.
const copyPage = 5000

// ArchiveCopy says what CopyArchive did.
type ArchiveCopy struct {
	// Entries were added; Skipped were in the destination already.
	Entries, Skipped int
	// DreamCursor is the Dream cursor the destination now holds, and
	// DreamMoved whether the copy set it.
	DreamCursor int
	DreamMoved  bool
}

// CopyArchive copies every entry of src into dst with its cursor, then
// the last cursor and the Dream cursor. It is the one copy of the archive
// between engines, and it is idempotent: a second run adds nothing and
// moves nothing. An entry dst holds at a cursor is never replaced.
func CopyArchive(dst ArchiveImporter, src History) (ArchiveCopy, error) {
	var r ArchiveCopy
	after := 0
	for {
		page, err := src.Since(after, copyPage)
		if err != nil {
			return r, fmt.Errorf("read the source archive: %w", err)
		}
		if len(page) == 0 {
			break
		}
		added, err := dst.Import(page)
		if err != nil {
			return r, fmt.Errorf("write the archive: %w", err)
		}
		r.Entries += added
		r.Skipped += len(page) - added
		after = page[len(page)-1].Cursor
	}
	last, err := src.LastCursor()
	if err != nil {
		return r, fmt.Errorf("read the source's last cursor: %w", err)
	}
	if err := dst.RaiseLastCursor(last); err != nil {
		return r, fmt.Errorf("write the last cursor: %w", err)
	}
	dc, err := src.DreamCursor()
	if err != nil {
		return r, fmt.Errorf("read the source's Dream cursor: %w", err)
	}
	was, err := dst.DreamCursor()
	if err != nil {
		return r, fmt.Errorf("read the Dream cursor: %w", err)
	}
	r.DreamCursor = dc
	if was != dc {
		if err := dst.SetDreamCursor(dc); err != nil {
			return r, fmt.Errorf("write the Dream cursor: %w", err)
		}
		r.DreamMoved = true
	}
	return r, nil
}

// ConversationCopy says what CopyConversations did.
type ConversationCopy struct {
	// Conversations were made or brought up to date; Lines were added.
	Conversations, Lines int
}

// CopyConversations copies every generation of src into dst: its lines
// dst lacks, its metadata when it differs, and whether it is live. Set-aside
// generations go first, so a key's live one is made last. It is the one
// copy of conversations between engines, and idempotent: a second run
// changes nothing.
func CopyConversations(dst Conversations, src ConversationReader) (ConversationCopy, error) {
	var r ConversationCopy
	all, err := src.List()
	if err != nil {
		return r, fmt.Errorf("list the source's conversations: %w", err)
	}
	slices.SortStableFunc(all, func(a, b Conversation) int {
		switch {
		case a.Live == b.Live:
			return 0
		case a.Live:
			return 1
		}
		return -1
	})
	for _, c := range all {
		changed, n, err := copyConversation(dst, src, c)
		if err != nil {
			return r, fmt.Errorf("copy conversation %s (%s): %w", c.Key, c.ID, err)
		}
		r.Lines += n
		if changed {
			r.Conversations++
		}
	}
	return r, nil
}

func copyConversation(dst Conversations, src ConversationReader, c Conversation) (changed bool, added int, err error) {
	have, ok, err := dst.Generation(c.Key, c.ID)
	if err != nil {
		return false, 0, err
	}
	if ok && have.Lines > c.Lines {
		return false, 0, fmt.Errorf("the destination holds %d messages, the source %d", have.Lines, c.Lines)
	}
	if have.Lines < c.Lines {
		lines, err := src.Lines(c.Key, c.ID, have.Lines, 0)
		if err != nil {
			return false, 0, err
		}
		if len(lines) != c.Lines-have.Lines {
			return false, 0, fmt.Errorf("the source gave %d messages of %d", len(lines), c.Lines-have.Lines)
		}
		if err := dst.Append(c.Key, c.ID, have.Lines, lines); err != nil {
			return false, 0, err
		}
		added, changed = len(lines), true
	}
	if c.Meta != nil && !bytes.Equal(c.Meta, have.Meta) {
		if err := dst.PutMeta(c.Key, c.ID, c.Meta); err != nil {
			return false, 0, err
		}
		changed = true
	}
	if !c.Live && (!ok || have.Live) && (changed || ok) {
		if err := dst.SetAside(c.Key, c.ID); err != nil {
			return false, 0, err
		}
		changed = true
	}
	return changed, added, nil
}

// CopyInbox copies the messages src holds open (accepted, not answered)
// into dst, and returns how many dst did not hold: a restart on dst
// answers them. Answers remembered against a second delivery are not
// copied (they matter for an hour; stop the gateway before a copy). It is
// idempotent.
func CopyInbox(dst, src Inbox) (int, error) {
	open, err := src.Open()
	if err != nil {
		return 0, fmt.Errorf("read the source's inbox: %w", err)
	}
	n := 0
	for _, m := range open {
		known, err := dst.Accept(m)
		if err != nil {
			return n, fmt.Errorf("write the inbox: %w", err)
		}
		if !known {
			n++
		}
	}
	return n, nil
}

// CopyDreamLedger copies Dream's ledger record from src into dst, under
// dst's record lock, and reports whether dst changed (idempotent). The
// record says how far each memory scope has dreamed: without it a copy's
// Dream would start every scope at the common frontier and read some
// entries twice.
func CopyDreamLedger(dst, src DreamLedger) (bool, error) {
	rec, ok, err := src.Record()
	if err != nil || !ok {
		return false, err
	}
	unlock, err := dst.LockRecord()
	if err != nil {
		return false, err
	}
	defer unlock()
	have, _, err := dst.Record()
	if err != nil {
		return false, err
	}
	if bytes.Equal(have, rec) {
		return false, nil
	}
	return true, dst.PutRecord(rec)
}

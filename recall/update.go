package recall

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
)

// ErrBusy is returned by Update when another process (or another call)
// is updating the index: what it adds is there for the next search.
var ErrBusy = errors.New("recall index being updated elsewhere")

// Stats counts what an update added.
type Stats struct {
	History, Messages, Cold int
	// Rebuilt says the index was started afresh (missing, damaged, of
	// another version or another memory setting).
	Rebuilt bool
}

// Limits of what is indexed and how it is written.
const (
	// maxDocBytes caps the text kept of one entry, message or line: the
	// longest archive entries are raw dumps of messages that are indexed
	// one by one anyway.
	maxDocBytes = 16 << 10
	// batchDocs is how many documents one transaction writes: progress is
	// recorded with them, so a killed update resumes where it stopped.
	batchDocs = 5000
	// historyPage is how many archive entries one read takes.
	historyPage = 10000
)

// Update brings the index up to date: the archive entries after the last
// one indexed, the conversations' newly archived messages, and the
// cold-memory files that changed. It creates the index when missing and
// rebuilds it, with a log line, when it is damaged, of another version or
// was built under the other memory setting. One process updates at a
// time (a lock file); another one's call returns ErrBusy at once.
func (x *Index) Update(ctx context.Context) (Stats, error) {
	if err := os.MkdirAll(x.opts.Dir, 0o700); err != nil {
		return Stats{}, fmt.Errorf("create recall dir: %w", err)
	}
	ok, err := x.lock.TryLock()
	if err != nil {
		return Stats{}, fmt.Errorf("lock recall index: %w", err)
	}
	if !ok {
		return Stats{}, ErrBusy
	}
	defer func() { _ = x.lock.Unlock() }()
	x.mu.Lock()
	x.last = x.opts.Now()
	x.mu.Unlock()
	st, err := x.update(ctx)
	if errors.Is(err, errCorrupt) {
		x.logger.Warn("recall index unusable; rebuilding it from the archive, the conversations and cold memory", "err", err)
		if err := x.reset(); err != nil {
			return Stats{}, err
		}
		st, err = x.update(ctx)
		st.Rebuilt = true
	}
	if err == nil {
		x.mu.Lock()
		x.fresh = true
		x.mu.Unlock()
	}
	return st, err
}

// Reset removes the index, once no other process is updating it, so that
// the next search rebuilds it from the archive, the conversations and
// cold memory: for a change an update cannot see, such as archive entries
// moved to another scope (an update reads only entries after the last one
// indexed). A process searching the old index notices the new one at its
// next search.
func (x *Index) Reset(ctx context.Context) error {
	if err := os.MkdirAll(x.opts.Dir, 0o700); err != nil {
		return fmt.Errorf("create recall dir: %w", err)
	}
	ok, err := x.lock.TryLockContext(ctx, 50*time.Millisecond)
	if err != nil || !ok {
		return fmt.Errorf("lock recall index: %w", cmp.Or(err, ctx.Err(), ErrBusy))
	}
	defer func() { _ = x.lock.Unlock() }()
	return x.reset()
}

// reset removes the index's files; the caller holds the lock.
func (x *Index) reset() error {
	x.drop()
	if err := removeDB(x.opts.Dir); err != nil {
		return fmt.Errorf("remove recall index: %w", err)
	}
	return nil
}

func (x *Index) update(ctx context.Context) (Stats, error) {
	var st Stats
	db, err := x.handle(ctx, true)
	if err != nil {
		return st, err
	}
	mode := "scoped"
	if x.shared() {
		mode = "shared"
	}
	was, err := getMeta(ctx, db, "memory")
	if err != nil {
		return st, err
	}
	if was != "" && was != mode {
		return st, fmt.Errorf("%w: built with memory %s, now %s", errCorrupt, was, mode)
	}
	w := &writer{x: x, db: db, ctx: ctx, scopes: map[audience.Scope]*scopeRow{}}
	defer w.rollback()
	if was == "" {
		if err := w.meta("memory", mode); err != nil {
			return st, err
		}
	}
	if st.History, err = x.updateHistory(w); err != nil {
		return st, err
	}
	if st.Messages, err = x.updateConversations(w); err != nil {
		return st, err
	}
	if st.Cold, err = x.updateCold(w); err != nil {
		return st, err
	}
	if err := w.meta("complete", "1"); err != nil {
		return st, err
	}
	return st, w.commit()
}

// updateHistory indexes the archive entries after the last one indexed.
// An archive whose cursors went back (replaced by an older copy) makes the
// index start afresh.
func (x *Index) updateHistory(w *writer) (int, error) {
	if x.opts.History == nil {
		return 0, nil
	}
	v, err := getMeta(w.ctx, w.q(), "history_cursor")
	if err != nil {
		return 0, err
	}
	done, _ := strconv.Atoi(v)
	last, err := x.opts.History.LastCursor()
	if err != nil {
		return 0, fmt.Errorf("read history cursor: %w", err)
	}
	if last < done {
		return 0, fmt.Errorf("%w: the archive's last cursor %d is below the %d indexed (it was replaced)", errCorrupt, last, done)
	}
	n := 0
	for done < last {
		entries, err := x.opts.History.Since(done, historyPage)
		if err != nil {
			return n, fmt.Errorf("read history: %w", err)
		}
		if len(entries) == 0 {
			break
		}
		for _, e := range entries {
			if err := w.add(e.Scope, doc{kind: kindHistory, at: historyTime(e.Timestamp), conv: e.SessionKey, pos: e.Cursor, text: e.Content}); err != nil {
				return n, err
			}
			if src, ok := e.Source(); ok && src.Valid() {
				if err := w.exec(`INSERT INTO ranges(ident, lo, hi, scope) VALUES (?, ?, ?, ?)`, ident(e.SessionKey, src.SessionID), src.From, src.To, string(e.Scope)); err != nil {
					return n, err
				}
			}
			n++
			done = e.Cursor
			if w.full() {
				if err := w.meta("history_cursor", strconv.Itoa(done)); err != nil {
					return n, err
				}
				if err := w.flush(); err != nil {
					return n, err
				}
			}
		}
	}
	return n, w.meta("history_cursor", strconv.Itoa(done))
}

func historyTime(ts string) int64 {
	t, err := time.ParseInLocation(history.TimestampLayout, ts, time.Local)
	if err != nil {
		return 0
	}
	return t.Unix()
}

// updateConversations indexes the messages each conversation archived
// since it was last read: user messages and the assistant's answers (tool
// calls and results are the work, not what was said). Files whose stamp did
// not change are not opened.
func (x *Index) updateConversations(w *writer) (int, error) {
	if x.opts.Conversations == nil {
		return 0, nil
	}
	files, err := x.opts.Conversations.Files()
	if err != nil {
		return 0, fmt.Errorf("list conversations: %w", err)
	}
	stamps, err := w.stamps(`SELECT name, stamp FROM files`)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		if err := w.ctx.Err(); err != nil {
			return n, err
		}
		if stamps[f.Name] == f.Stamp {
			continue
		}
		k, err := x.readConversation(w, f)
		n += k
		if errors.Is(err, errSkip) {
			continue
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// archivedRanges are the archive entries a conversation generation's
// messages were archived into: a message is searched in its entry's
// scope, which is its conversation's unless the operator moved the entry
// (dreamgate memory move).
type archivedRanges []struct {
	lo, hi int
	scope  audience.Scope
}

// scopeOf is the scope of message pos: its entry's, else home (not
// archived in an entry the index has read yet).
func (r archivedRanges) scopeOf(pos int, home audience.Scope) audience.Scope {
	for _, a := range r {
		if pos >= a.lo && pos < a.hi {
			return a.scope
		}
	}
	return home
}

// archivedIn reads the ranges of the generation ident; in shared mode
// every message is the default scope's, and none is read.
func (x *Index) archivedIn(w *writer, id string) (archivedRanges, error) {
	if x.opts.Memory != nil && x.opts.Memory.Shared() {
		return nil, nil
	}
	rows, err := w.q().QueryContext(w.ctx, `SELECT lo, hi, scope FROM ranges WHERE ident = ?`, id)
	if err != nil {
		return nil, classify(fmt.Errorf("read archived ranges: %w", err))
	}
	defer rows.Close()
	var out archivedRanges
	for rows.Next() {
		var r struct {
			lo, hi int
			scope  audience.Scope
		}
		var name string
		if err := rows.Scan(&r.lo, &r.hi, &name); err != nil {
			return nil, classify(err)
		}
		if s, err := audience.ParseScope(name); err == nil {
			r.scope = s
			out = append(out, r)
		}
	}
	return out, classify(rows.Err())
}

// errSkip: a conversation could not be read this time (it changed while
// read, or is unreadable); the next update tries again.
var errSkip = errors.New("conversation skipped")

// ident names a conversation generation in the convs table: its key and
// id, which a set-aside file keeps under its new name.
func ident(key, id string) string { return key + "\x00" + id }

func (x *Index) readConversation(w *writer, f ConversationFile) (int, error) {
	var (
		id    string
		from  int // messages of this generation already indexed
		scope audience.Scope
		added []doc
	)
	read, err := x.opts.Conversations.Read(f.Name, func(gen string) (int, int64) {
		id = gen
		var at int64
		err := w.q().QueryRowContext(w.ctx, `SELECT next, at FROM convs WHERE ident = ?`, ident(f.Key, gen)).Scan(&from, &at)
		if err != nil || at < 0 {
			return 0, 0
		}
		return from, at
	}, func(i int, m llm.Message) error {
		if i < from || m.Content == "" || (m.Role != llm.RoleUser && m.Role != llm.RoleAssistant) {
			return nil
		}
		who := m.Role
		if m.Role == llm.RoleUser && m.Sender != "" {
			who = m.SenderLabel()
		}
		var at int64
		if !m.Time.IsZero() {
			at = m.Time.Unix()
		}
		added = append(added, doc{kind: kindMessage, at: at, conv: f.Key, pos: i, who: who, text: m.Content})
		return nil
	})
	if err != nil {
		x.logger.Debug("conversation not indexed this time", "file", f.Name, "err", err)
		return 0, errSkip
	}
	scope = read.Audience.Home()
	if x.opts.Memory != nil {
		scope = x.opts.Memory.Home(read.Audience)
	}
	if _, err := audience.ParseScope(string(scope)); err != nil {
		// An audience with no home: its words are kept nowhere.
		return 0, errSkip
	}
	archived, err := x.archivedIn(w, ident(f.Key, read.ID))
	if err != nil {
		return 0, err
	}
	for _, d := range added {
		if err := w.add(archived.scopeOf(d.pos, scope), d); err != nil {
			return 0, err
		}
		if w.full() {
			// Mid-file progress has no byte offset: the next read starts
			// over and skips what is indexed.
			if err := w.conv(ident(f.Key, id), d.pos+1, -1); err != nil {
				return 0, err
			}
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	if read.Next >= from {
		if err := w.conv(ident(f.Key, read.ID), read.Next, read.NextAt); err != nil {
			return 0, err
		}
	}
	if err := w.exec(`INSERT INTO files(name, stamp) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET stamp = excluded.stamp`, f.Name, f.Stamp); err != nil {
		return 0, err
	}
	return len(added), nil
}

// shared reports whether memory is shared (config memory.scoped false).
func (x *Index) shared() bool { return x.opts.Memory != nil && x.opts.Memory.Shared() }

// updateCold reindexes each scope's cold-memory file that changed since it
// was indexed, line by line, and forgets those removed. The files are read
// through the memory (never through a link).
func (x *Index) updateCold(w *writer) (int, error) {
	mem := x.opts.Memory
	if mem == nil {
		return 0, nil
	}
	known, err := w.stamps(`SELECT scope, stamp FROM cold`)
	if err != nil {
		return 0, err
	}
	scopes, err := mem.Scopes()
	if err != nil {
		x.logger.Warn("cannot list the memory scopes; their cold memory is left as indexed", "err", err)
		return 0, nil
	}
	n := 0
	seen := map[audience.Scope]bool{}
	for _, s := range scopes {
		v, err := mem.Files().Version(s, memory.Cold)
		if err != nil || v.Missing() {
			continue
		}
		seen[s] = true
		// A cold line shows what replaced it, which may stand in a hot
		// file: a change there shows anew.
		stamp := v.String()
		for _, rel := range memory.HotFiles() {
			hv, _ := mem.Files().Version(s, rel)
			stamp += "|" + hv.String()
		}
		if known[string(s)] == stamp {
			continue
		}
		data, err := mem.Read(s, memory.Cold)
		if err != nil {
			x.logger.Warn("cannot read a cold-memory file; left as indexed", "scope", string(s), "err", err)
			continue
		}
		facts, err := mem.Facts(s)
		if err != nil {
			x.logger.Warn("cannot read a scope's memory to show what replaced its cold lines", "scope", string(s), "err", err)
		}
		if err := w.dropCold(s); err != nil {
			return n, err
		}
		k, err := w.addCold(s, string(data), v.Mod, facts)
		n += k
		if err != nil {
			return n, err
		}
		if err := w.exec(`INSERT INTO cold(scope, stamp) VALUES (?, ?) ON CONFLICT(scope) DO UPDATE SET stamp = excluded.stamp`, string(s), stamp); err != nil {
			return n, err
		}
	}
	for name := range known {
		if s := audience.Scope(name); !seen[s] {
			if err := w.dropCold(s); err != nil {
				return n, err
			}
			if err := w.exec(`DELETE FROM cold WHERE scope = ?`, string(s)); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// stamps reads a (name, stamp) table of what was indexed, by name.
func (w *writer) stamps(query string) (map[string]string, error) {
	rows, err := w.q().QueryContext(w.ctx, query)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, stamp string
		if err := rows.Scan(&name, &stamp); err != nil {
			return nil, classify(err)
		}
		out[name] = stamp
	}
	return out, classify(rows.Err())
}

package recall

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/store"
)

// ErrBusy is returned by Update when another process (or another call)
// is updating the index: what it adds is there for the next search.
var ErrBusy = store.ErrRecallBusy

// Stats counts what an update added.
type Stats struct {
	History, Messages, Cold int
	// Rebuilt says the index was started afresh (missing, damaged, of
	// another version or another memory setting).
	Rebuilt bool
}

// Limits of what is indexed and how it is written.
const (
	// batchDocs is how many documents one transaction writes: progress is
	// recorded with them, so a killed update resumes where it stopped.
	batchDocs = 5000
	// historyPage is how many archive entries one read takes.
	historyPage = 10000
)

// Update brings the index up to date: the archive entries after the last
// one indexed, the conversations' newly archived messages, and the
// cold-memory files that changed. It creates the index when missing and
// rebuilds it, with a log line, when it is unusable (damaged, of another
// version) or was built under the other memory setting or from an
// archive since replaced. One writer updates at a time, across processes;
// another one's call returns ErrBusy at once.
func (x *Index) Update(ctx context.Context) (Stats, error) {
	x.mu.Lock()
	x.last = x.opts.Now()
	x.mu.Unlock()
	st, err := x.updateOnce(ctx)
	if errors.Is(err, store.ErrRecallUnusable) {
		x.logger.Warn("recall index unusable; rebuilding it from the archive, the conversations and cold memory", "err", err)
		rctx, cancel := context.WithTimeout(ctx, resetWait)
		err = x.store.Reset(rctx)
		cancel()
		if err != nil {
			return Stats{}, err
		}
		st, err = x.updateOnce(ctx)
		st.Rebuilt = true
	}
	if err == nil {
		x.mu.Lock()
		x.fresh = true
		x.mu.Unlock()
	}
	return st, err
}

// resetWait bounds how long a rebuild waits for another writer to finish
// before it empties the index.
const resetWait = 10 * time.Second

func (x *Index) updateOnce(ctx context.Context) (Stats, error) {
	var st Stats
	err := x.store.Update(ctx, func(w store.RecallWriter) error {
		var err error
		st, err = x.update(&writer{w: w, ctx: ctx})
		return err
	})
	return st, err
}

// Reset empties the index, once no other process is updating it, so that
// the next search rebuilds it from the archive, the conversations and
// cold memory: for a change an update cannot see, such as archive entries
// moved to another scope (an update reads only entries after the last one
// indexed). A process searching the old index finds the new one at its
// next search.
func (x *Index) Reset(ctx context.Context) error {
	return x.store.Reset(ctx)
}

func (x *Index) update(w *writer) (Stats, error) {
	var st Stats
	mode := "scoped"
	if x.shared() {
		mode = "shared"
	}
	was, err := w.mark(markMemory)
	if err != nil {
		return st, err
	}
	if was != "" && was != mode {
		return st, fmt.Errorf("%w: built with memory %s, now %s", store.ErrRecallUnusable, was, mode)
	}
	if was == "" {
		if err := w.setMark(markMemory, mode); err != nil {
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
	return st, w.setMark(markComplete, "1")
}

// updateHistory indexes the archive entries after the last one indexed.
// An archive whose cursors went back (replaced by an older copy) makes the
// index start afresh.
func (x *Index) updateHistory(w *writer) (int, error) {
	if x.opts.History == nil {
		return 0, nil
	}
	v, err := w.mark(markHistory)
	if err != nil {
		return 0, err
	}
	done, _ := strconv.Atoi(v)
	last, err := x.opts.History.LastCursor()
	if err != nil {
		return 0, fmt.Errorf("read history cursor: %w", err)
	}
	if last < done {
		return 0, fmt.Errorf("%w: the archive's last cursor %d is below the %d indexed (it was replaced)", store.ErrRecallUnusable, last, done)
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
			if err := w.add(e.Scope, store.RecallDoc{Kind: store.RecallHistory, At: historyTime(e.Timestamp), Conversation: e.SessionKey, Pos: e.Cursor, Text: e.Content}); err != nil {
				return n, err
			}
			if src, ok := e.Source(); ok && src.Valid() {
				name := markRange + ident(e.SessionKey, src.SessionID) + markSep + strconv.Itoa(src.From)
				if err := w.setMark(name, strconv.Itoa(src.To)+markSep+string(e.Scope)); err != nil {
					return n, err
				}
			}
			n++
			done = e.Cursor
			if w.full() {
				if err := w.setMark(markHistory, strconv.Itoa(done)); err != nil {
					return n, err
				}
				if err := w.flush(); err != nil {
					return n, err
				}
			}
		}
	}
	return n, w.setMark(markHistory, strconv.Itoa(done))
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
	stamps, err := w.marks(markFile)
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
type archivedRanges []archivedRange

type archivedRange struct {
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
	m, err := w.marks(markRange + id + markSep)
	if err != nil {
		return nil, err
	}
	var out archivedRanges
	for from, v := range m {
		to, name, _ := strings.Cut(v, markSep)
		lo, err1 := strconv.Atoi(from)
		hi, err2 := strconv.Atoi(to)
		s, err3 := audience.ParseScope(name)
		if err1 == nil && err2 == nil && err3 == nil {
			out = append(out, archivedRange{lo: lo, hi: hi, scope: s})
		}
	}
	// The first range holding a message decides: by where it starts.
	slices.SortFunc(out, func(a, b archivedRange) int { return cmp.Compare(a.lo, b.lo) })
	return out, nil
}

// errSkip: a conversation could not be read this time (it changed while
// read, or is unreadable); the next update tries again.
var errSkip = errors.New("conversation skipped")

// ident names a conversation generation in the marks: its key and id,
// which a set-aside file keeps under its new name.
func ident(key, id string) string { return key + markSep + id }

func (x *Index) readConversation(w *writer, f ConversationFile) (int, error) {
	var (
		id      string
		from    int // messages of this generation already indexed
		markErr error
		added   []store.RecallDoc
	)
	read, err := x.opts.Conversations.Read(f.Name, func(gen string) (int, int64) {
		id = gen
		var v string
		v, markErr = w.mark(markConv + ident(f.Key, gen))
		var at int64
		if _, err := fmt.Sscanf(v, "%d %d", &from, &at); err != nil || at < 0 {
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
		added = append(added, store.RecallDoc{Kind: store.RecallMessage, At: at, Conversation: f.Key, Pos: i, Who: who, Text: m.Content})
		return nil
	})
	if markErr != nil {
		return 0, markErr
	}
	if err != nil {
		x.logger.Debug("conversation not indexed this time", "file", f.Name, "err", err)
		return 0, errSkip
	}
	scope := read.Audience.Home()
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
		if err := w.add(archived.scopeOf(d.Pos, scope), d); err != nil {
			return 0, err
		}
		if w.full() {
			// Mid-file progress has no byte offset: the next read starts
			// over and skips what is indexed.
			if err := w.conv(ident(f.Key, id), d.Pos+1, -1); err != nil {
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
	if err := w.setMark(markFile+f.Name, f.Stamp); err != nil {
		return 0, err
	}
	return len(added), nil
}

// conv records how far a conversation generation was read: the next
// message and the position its file's reader resumes at (-1: none, the
// next read starts over).
func (w *writer) conv(ident string, next int, at int64) error {
	return w.setMark(markConv+ident, fmt.Sprintf("%d %d", next, at))
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
	known, err := w.marks(markCold)
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
		if err := w.w.Drop(s, store.RecallCold); err != nil {
			return n, err
		}
		k, err := w.addCold(s, string(data), v.Mod, facts)
		n += k
		if err != nil {
			return n, err
		}
		if err := w.setMark(markCold+string(s), stamp); err != nil {
			return n, err
		}
	}
	for name := range known {
		if s := audience.Scope(name); !seen[s] {
			if err := w.w.Drop(s, store.RecallCold); err != nil {
				return n, err
			}
			if err := w.setMark(markCold+string(s), ""); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

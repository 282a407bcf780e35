package dream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// A deep Dream keeps a scope's memory small and true over months. It runs
// for a scope after Config.DeepEvery of its Dreams, when its memory files
// pass Config.DeepAtShare of Config.HotTokens, and when the prompt builder
// asked for one (Ledger.RequestDeep): the scope's files are read whole,
// expired ephemeral lines retire, and the model is asked, in one call
// without tools, to merge duplicates and lines a later one corrected and
// to move out what is no longer true or matters least. Its answer is a
// list of operations on numbered lines, applied by the program, so no line
// can leave hot memory except to cold memory: a permanent line is never
// moved out (it may be merged with one saying the same). When the result
// is still over the target, the model is asked once more with stronger
// words (Mastra's retry); when that does not do either, the program moves
// the lowest-priority, oldest lines of USER.md and memory/MEMORY.md to
// cold memory until it is under (SOUL.md's rules and permanent lines
// never). Cold memory is written before the files, and one commit ("dream:
// deep — …") holds both, so /dream-log shows it and /dream-restore undoes
// it.

// TokenCounter counts the tokens of a text (*consolidator.Counter).
type TokenCounter interface {
	Count(s string) int
}

// deepRequests is memory/.dream_deep: the scopes waiting for a deep Dream,
// and the deep Dream whose files are being written, until its commit.
type deepRequests struct {
	Scopes  []audience.Scope `json:"scopes"`
	Writing *deepWriting     `json:"writing,omitempty"`
}

// deepWriting stands while a deep Dream's writes may be on disk with no
// commit holding them: a process killed then leaves it, and the next Dream
// commits those files as the deep Dream's (restorable), not as hand edits.
type deepWriting struct {
	Scope   audience.Scope `json:"scope"`
	Why     string         `json:"why"`
	Started time.Time      `json:"started"`
}

// PointDeepWrite names the moment after a deep Dream wrote the files and
// cold memory, before its commit (Deps.Hook).
const PointDeepWrite = "dream-deep-write"

func (l *Ledger) deepPath() string {
	return filepath.Join(l.dir, filepath.FromSlash(workspace.DreamDeep))
}

// RequestDeep asks for a deep Dream of the scope at the next Dream
// (gateway.DeepDreams). It is recorded on disk, so a restart does not
// forget it, but not in the ledger's record: asking never waits for a
// running Dream, only for another request of this process.
func (l *Ledger) RequestDeep(scope audience.Scope) error {
	if _, err := audience.ParseScope(string(scope)); err != nil {
		return fmt.Errorf("deep Dream request: %w", err)
	}
	l.deepMu.Lock()
	defer l.deepMu.Unlock()
	req := l.readDeep()
	if slices.Contains(req.Scopes, scope) {
		return nil
	}
	req.Scopes = append(req.Scopes, scope)
	slices.Sort(req.Scopes)
	return writeJSON(l.deepPath(), "deep Dream requests", req)
}

// DeepRequested lists the scopes waiting for a deep Dream.
func (l *Ledger) DeepRequested() []audience.Scope {
	l.deepMu.Lock()
	defer l.deepMu.Unlock()
	return l.readDeep().Scopes
}

// readDeep reads the requests; a damaged file or a name that is no scope
// counts as no request (the prompt builder asks again on its next turn).
func (l *Ledger) readDeep() deepRequests {
	var req deepRequests
	if _, err := readJSON(l.deepPath(), "deep Dream requests", &req); err != nil {
		l.log.Warn("deep Dream requests unreadable; starting afresh", "err", err)
		return deepRequests{}
	}
	req.Scopes = slices.DeleteFunc(req.Scopes, func(s audience.Scope) bool {
		_, err := audience.ParseScope(string(s))
		return err != nil
	})
	return req
}

// deepDone removes the scope's request and the record of its writing.
func (l *Ledger) deepDone(scope audience.Scope) error {
	l.deepMu.Lock()
	defer l.deepMu.Unlock()
	req := l.readDeep()
	writing := req.Writing != nil && req.Writing.Scope == scope
	if !slices.Contains(req.Scopes, scope) && !writing {
		return nil
	}
	req.Scopes = slices.DeleteFunc(req.Scopes, func(s audience.Scope) bool { return s == scope })
	if writing {
		req.Writing = nil
	}
	return writeJSON(l.deepPath(), "deep Dream requests", req)
}

// setDeepWriting records (w) or clears (nil) the deep Dream being written.
func (l *Ledger) setDeepWriting(w *deepWriting) error {
	l.deepMu.Lock()
	defer l.deepMu.Unlock()
	req := l.readDeep()
	req.Writing = w
	return writeJSON(l.deepPath(), "deep Dream requests", req)
}

func (l *Ledger) deepWritingNow() *deepWriting {
	l.deepMu.Lock()
	defer l.deepMu.Unlock()
	return l.readDeep().Writing
}

// recoverDeep commits, as a deep Dream's, the files a deep Dream killed
// between writing and committing left (before anything else of a Run
// could commit them as hand edits), and counts that deep Dream as done.
// A failure is logged: the record stays for the next Run.
func (d *Dreamer) recoverDeep(h *held) {
	w := d.ledger.deepWritingNow()
	if w == nil {
		return
	}
	st, err := d.status(w.Scope)
	if err != nil {
		d.log.Warn("an interrupted deep Dream's files could not be compared", "scope", string(w.Scope), "err", err)
		return
	}
	if !st.Empty() {
		body := fmt.Sprintf("Deep Dream (%s), interrupted after writing the files and before committing them; recorded by the next Dream as it left them. Every line taken out is in %s.\n\n%s",
			w.Why, workspace.Cold, d.repo.Summary(st, summaryCap))
		c, err := d.repo.CommitPaths(diffPaths(st), DeepSubject+" recovered after an interruption", withTrailer(body, w.Scope))
		if err != nil && !errors.Is(err, gitstore.ErrNothingToCommit) {
			d.log.Warn("an interrupted deep Dream's files could not be committed", "scope", string(w.Scope), "err", err)
			return
		}
		d.log.Info("recorded an interrupted deep Dream's files", "scope", string(w.Scope), "commit", c.Short)
	}
	now := d.now()
	if err := h.changeScope(w.Scope, func(p *progress) { p.SinceDeep, p.LastDeep = 0, &now }); err != nil {
		d.log.Warn("dream progress not saved", "err", err)
	}
	if err := d.ledger.deepDone(w.Scope); err != nil {
		d.log.Warn("deep Dream record not removed", "scope", string(w.Scope), "err", err)
	}
}

// deepDreams runs after a Run's batches: it counts a Dream for each
// chosen scope that completed a batch, then makes a deep Dream of each
// chosen scope that is due (asked for, DeepEvery Dreams since the last,
// or over DeepAtShare of its budget, which is measured for every scope
// the ledger knows when there is a budget). A failed deep Dream is logged and
// stays due; it never fails the run.
func (d *Dreamer) deepDreams(ctx context.Context, h *held, scopes Scopes, rep *Report) {
	requested := d.ledger.DeepRequested()
	var visited []audience.Scope
	for _, sr := range rep.Scopes {
		if sr.Batches > 0 {
			visited = append(visited, sr.Scope)
		}
	}
	if len(visited) > 0 {
		err := h.change(func(r *record) {
			for _, s := range visited {
				r.scope(s).SinceDeep++
			}
		})
		if err != nil {
			d.log.Warn("dream progress not saved", "err", err)
		}
	}
	candidates := slices.Clone(visited)
	extra := slices.Clone(requested)
	if d.cfg.HotTokens > 0 {
		// A scope's files also grow by chat tools and hand edits: every
		// known scope is measured (three files each, no model call).
		for s := range h.rec.Scopes {
			extra = append(extra, s)
		}
		slices.Sort(extra[len(requested):])
	}
	for _, s := range extra {
		if !slices.Contains(candidates, s) {
			candidates = append(candidates, s)
		}
	}
	for _, s := range candidates {
		if !scopes.Has(s) || stopsAll(ctx, nil) {
			continue
		}
		why, err := d.deepDue(h, s, slices.Contains(requested, s))
		if err != nil {
			d.log.Warn("deep Dream: the scope's memory could not be read", "scope", string(s), "err", err)
			continue
		}
		if why == "" {
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
		dr, err := d.deep(dctx, h, s, why)
		cancel()
		rep.addDeep(s, dr)
		if err != nil {
			d.log.Warn("deep Dream failed; it stays due", "scope", string(s), "why", why, "err", err)
			continue
		}
		d.log.Info("deep Dream finished", "scope", string(s), "why", why, "merged", dr.Merged,
			"cold", dr.ColdLines, "tokens_before", dr.Before, "tokens_after", dr.After, "commit", dr.Commit)
	}
}

// deepDue says why the scope needs a deep Dream now ("" when it does not).
func (d *Dreamer) deepDue(h *held, s audience.Scope, requested bool) (string, error) {
	if n := h.scope(s).SinceDeep; n >= d.cfg.DeepEvery {
		return fmt.Sprintf("%d Dreams since the last deep one", n), nil
	}
	if d.cfg.HotTokens <= 0 {
		if requested {
			return "asked for: its memory passed its budget in a prompt", nil
		}
		return "", nil
	}
	files, err := d.readDeepFiles(s)
	if err != nil {
		return "", err
	}
	n := d.hotTokens(files)
	if left := h.scope(s).DeepLeft; left > 0 && n <= left {
		// The last deep Dream left what it could not move (permanent
		// lines, SOUL.md's); nothing grew since. A prompt's request is
		// answered by that one.
		if requested {
			if err := d.ledger.deepDone(s); err != nil {
				d.log.Warn("deep Dream request not removed", "scope", string(s), "err", err)
			}
		}
		return "", nil
	}
	if requested {
		return "asked for: its memory passed its budget in a prompt", nil
	}
	if n > d.deepTarget() {
		return fmt.Sprintf("its memory holds %d tokens, over %d%% of its budget of %d", n, int(d.cfg.DeepAtShare*100+0.5), d.cfg.HotTokens), nil
	}
	return "", nil
}

// deepTarget is the size a deep Dream brings a scope's memory to (0: no
// budget): the share that triggers one, so that the next Dream does not
// trigger it again at once.
func (d *Dreamer) deepTarget() int {
	if d.cfg.HotTokens <= 0 {
		return 0
	}
	return int(float64(d.cfg.HotTokens) * d.cfg.DeepAtShare)
}

// DeepReport is what one deep Dream did in a scope.
type DeepReport struct {
	// Why it ran.
	Why string
	// Merged counts the lines merged away (n lines merged into one count
	// n-1); Retired the expired ephemeral lines; Reviewed the lines the
	// model moved out; Budget the lines the program moved out to reach
	// the target; ColdLines all lines that went to cold memory.
	Merged, Retired, Reviewed, Budget, ColdLines int
	// Before and After are the scope's memory in tokens; Target what it
	// was to reach (0: no budget).
	Before, After, Target int
	// Passes counts the model's passes (0, 1 or 2).
	Passes int
	Commit string
	Usage  llm.Usage
}

// deepFile is one memory file of the scope as the deep Dream works on it.
type deepFile struct {
	rel  string
	data []byte // as read
	f    *memline.File
}

// deepFileIDs prefixes the numbered lines of each file in the prompt.
var deepFileIDs = map[string]string{fileSoul: "S", fileUser: "U", fileMemory: "M"}

func (d *Dreamer) readDeepFiles(s audience.Scope) ([]*deepFile, error) {
	ws, done, err := d.scopeRoot(s)
	if err != nil {
		return nil, err
	}
	defer done()
	return readDeepFiles(ws)
}

func readDeepFiles(ws *workspace.Root) ([]*deepFile, error) {
	var out []*deepFile
	for _, rel := range []string{fileSoul, fileUser, fileMemory} {
		b, err := ws.ReadFile(rel)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
		out = append(out, &deepFile{rel: rel, data: b, f: memline.ParseFile(b)})
	}
	return out, nil
}

// hotTokens is what the files cost in a prompt: every line with text as
// the prompt shows it (a fact without its comment, with its date: memline
// Shown), one token more for its line break.
func (d *Dreamer) hotTokens(files []*deepFile) int {
	n := 0
	for _, f := range files {
		for _, it := range f.f.Items {
			n += d.lineTokens(it)
		}
	}
	return n
}

// lineTokens is what one line costs in a prompt (0 for a blank one).
func (d *Dreamer) lineTokens(it memline.Item) int {
	if strings.TrimSpace(it.Raw) == "" {
		return 0
	}
	text := it.Raw
	if it.Fact && it.Line.HasMeta() {
		text, _ = it.Line.Shown()
	}
	return d.count.Count(text) + 1
}

// deep makes one deep Dream of the scope and commits it. It holds the
// Dream lock (h) throughout; the files are read at the start and written
// at the end under the workspace's write lock, only if no chat tool
// changed them meanwhile (else it gives up, and stays due).
func (d *Dreamer) deep(ctx context.Context, h *held, s audience.Scope, why string) (DeepReport, error) {
	dr := DeepReport{Why: why, Target: d.deepTarget()}
	r := &run{d: d, h: h, scope: s, parent: ctx, rep: &Report{}}
	if err := r.commitHandEdits(); err != nil {
		return dr, err
	}
	ws, done, err := d.scopeRoot(s)
	if err != nil {
		return dr, fmt.Errorf("open the scope's folder: %w", err)
	}
	defer done()
	files, err := readDeepFiles(ws)
	if err != nil {
		return dr, err
	}
	day := d.now()
	dr.Before = d.hotTokens(files)
	var moved []coldSection
	for _, f := range files {
		if out := retire(f.f, day, d.cfg.EphemeralDays); out != nil {
			moved = append(moved, coldSection{from: f.rel, reason: reasonExpired(d.cfg.EphemeralDays), lines: out})
			dr.Retired += len(out)
		}
	}
	var modelErr error
	for pass := 1; pass <= 2; pass++ {
		size := d.hotTokens(files)
		if pass == 2 && (dr.Target == 0 || size <= dr.Target) {
			break
		}
		dr.Passes++
		ops, usage, err := d.deepCall(ctx, files, day, size, dr.Target, pass == 2)
		dr.Usage = dr.Usage.Add(usage)
		if err != nil {
			modelErr = err
			break
		}
		res := applyDeep(files, ops)
		dr.Merged += res.merged
		dr.Reviewed += res.reviewed
		moved = append(moved, res.cold...)
		if res.refused > 0 {
			d.log.Info("deep Dream: operations refused (unknown or used line, or a permanent line moved out)", "scope", string(s), "count", res.refused)
		}
	}
	if modelErr != nil {
		if stopsAll(ctx, modelErr) {
			return dr, fmt.Errorf("deep Dream model call: %w", modelErr)
		}
		// A model that answers nonsense still leaves the budget to keep.
		d.log.Warn("deep Dream: the model's pass failed; only the mechanical steps run", "scope", string(s), "err", modelErr)
	}
	if dr.Target > 0 {
		out := d.moveToBudget(files, dr.Target)
		dr.Budget = coldCount(out)
		moved = append(moved, out...)
	}
	dr.After = d.hotTokens(files)
	dr.ColdLines = coldCount(moved)
	if dr.Target > 0 && dr.After > dr.Target {
		d.log.Warn("deep Dream: the memory stays over its target; what is left is permanent or SOUL.md's", "scope", string(s), "tokens", dr.After, "target", dr.Target)
	}
	if err := d.ledger.setDeepWriting(&deepWriting{Scope: s, Why: why, Started: day}); err != nil {
		return dr, fmt.Errorf("record the deep Dream's writing: %w", err)
	}
	if err := writeDeep(ws, day, files, moved); err != nil {
		if errors.Is(err, errChangedMeanwhile) {
			// Nothing was written: the chat's edits are not this
			// Dream's to commit.
			if cerr := d.ledger.setDeepWriting(nil); cerr != nil {
				d.log.Warn("deep Dream record not removed", "scope", string(s), "err", cerr)
			}
		}
		// A write that failed half-way is committed by the next Dream.
		return dr, err
	}
	if d.hook != nil {
		d.hook(PointDeepWrite)
	}
	if err := d.commitDeep(r, &dr); err != nil {
		return dr, err
	}
	now := d.now()
	left := 0
	if dr.Target > 0 && dr.After > dr.Target {
		left = dr.After
	}
	err = h.changeScope(s, func(p *progress) { p.SinceDeep, p.LastDeep, p.DeepLeft = 0, &now, left })
	if err != nil {
		d.log.Warn("dream progress not saved", "err", err)
	}
	if err := d.ledger.deepDone(s); err != nil {
		d.log.Warn("deep Dream request not removed; the next Dream makes another", "scope", string(s), "err", err)
	}
	return dr, nil
}

// errChangedMeanwhile: a chat edited the scope's files while the deep
// Dream worked on them.
var errChangedMeanwhile = errors.New("the memory files changed during the deep Dream")

// writeDeep writes cold memory, then the changed files, under the write
// lock, if the files are still as read.
func writeDeep(ws *workspace.Root, day time.Time, files []*deepFile, moved []coldSection) error {
	return ws.Exclusive(func() error {
		for _, f := range files {
			cur, err := ws.ReadFile(f.rel)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("read %s: %w", f.rel, err)
			}
			if !bytes.Equal(cur, f.data) {
				return fmt.Errorf("%s: %w", f.rel, errChangedMeanwhile)
			}
		}
		if err := appendCold(ws, day, moved); err != nil {
			return err
		}
		for _, f := range files {
			if b := f.f.Bytes(); !bytes.Equal(b, f.data) {
				if err := writeKeepingMode(ws, f.rel, b); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// DeepSubject starts the subject of a deep Dream's commit.
const DeepSubject = SubjectPrefix + " deep —"

func (d *Dreamer) commitDeep(r *run, dr *DeepReport) error {
	diff, err := d.status(r.scope)
	if err != nil {
		return fmt.Errorf("status after the deep Dream: %w", err)
	}
	if diff.Empty() {
		return nil
	}
	var parts []string
	if dr.Merged > 0 {
		parts = append(parts, plural(dr.Merged, "line", "lines")+" merged")
	}
	if dr.ColdLines > 0 {
		parts = append(parts, plural(dr.ColdLines, "line", "lines")+" to cold memory")
	}
	if len(parts) == 0 {
		parts = append(parts, "lines rewritten")
	}
	subject := fmt.Sprintf("%s %s; memory %d → %d tokens", DeepSubject, strings.Join(parts, ", "), dr.Before, dr.After)
	var b strings.Builder
	fmt.Fprintf(&b, "Deep Dream: %s.\n", dr.Why)
	fmt.Fprintf(&b, "Merged away: %d. Retired (ephemeral, past %d days): %d. Moved out by the model's review: %d. Moved out to reach the budget: %d.\n",
		dr.Merged, d.cfg.EphemeralDays, dr.Retired, dr.Reviewed, dr.Budget)
	if dr.Target > 0 {
		fmt.Fprintf(&b, "Memory: %d → %d tokens (target %d, budget %d).\n", dr.Before, dr.After, dr.Target, d.cfg.HotTokens)
	}
	b.WriteString("Every line taken out is in " + workspace.Cold + ".\n\n")
	b.WriteString(d.repo.Summary(diff, summaryCap))
	c, err := d.repo.CommitPaths(diffPaths(diff), subject, withTrailer(b.String(), r.scope))
	if errors.Is(err, gitstore.ErrNothingToCommit) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("commit the deep Dream: %w", err)
	}
	dr.Commit = c.Short
	return nil
}

// moveToBudget moves the lowest-priority, oldest facts of USER.md and
// memory/MEMORY.md (an undated line counts as the oldest; permanent ones
// never) to cold memory until the files hold at most target tokens.
func (d *Dreamer) moveToBudget(files []*deepFile, target int) []coldSection {
	type cand struct {
		f    *deepFile
		item int
		line memline.Line
	}
	var cands []cand
	for _, f := range files {
		if f.rel == fileSoul {
			continue
		}
		for _, i := range f.f.Facts() {
			l := f.f.Items[i].Line
			if l.Effective() != memline.Permanent {
				cands = append(cands, cand{f, i, l})
			}
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if ra, rb := a.line.Effective().Rank(), b.line.Effective().Rank(); ra != rb {
			return rb - ra // ephemeral first
		}
		return strings.Compare(a.line.Date, b.line.Date) // "" (undated) first
	})
	size := d.hotTokens(files)
	gone := map[*deepFile]map[int]bool{}
	for _, c := range cands {
		if size <= target {
			break
		}
		size -= d.lineTokens(c.f.f.Items[c.item])
		if gone[c.f] == nil {
			gone[c.f] = map[int]bool{}
		}
		gone[c.f][c.item] = true
	}
	var out []coldSection
	for _, f := range files {
		if len(gone[f]) == 0 {
			continue
		}
		sec := coldSection{from: f.rel, reason: reasonBudget}
		kept := f.f.Items[:0:0]
		for i, it := range f.f.Items {
			if gone[f][i] {
				sec.lines = append(sec.lines, it.Line)
				continue
			}
			kept = append(kept, it)
		}
		f.f.Items = kept
		out = append(out, sec)
	}
	return out
}

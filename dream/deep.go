package dream

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
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
// never). It works on a copy of the scope's files (stage.go) and lands as
// one step: one commit ("dream: deep — …") holds the files and cold memory
// and says what the ledger learns (step.go), so a kill between two of its
// files never leaves a line in both tiers or in neither, /dream-log shows
// it and /dream-restore undoes it.

// TokenCounter counts the tokens of a text (*consolidator.Counter).
type TokenCounter interface {
	Count(s string) int
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
		if err := h.countDreams(visited); err != nil {
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
		if !d.leaseScope(h, s) {
			continue // another process dreams it
		}
		dctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
		p := &deepPass{d: d, h: h, scope: s, dr: DeepReport{Why: why, Target: d.deepTarget()}}
		err = p.run(dctx)
		dr := p.dr
		cancel()
		d.unleaseScope(h)
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
	if held, err := d.stillHeld(h, s); held || err != nil {
		// A restore brought back what a deep Dream had taken out: not
		// undone again for its size, its age or a prompt's request.
		if held && requested {
			if err := h.deepAnswered(s); err != nil {
				d.log.Warn("deep Dream request not removed", "scope", string(s), "err", err)
			}
		}
		return "", err
	}
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
	n := d.hotTokens(s, files)
	if left := h.scope(s).DeepLeft; left > 0 && n <= left {
		// The last deep Dream left what it could not move (permanent
		// lines, SOUL.md's); nothing grew since. A prompt's request is
		// answered by that one.
		if requested {
			if err := h.deepAnswered(s); err != nil {
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
	// n-1); Replaced the lines the model found a later one corrected;
	// Aged the expired ephemeral lines; Moved and Retired the lines the
	// model moved out to make room or retired as no longer true; Budget
	// the lines the program moved out to reach the target; ColdLines all
	// lines that went to cold memory (each saying why).
	Merged, Replaced, Aged, Moved, Retired, Budget, ColdLines int
	// Before and After are the scope's memory in tokens; Target what it
	// was to reach (0: no budget).
	Before, After, Target int
	// Passes counts the model's passes (0, 1 or 2), Calls the calls they
	// made (a pass over a memory too big for one call makes several).
	Passes, Calls int
	Commit        string
	Usage         llm.Usage
}

// PointDeepWrite names the moment after a deep Dream wrote its copy of the
// files and cold memory, before its step lands (Deps.Hook): a kill there
// changes nothing.
const PointDeepWrite = "dream-deep-write"

// deepPass is one deep Dream of a scope, a stage of a Run: it saves the
// scope's hand edits, copies its files (stage), retires expired lines,
// asks the model for its operations (deepops.go) in passes that fit the
// Dream model's window, moves lines out to reach the target, and lands
// the copy as one step. A chat that edits the scope's files meanwhile
// makes it give up (it stays due): merging would undo the chat's edit or
// the pass's.
type deepPass struct {
	d     *Dreamer
	h     *held
	scope audience.Scope
	dr    DeepReport
	stage *stage
}

// run makes the deep Dream and lands it; dr says what it did.
func (p *deepPass) run(ctx context.Context) error {
	d, dr := p.d, &p.dr
	var rep Report
	base, err := d.handEdits(p.h, p.scope, &rep)
	if err != nil {
		return err
	}
	if p.stage, err = d.newStage(p.scope, base.SHA); err != nil {
		return err
	}
	defer p.stage.close()
	files, err := readDeepFiles(p.stage.root)
	if err != nil {
		return err
	}
	cold, err := readCold(p.stage.root)
	if err != nil {
		return err
	}
	taken := giveDeepIDs(files, cold.f)
	day := d.now()
	dr.Before = d.hotTokens(p.scope, files)
	var moved []coldSection
	for _, f := range files {
		if out := retire(f.f, day, d.cfg.EphemeralDays); out != nil {
			moved = append(moved, coldSection{from: f.rel, why: memline.Aged, lines: out})
			dr.Aged += len(out)
		}
	}
	out, err := p.review(ctx, files, day, taken)
	if err != nil {
		return err
	}
	moved = append(moved, out...)
	if dr.Target > 0 {
		out := d.moveToBudget(p.scope, files, dr.Target)
		dr.Budget = coldCount(out)
		moved = append(moved, out...)
	}
	dr.After = d.hotTokens(p.scope, files)
	dr.ColdLines = coldCount(moved)
	if dr.Target > 0 && dr.After > dr.Target {
		d.log.Warn("deep Dream: the memory stays over its target; what is left is permanent or SOUL.md's", "scope", string(p.scope), "tokens", dr.After, "target", dr.Target)
	}
	if err := writeStage(p.stage, day, d.cfg.EphemeralDays, files, cold, moved); err != nil {
		return err
	}
	if d.hook != nil {
		d.hook(PointDeepWrite)
	}
	return p.land()
}

// review runs the model's passes: a second, firmer one when the first
// leaves the scope over its target. A pass shows the model the scope's
// facts in as many calls as fit the Dream model's window (deepGroups),
// each asked its share of what is to be freed, and applies their
// operations together. A model that answers nonsense still leaves the
// mechanical steps to run; an unreachable one or a cancelled run ends the
// deep Dream.
func (p *deepPass) review(ctx context.Context, files []*deepFile, day time.Time, taken idSet) ([]coldSection, error) {
	d, dr := p.d, &p.dr
	var moved []coldSection
	for pass := 1; pass <= 2; pass++ {
		size := d.hotTokens(p.scope, files)
		if pass == 2 && (dr.Target == 0 || size <= dr.Target) {
			break
		}
		dr.Passes++
		ops, refused, err := p.pass(ctx, files, day, size, pass == 2)
		if err != nil {
			if stopsAll(ctx, err) {
				return nil, fmt.Errorf("deep Dream model call: %w", err)
			}
			d.log.Warn("deep Dream: the model's pass failed; only the mechanical steps run", "scope", string(p.scope), "err", err)
			return moved, nil
		}
		res := applyDeep(files, ops, taken)
		dr.Merged += res.merged
		dr.Replaced += res.replaced
		dr.Moved += res.moved
		dr.Retired += res.retired
		moved = append(moved, res.cold...)
		if n := res.refused + refused; n > 0 {
			d.log.Info("deep Dream: operations refused (unknown, unseen or used line, or a permanent line moved out)", "scope", string(p.scope), "count", n)
		}
	}
	return moved, nil
}

// pass makes the calls of one pass and returns their operations, all on
// the numbering of the files as they are now.
func (p *deepPass) pass(ctx context.Context, files []*deepFile, day time.Time, size int, stronger bool) ([]deepOp, int, error) {
	d, dr := p.d, &p.dr
	over := max(0, size-dr.Target)
	if dr.Target == 0 {
		over = 0
	}
	empty := deepMessages(files, func(string) bool { return false }, day, size, dr.Target, over, stronger)
	groups := d.deepGroups(files, d.room(d.count.Count(empty[0].Content)+d.count.Count(empty[1].Content)))
	if len(groups) > 1 {
		d.log.Info("deep Dream shows the memory in calls that fit the model's window", "scope", string(p.scope), "calls", len(groups))
	}
	var ops []deepOp
	refused := 0
	for _, g := range groups {
		share := over
		if size > 0 && len(groups) > 1 {
			share = (over*g.tokens + size - 1) / size
		}
		o, r, usage, err := d.deepCall(ctx, files, g.shown, day, size, dr.Target, share, stronger)
		dr.Usage = dr.Usage.Add(usage)
		dr.Calls++
		if err != nil {
			return nil, 0, err
		}
		ops, refused = append(ops, o...), refused+r
	}
	return ops, refused, nil
}

// giveDeepIDs gives every fact of the files that has none an id, unique
// in the scope (cold memory's ids taken too, its lines left as they are),
// and returns the ids taken.
func giveDeepIDs(files []*deepFile, cold *memline.File) idSet {
	taken := idSet{}
	all := make([]*memline.File, 0, len(files)+1)
	hot := make([]bool, 0, len(files)+1)
	for _, f := range files {
		taken.addFiles(f.f)
		all, hot = append(all, f.f), append(hot, true)
	}
	taken.addFiles(cold)
	g := newIDGiver(taken)
	for i, f := range all {
		g.file(f, hot[i], nil)
	}
	return taken
}

// writeStage writes cold memory (with the moved sections; days: the age
// ephemeral lines keep, for its headings) and the changed files into the
// copy.
func writeStage(st *stage, day time.Time, days int, files []*deepFile, cold *coldFile, moved []coldSection) error {
	if err := cold.write(st.root, day, days, moved); err != nil {
		return err
	}
	for _, f := range files {
		if b := f.f.Bytes(); !bytes.Equal(b, f.data) {
			if err := writeKeepingMode(st.root, f.rel, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// DeepSubject starts the subject of a deep Dream's commit.
const DeepSubject = SubjectPrefix + " deep —"

// land commits the copy as the deep Dream's step.
func (p *deepPass) land() error {
	d, dr := p.d, &p.dr
	changes, err := p.stage.changes()
	if err != nil {
		return err
	}
	left := 0
	if dr.Target > 0 && dr.After > dr.Target {
		left = dr.After
	}
	note := stepNote{Kind: stepDeep, Scope: p.scope, DeepLeft: left}
	if len(changes) == 0 {
		// Nothing to move: the deep Dream is done all the same.
		return p.h.landed([]stepNote{note}, p.h.rec.Head, d.now())
	}
	diff, err := d.repo.DiffChanges(p.stage.base, changes)
	if err != nil {
		return fmt.Errorf("diff the deep Dream's changes: %w", err)
	}
	res, err := d.steps(p.h).land(step{note: note, subject: p.subject(), body: p.body(diff),
		base: p.stage.base, changes: changes})
	if err != nil {
		return fmt.Errorf("commit the deep Dream: %w", err)
	}
	dr.Commit = res.commit.Short
	return nil
}

func (p *deepPass) subject() string {
	dr := p.dr
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
	return fmt.Sprintf("%s %s; memory %d → %d tokens", DeepSubject, strings.Join(parts, ", "), dr.Before, dr.After)
}

func (p *deepPass) body(diff gitstore.Diff) string {
	d, dr := p.d, p.dr
	var b strings.Builder
	fmt.Fprintf(&b, "Deep Dream: %s.\n", dr.Why)
	fmt.Fprintf(&b, "Merged away: %d. Replaced by a later value: %d. Aged out (ephemeral, past %d days): %d. Retired by the model's review (no longer true): %d. Moved out by the model's review to make room: %d. Moved out by the program to reach the budget: %d.\n",
		dr.Merged, dr.Replaced, d.cfg.EphemeralDays, dr.Aged, dr.Retired, dr.Moved, dr.Budget)
	if dr.Target > 0 {
		fmt.Fprintf(&b, "Memory: %d → %d tokens (target %d, budget %d).\n", dr.Before, dr.After, dr.Target, d.cfg.HotTokens)
	}
	b.WriteString("Every line taken out is in " + memory.Cold + ", saying why.\n\n")
	b.WriteString(d.repo.Summary(diff, summaryCap))
	return b.String()
}

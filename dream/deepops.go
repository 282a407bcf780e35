package dream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// cacheKeyDeep keeps the deep Dream's calls on their own prompt cache.
const cacheKeyDeep = "dream-deep"

const deepGuidance = `You keep the long-term memory of a chat assistant small and true. You get every fact of its memory files, numbered, each with its priority (permanent, durable or ephemeral) and the date it was last confirmed.

- Merge duplicates: facts that say the same thing become one line.
- When a fact corrects another (a new office, a changed plan), the one confirmed later is true: replace the older with it.
- Retire what is no longer true or no longer useful: a past plan, a finished task, a fact a later one made pointless.
- To make room, move out what matters least; it stays true, in cold memory.
- Never move out or retire a permanent fact. Merge it only with facts that say the same thing.
- Keep each fact short and self-contained; say who or what it is about.
- Lines taken out are not lost: they go to cold memory, where the assistant can still search them, marked with what you did.`

const deepRules = `## Answer format (required)
One operation per line and nothing else:
MERGE <id> <id> …: <the one fact that says what they say>
REPLACE <id> <id> … WITH <id>   (the first ids are older values the last one corrects)
RETIRE <id> <id> …   (no longer true or useful)
MOVE <id> <id> …   (still true; moved out to make room)
Facts you do not name stay as they are. Answer DONE alone when nothing needs doing.`

// deepStronger opens the second pass's request (%d: the tokens over the
// target, about how many facts that is).
const deepStronger = "## This pass must free at least %d tokens (about %d facts)\nYour last pass left the memory over its target. Move out the ephemeral facts first, then the oldest durable facts that matter least, and merge harder. Permanent facts stay.\n\n"

// deepMessages asks for the operations on the facts of the files that
// shown admits (nil: all), numbered by file (S, U, M) and position in it:
// one call of a pass (deepGroups cuts a scope too big for one call). size
// and target are the whole memory's; over is what this call is asked to
// free (its share of size - target).
func deepMessages(files []*deepFile, shown func(id string) bool, today time.Time, size, target, over int, stronger bool) []llm.Message {
	var b strings.Builder
	facts := 0
	for _, f := range files {
		facts += len(f.f.Facts())
	}
	// What a fact costs on average, to say how many facts over is.
	perFact := 1
	if facts > 0 {
		perFact = max(1, size/facts)
	}
	b.WriteString("## Deep Dream\n")
	if stronger && target > 0 {
		fmt.Fprintf(&b, deepStronger, over, (over+perFact-1)/perFact)
	}
	fmt.Fprintf(&b, "Today: %s\n", today.Format("2006-01-02 (Monday)"))
	if target > 0 {
		fmt.Fprintf(&b, "Size: %d tokens; target: at most %d tokens.", size, target)
		if over > 0 {
			fmt.Fprintf(&b, " Free at least %d tokens (about %d facts).", over, (over+perFact-1)/perFact)
		}
		b.WriteByte('\n')
	}
	for _, f := range files {
		idx := f.f.Facts()
		header := false
		for n, i := range idx {
			id := deepFileIDs[f.rel] + strconv.Itoa(n+1)
			if shown != nil && !shown(id) {
				continue
			}
			if !header {
				fmt.Fprintf(&b, "\n## %s\n", f.rel)
				header = true
			}
			b.WriteString(deepLine(id, f.f.Items[i].Line))
		}
	}
	return []llm.Message{
		{Role: llm.RoleSystem, Content: deepGuidance + "\n\n" + deepRules},
		{Role: llm.RoleUser, Content: b.String()},
	}
}

// deepLine is a fact as the deep Dream's prompt lists it.
func deepLine(id string, l memline.Line) string {
	when := l.Date
	if when == "" {
		when = "undated"
	}
	return fmt.Sprintf("%s [%s %s] %s\n", id, l.Effective(), when, strings.TrimSpace(l.Text))
}

// deepOp is one operation of the model's answer.
type deepOp struct {
	verb string // opMerge, opReplace, opRetire or opMove
	ids  []string
	text string // the merged fact
	with string // the line a REPLACE keeps
}

// The deep Dream's operations.
const (
	opMerge   = "MERGE"
	opReplace = "REPLACE"
	opRetire  = "RETIRE"
	opMove    = "MOVE"
)

// parseDeep reads the model's operations; lines that are none are
// ignored (a list marker or emphasis around one is accepted).
func parseDeep(out string) []deepOp {
	var ops []deepOp
	for _, raw := range strings.Split(out, "\n") {
		line := strings.TrimSpace(raw)
		line = strings.TrimLeft(line, "-*0123456789. ")
		line = strings.ReplaceAll(line, "**", "")
		verb, rest, _ := strings.Cut(line, " ")
		switch verb = strings.ToUpper(verb); verb {
		case opMove, opRetire:
			ops = append(ops, deepOp{verb: verb, ids: deepIDs(rest)})
		case opMerge:
			ids, text, ok := strings.Cut(rest, ":")
			text = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "- "))
			if ok && text != "" {
				ops = append(ops, deepOp{verb: verb, ids: deepIDs(ids), text: text})
			}
		case opReplace:
			ids := deepIDs(rest)
			if n := len(ids); n >= 3 && ids[n-2] == "WITH" {
				ops = append(ops, deepOp{verb: verb, ids: ids[:n-2], with: ids[n-1]})
			}
		}
	}
	return ops
}

func deepIDs(s string) []string {
	return strings.FieldsFunc(strings.ToUpper(s), func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })
}

// deepCall asks the model for the operations of one call of a pass, on
// the facts shown admits; an operation naming a fact it was not shown is
// dropped (refused counts them).
func (d *Dreamer) deepCall(ctx context.Context, files []*deepFile, shown func(id string) bool, today time.Time, size, target, over int, stronger bool) (ops []deepOp, refused int, usage llm.Usage, err error) {
	resp, err := d.model.Chat(ctx, llm.Request{
		Model:    d.cfg.Model,
		Messages: deepMessages(files, shown, today, size, target, over, stronger),
		Purpose:  llm.PurposeDreamAnalysis,
		CacheKey: cacheKeyDeep,
	})
	if err != nil {
		return nil, 0, resp.Usage, err
	}
	if resp.FinishReason == llm.FinishLength {
		// A cut answer's last operation may be cut too; the whole ones
		// stand.
		d.log.Info("deep Dream: the model's answer was cut at its output limit")
	}
	ops = parseDeep(resp.Content)
	if len(ops) == 0 && !strings.Contains(strings.ToUpper(resp.Content), "DONE") {
		return nil, 0, resp.Usage, errors.New("the deep Dream's answer holds no operation")
	}
	if shown != nil {
		for i := range ops {
			kept := ops[i].ids[:0]
			for _, id := range ops[i].ids {
				if shown(id) {
					kept = append(kept, id)
				} else {
					refused++
				}
			}
			ops[i].ids = kept
		}
	}
	return ops, refused, resp.Usage, nil
}

// deepApplied is what the operations of a pass did.
type deepApplied struct {
	// merged counts the lines merged away (n lines into one: n-1);
	// replaced the lines a later one replaced; moved and retired those
	// the model moved out or retired; refused the ids refused.
	merged, replaced, moved, retired, refused int
	cold                                      []coldSection
}

// deepRef is a numbered fact of the deep Dream's prompt.
type deepRef struct {
	f    *deepFile
	item int
}

func (r deepRef) line() memline.Line { return r.f.f.Items[r.item].Line }

// deepApply applies a pass's operations to the files.
type deepApply struct {
	refs  map[string]deepRef
	taken idSet
	used  map[string]bool
	gone  map[*deepFile]map[int]bool
	cold  map[*deepFile]map[memline.Reason][]memline.Line
	res   deepApplied
}

// applyDeep applies the operations to the files (every fact carries an
// id; taken holds the scope's, for the lines a merge writes). A merge
// writes the new fact in place of the first line it names (the best
// priority of the lines, their newest date, their sources; replaces:
// them) and sends every line it names to cold memory, superseded by it; a
// replace sends the older lines there, superseded by the one it keeps
// (which names them in replaces:); a move or a retirement sends the lines
// there as they are, refusing permanent ones. Each cold line says why. An
// unknown id, or a line already used, is refused.
func applyDeep(files []*deepFile, ops []deepOp, taken idSet) deepApplied {
	a := &deepApply{refs: map[string]deepRef{}, taken: taken, used: map[string]bool{},
		gone: map[*deepFile]map[int]bool{}, cold: map[*deepFile]map[memline.Reason][]memline.Line{}}
	for _, f := range files {
		for n, i := range f.f.Facts() {
			a.refs[deepFileIDs[f.rel]+strconv.Itoa(n+1)] = deepRef{f, i}
		}
	}
	for _, op := range ops {
		a.apply(op)
	}
	for _, f := range files {
		if len(a.gone[f]) > 0 {
			kept := f.f.Items[:0:0]
			for i, it := range f.f.Items {
				if !a.gone[f][i] {
					kept = append(kept, it)
				}
			}
			f.f.Items = kept
		}
		for _, why := range []memline.Reason{memline.Merged, memline.Replaced, memline.Retired, memline.Moved} {
			if lines := a.cold[f][why]; len(lines) > 0 {
				a.res.cold = append(a.res.cold, coldSection{from: f.rel, why: why, lines: lines})
			}
		}
	}
	return a.res
}

// take returns the lines ids name that op may use, marking them used.
func (a *deepApply) take(op deepOp) []deepRef {
	var rs []deepRef
	for _, id := range op.ids {
		r, ok := a.refs[id]
		switch {
		case !ok || a.used[id] || id == op.with:
			a.res.refused++
			continue
		case (op.verb == opMove || op.verb == opRetire) && r.line().Effective() == memline.Permanent:
			a.res.refused++
			continue
		}
		a.used[id] = true
		rs = append(rs, r)
	}
	return rs
}

func (a *deepApply) apply(op deepOp) {
	var keep deepRef
	if op.verb == opReplace {
		r, ok := a.refs[op.with]
		if !ok || a.used[op.with] {
			a.res.refused += len(op.ids) + 1
			return
		}
		keep = r
	}
	rs := a.take(op)
	if len(rs) == 0 {
		return
	}
	switch op.verb {
	case opMerge:
		var lines []memline.Line
		for _, r := range rs {
			lines = append(lines, r.line())
		}
		merged := mergedLine(lines, op.text)
		merged.ID = memline.NewID(merged.Seed(), a.taken.has)
		a.taken[merged.ID] = true
		for _, r := range rs {
			a.out(r, memline.Merged, merged.ID)
		}
		rs[0].f.f.Items[rs[0].item].SetLine(merged)
		delete(a.gone[rs[0].f], rs[0].item)
		a.res.merged += len(rs) - 1
	case opReplace:
		a.used[op.with] = true
		kept := keep.line()
		for _, r := range rs {
			kept.Replaces = appendNew(kept.Replaces, r.line().ID)
			a.out(r, memline.Replaced, kept.ID)
		}
		keep.f.f.Items[keep.item].SetLine(kept)
		a.res.replaced += len(rs)
	case opRetire:
		for _, r := range rs {
			a.out(r, memline.Retired, "")
		}
		a.res.retired += len(rs)
	default:
		for _, r := range rs {
			a.out(r, memline.Moved, "")
		}
		a.res.moved += len(rs)
	}
}

// out sends the line r to cold memory for why, superseded by by ("": it
// still holds).
func (a *deepApply) out(r deepRef, why memline.Reason, by string) {
	l := r.line()
	l.SupersededBy = by
	if a.cold[r.f] == nil {
		a.cold[r.f] = map[memline.Reason][]memline.Line{}
	}
	a.cold[r.f][why] = append(a.cold[r.f][why], l)
	if a.gone[r.f] == nil {
		a.gone[r.f] = map[int]bool{}
	}
	a.gone[r.f][r.item] = true
}

// mergedLine is the line a merge writes: text, with the best priority of
// the lines (when any has one), their newest date and their sources.
func mergedLine(lines []memline.Line, text string) memline.Line {
	out := memline.Line{Indent: lines[0].Indent, Bullet: lines[0].Bullet, Text: strings.TrimSpace(text)}
	best := -1
	for _, l := range lines {
		if l.Priority != "" && (best < 0 || l.Priority.Rank() < best) {
			out.Priority, best = l.Priority, l.Priority.Rank()
		}
		if l.Date > out.Date {
			out.Date = l.Date
		}
		for _, s := range l.Sources {
			if !slices.Contains(out.Sources, s) {
				out.Sources = append(out.Sources, s)
			}
		}
	}
	slices.Sort(out.Sources)
	if n := len(out.Sources); n > memline.MaxSources {
		out.Sources = out.Sources[n-memline.MaxSources:]
	}
	for _, l := range lines {
		if l.ID != "" {
			out.Replaces = appendNew(out.Replaces, l.ID)
		}
	}
	return out
}

// addDeep adds a deep Dream of scope s to the run's report.
func (r *Report) addDeep(s audience.Scope, dr DeepReport) {
	for _, t := range []*Report{r, r.scope(s)} {
		t.Deep = append(t.Deep, dr)
		t.ColdLines += dr.ColdLines
		t.Usage = t.Usage.Add(dr.Usage)
		t.Calls += dr.Calls
		// A deep commit is told apart (Deep), not among the batches'
		// Commits; a run that made one has not found "nothing new".
		if dr.Commit != "" && (t.Outcome == OutcomeNothingNew || t.Outcome == "") {
			t.Outcome = OutcomeCompleted
		}
	}
}

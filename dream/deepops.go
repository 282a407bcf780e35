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
- When two facts disagree, the one confirmed later is true: merge them into one line that says the later value.
- Move out what is no longer true or no longer useful: a past plan, a finished task, a fact a later one made pointless.
- Never move out a permanent fact. Merge it only with facts that say the same thing.
- Keep each fact short and self-contained; say who or what it is about.
- Lines moved out are not lost: they go to cold memory, where the assistant can still search them.`

const deepRules = `## Answer format (required)
One operation per line and nothing else:
MERGE <id> <id> …: <the one fact that replaces them>
MOVE <id> <id> …
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
	merge bool
	ids   []string
	text  string // the merged fact
}

// parseDeep reads the model's operations; lines that are none are
// ignored (a list marker or emphasis around one is accepted).
func parseDeep(out string) []deepOp {
	var ops []deepOp
	for _, raw := range strings.Split(out, "\n") {
		line := strings.TrimSpace(raw)
		line = strings.TrimLeft(line, "-*0123456789. ")
		line = strings.ReplaceAll(line, "**", "")
		verb, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "MOVE":
			ops = append(ops, deepOp{ids: deepIDs(rest)})
		case "MERGE":
			ids, text, ok := strings.Cut(rest, ":")
			text = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "- "))
			if ok && text != "" {
				ops = append(ops, deepOp{merge: true, ids: deepIDs(ids), text: text})
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
	merged, reviewed, refused int
	cold                      []coldSection
}

// applyDeep applies the operations to the files: a merge writes the new
// fact in place of the first line it names (the best priority of the
// lines, their newest date, their sources) and sends every line it names
// to cold memory; a move sends the lines to cold memory, refusing
// permanent ones. An unknown id, or a line already used, is refused.
func applyDeep(files []*deepFile, ops []deepOp) deepApplied {
	type ref struct {
		f    *deepFile
		item int
	}
	refs := map[string]ref{}
	for _, f := range files {
		for n, i := range f.f.Facts() {
			refs[deepFileIDs[f.rel]+strconv.Itoa(n+1)] = ref{f, i}
		}
	}
	var res deepApplied
	used := map[string]bool{}
	gone := map[*deepFile]map[int]bool{}
	cold := map[*deepFile][]memline.Line{}
	for _, op := range ops {
		var rs []ref
		for _, id := range op.ids {
			r, ok := refs[id]
			switch {
			case !ok || used[id]:
				res.refused++
				continue
			case !op.merge && r.f.f.Items[r.item].Line.Effective() == memline.Permanent:
				res.refused++
				continue
			}
			used[id] = true
			rs = append(rs, r)
		}
		if len(rs) == 0 {
			continue
		}
		var lines []memline.Line
		for _, r := range rs {
			l := r.f.f.Items[r.item].Line
			lines = append(lines, l)
			cold[r.f] = append(cold[r.f], l)
		}
		out := rs
		if op.merge {
			rs[0].f.f.Items[rs[0].item].SetLine(mergedLine(lines, op.text))
			out = rs[1:]
			res.merged += len(rs) - 1
		} else {
			res.reviewed += len(rs)
		}
		for _, r := range out {
			if gone[r.f] == nil {
				gone[r.f] = map[int]bool{}
			}
			gone[r.f][r.item] = true
		}
	}
	for _, f := range files {
		if len(gone[f]) > 0 {
			kept := f.f.Items[:0:0]
			for i, it := range f.f.Items {
				if !gone[f][i] {
					kept = append(kept, it)
				}
			}
			f.f.Items = kept
		}
		if len(cold[f]) > 0 {
			res.cold = append(res.cold, coldSection{from: f.rel, reason: reasonReviewed, lines: cold[f]})
		}
	}
	return res
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

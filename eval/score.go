package eval

import (
	"fmt"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/textcut"
)

// Check kinds, one per score of the report.
const (
	// KindFact: an expected fact is in a memory file (contains, matches).
	KindFact = "fact"
	// KindCorrection: an old or withdrawn fact is gone from the file that
	// held it (absent with a file).
	KindCorrection = "correction"
	// KindForbidden: something is written nowhere in memory (absent
	// without a file); the lines that hold it are counted.
	KindForbidden = "forbidden"
	// KindQuestion: the answer to a question contains the expected text.
	KindQuestion = "question"
)

// Purposes of model use in the report.
const (
	PurposeChat    = "chat"
	PurposeArchive = "archive"
	PurposeDream   = "dream"
)

// Purposes lists them in report order.
var Purposes = []string{PurposeChat, PurposeArchive, PurposeDream}

// Tokens is what one purpose cost.
type Tokens struct {
	Prompt     int `json:"prompt"`
	Completion int `json:"completion"`
	// Cached is the part of Prompt the provider served from its prompt
	// cache, as it reported it.
	Cached int `json:"cached"`
	Calls  int `json:"calls"`
}

// Total is prompt plus completion tokens.
func (t Tokens) Total() int { return t.Prompt + t.Completion }

// Add returns the sum.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{Prompt: t.Prompt + o.Prompt, Completion: t.Completion + o.Completion, Cached: t.Cached + o.Cached, Calls: t.Calls + o.Calls}
}

// Outcome is what playing a scenario left behind, as the Player saw it.
type Outcome struct {
	// Files are the memory files after Dream (workspace-relative path ->
	// text; a missing file is "").
	Files map[string]string
	// Answers are the replies to the questions, in order ("" when the turn
	// failed).
	Answers []string
	// Usage is per purpose (PurposeChat, PurposeArchive, PurposeDream).
	Usage map[string]Tokens
	// Problems are one-sentence notes on what went wrong in the pipeline
	// (a failed turn, a failed Dream run); they do not fail the scenario by
	// themselves, the checks do.
	Problems []string
}

// Check is one checked expectation or question.
type Check struct {
	Kind   string `json:"kind"`
	What   string `json:"what"`
	Passed bool   `json:"passed"`
	// Detail says what was found: the offending lines, the answer.
	Detail string `json:"detail,omitempty"`
	// Lines is the number of memory-file lines holding forbidden text.
	Lines int `json:"lines,omitempty"`
}

// Ratio is passed out of total checks of a kind.
type Ratio struct {
	Passed int `json:"passed"`
	Total  int `json:"total"`
}

// Percent is the ratio in percent; ok is false when there were no checks.
func (r Ratio) Percent() (float64, bool) {
	if r.Total == 0 {
		return 0, false
	}
	return 100 * float64(r.Passed) / float64(r.Total), true
}

func (r Ratio) add(o Ratio) Ratio { return Ratio{r.Passed + o.Passed, r.Total + o.Total} }

// Result is one scenario's score in one run.
type Result struct {
	Scenario    string `json:"scenario"`
	Run         int    `json:"run"`
	Passed      bool   `json:"passed"`
	Facts       Ratio  `json:"facts"`
	Corrections Ratio  `json:"corrections"`
	// Forbidden counts the memory-file lines holding text that must be
	// nowhere (invented or withdrawn details).
	Forbidden int               `json:"forbiddenLines"`
	Questions Ratio             `json:"questions"`
	Usage     map[string]Tokens `json:"tokens"`
	Calls     int               `json:"calls"`
	Wall      time.Duration     `json:"-"`
	Seconds   float64           `json:"seconds"`
	Checks    []Check           `json:"checks"`
	Problems  []string          `json:"problems,omitempty"`
	// Error is set when the scenario could not be played at all.
	Error string `json:"error,omitempty"`
}

// Score checks an outcome against the scenario's expectations.
func Score(sc Scenario, out Outcome) Result {
	r := Result{Scenario: sc.Name, Usage: map[string]Tokens{}, Problems: out.Problems}
	for _, p := range Purposes {
		u := out.Usage[p]
		r.Usage[p] = u
		r.Calls += u.Calls
	}
	for _, e := range sc.Expect {
		c := checkExpect(e, out.Files)
		switch c.Kind {
		case KindFact:
			r.Facts = r.Facts.add(ratio(c.Passed))
		case KindCorrection:
			r.Corrections = r.Corrections.add(ratio(c.Passed))
		case KindForbidden:
			r.Forbidden += c.Lines
		}
		r.Checks = append(r.Checks, c)
	}
	for i, q := range sc.Questions {
		answer := ""
		if i < len(out.Answers) {
			answer = out.Answers[i]
		}
		c := Check{Kind: KindQuestion, What: fmt.Sprintf("answer%s to %q contains %q", in(q.Audience), q.Ask, q.Expect),
			Passed: containsFold(answer, q.Expect), Detail: "answer: " + oneLine(answer, 200)}
		if q.Absent != "" {
			c.What = fmt.Sprintf("answer%s to %q never says %q", in(q.Audience), q.Ask, q.Absent)
			c.Passed = answer != "" && !containsFold(answer, q.Absent)
		}
		r.Questions = r.Questions.add(ratio(c.Passed))
		r.Checks = append(r.Checks, c)
	}
	r.Passed = true
	for _, c := range r.Checks {
		r.Passed = r.Passed && c.Passed
	}
	return r
}

func ratio(passed bool) Ratio {
	if passed {
		return Ratio{1, 1}
	}
	return Ratio{0, 1}
}

// in names a check's audience in its description; "" for the operator's.
func in(a audience.Audience) string {
	if a.IsZero() {
		return ""
	}
	return " in " + a.String()
}

// checkExpect runs one expectation on the memory files its audience may
// read.
func checkExpect(e Expect, files map[string]string) Check {
	where := e.File
	names := []string{e.File}
	if e.File == "" {
		where = "memory"
		names = MemoryFiles
	}
	where += in(e.Audience)
	var targets []string
	for _, n := range names {
		targets = append(targets, ScopeFiles(e.Audience, n)...)
	}
	switch {
	case e.Contains != "":
		c := Check{Kind: KindFact, What: fmt.Sprintf("%s contains %q", where, e.Contains)}
		for _, f := range targets {
			if containsFold(files[f], e.Contains) {
				c.Passed = true
			}
		}
		return c
	case e.Matches != "":
		c := Check{Kind: KindFact, What: fmt.Sprintf("%s matches /%s/", where, e.Matches)}
		for _, f := range targets {
			if e.re != nil && e.re.MatchString(files[f]) {
				c.Passed = true
			}
		}
		return c
	default:
		kind := KindCorrection
		if e.File == "" {
			kind = KindForbidden
		}
		c := Check{Kind: kind, What: fmt.Sprintf("%s never says %q", where, e.Absent)}
		var found []string
		for _, f := range targets {
			for line := range strings.SplitSeq(files[f], "\n") {
				if containsFold(line, e.Absent) {
					found = append(found, f+": "+oneLine(line, 120))
				}
			}
		}
		c.Lines = len(found)
		c.Passed = len(found) == 0
		if !c.Passed {
			c.Detail = "found: " + strings.Join(found, " | ")
		}
		return c
	}
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// oneLine squeezes s to one line of at most n runes, for the report.
func oneLine(s string, n int) string {
	s, _ = textcut.Limit{Max: n, Mark: "…", MarkWithin: true}.Cut(strings.Join(strings.Fields(s), " "))
	return s
}

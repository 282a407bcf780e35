package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Stat is one figure over the runs: mean, lowest and highest.
type Stat struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

func statOf(vs []float64) Stat {
	if len(vs) == 0 {
		return Stat{}
	}
	s := Stat{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, v := range vs {
		s.Mean += v
		s.Min = min(s.Min, v)
		s.Max = max(s.Max, v)
	}
	s.Mean /= float64(len(vs))
	return s
}

// Summary is one scenario, or all of them, over the runs. A percentage is
// nil when there was nothing of its kind to check.
type Summary struct {
	Scenario   string `json:"scenario,omitempty"`
	Runs       int    `json:"runs"`
	PassedRuns int    `json:"passedRuns"`
	// Facts, Corrections and Questions are percentages of checks passed.
	Facts       *Stat `json:"factsRecalledPercent"`
	Corrections *Stat `json:"correctionsAppliedPercent"`
	Questions   *Stat `json:"questionAccuracyPercent"`
	// Forbidden is the count of memory-file lines holding forbidden text.
	Forbidden Stat `json:"forbiddenLines"`
	// Tokens is prompt+completion tokens per purpose.
	Tokens map[string]Stat `json:"tokens"`
	// Cached is the prompt tokens of every purpose that the provider
	// served from its prompt cache.
	Cached  Stat `json:"cachedTokens"`
	Calls   Stat `json:"calls"`
	Seconds Stat `json:"seconds"`
}

// Report is the whole evaluation.
type Report struct {
	Runs      int       `json:"runs"`
	Passed    bool      `json:"passed"`
	Scenarios []Summary `json:"scenarios"`
	// Overall pools every scenario of a run, then spreads over the runs.
	Overall Summary  `json:"overall"`
	Results []Result `json:"results"`
}

// Summarize builds the report from the per-run results.
func Summarize(scs []Scenario, runs int, results []Result) Report {
	rep := Report{Runs: runs, Results: results, Passed: len(results) == len(scs)*runs && len(results) > 0}
	for _, r := range results {
		rep.Passed = rep.Passed && r.Passed
	}
	for _, sc := range scs {
		var mine []Result
		for _, r := range results {
			if r.Scenario == sc.Name {
				mine = append(mine, r)
			}
		}
		s := summarize(mine)
		s.Scenario = sc.Name
		rep.Scenarios = append(rep.Scenarios, s)
	}
	// Overall: one pooled result per run.
	var pooled []Result
	for run := 1; run <= runs; run++ {
		var p Result
		p.Usage = map[string]Tokens{}
		p.Passed = true
		n := 0
		for _, r := range results {
			if r.Run != run {
				continue
			}
			n++
			p.Passed = p.Passed && r.Passed
			p.Facts = p.Facts.add(r.Facts)
			p.Corrections = p.Corrections.add(r.Corrections)
			p.Questions = p.Questions.add(r.Questions)
			p.Forbidden += r.Forbidden
			for k, u := range r.Usage {
				p.Usage[k] = p.Usage[k].Add(u)
			}
			p.Calls += r.Calls
			p.Seconds += r.Seconds
		}
		if n > 0 {
			pooled = append(pooled, p)
		}
	}
	rep.Overall = summarize(pooled)
	return rep
}

func summarize(rs []Result) Summary {
	s := Summary{Runs: len(rs), Tokens: map[string]Stat{}}
	var facts, corr, qs, forb, calls, secs, cached []float64
	tokens := map[string][]float64{}
	for _, r := range rs {
		if r.Passed {
			s.PassedRuns++
		}
		if v, ok := r.Facts.Percent(); ok {
			facts = append(facts, v)
		}
		if v, ok := r.Corrections.Percent(); ok {
			corr = append(corr, v)
		}
		if v, ok := r.Questions.Percent(); ok {
			qs = append(qs, v)
		}
		forb = append(forb, float64(r.Forbidden))
		calls = append(calls, float64(r.Calls))
		secs = append(secs, r.Seconds)
		c := 0
		for _, p := range Purposes {
			tokens[p] = append(tokens[p], float64(r.Usage[p].Total()))
			c += r.Usage[p].Cached
		}
		cached = append(cached, float64(c))
	}
	s.Facts, s.Corrections, s.Questions = optStat(facts), optStat(corr), optStat(qs)
	s.Forbidden, s.Calls, s.Seconds, s.Cached = statOf(forb), statOf(calls), statOf(secs), statOf(cached)
	for _, p := range Purposes {
		s.Tokens[p] = statOf(tokens[p])
	}
	return s
}

func optStat(vs []float64) *Stat {
	if len(vs) == 0 {
		return nil
	}
	s := statOf(vs)
	return &s
}

// WriteJSON writes the report for machines.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for people: one row per scenario and an
// overall row, then what failed.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tpassed\tfacts\tcorrections\tforbidden\tquestions\tchat tok\tarchive tok\tdream tok\tcached\tcalls\ttime")
	row := func(name string, s Summary) {
		fmt.Fprintf(tw, "%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, s.PassedRuns, s.Runs,
			pct(s.Facts, r.Runs), pct(s.Corrections, r.Runs), count(s.Forbidden, r.Runs, "%.0f"), pct(s.Questions, r.Runs),
			tok(s.Tokens[PurposeChat], r.Runs), tok(s.Tokens[PurposeArchive], r.Runs), tok(s.Tokens[PurposeDream], r.Runs),
			tok(s.Cached, r.Runs), count(s.Calls, r.Runs, "%.0f"), count(s.Seconds, r.Runs, "%.1fs"))
	}
	for _, s := range r.Scenarios {
		row(s.Scenario, s)
	}
	row("overall", r.Overall)
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Runs > 1 {
		fmt.Fprintf(w, "\n%d runs: each figure is the mean, with the lowest and highest run in brackets.\n", r.Runs)
	}
	var failed []string
	for _, res := range r.Results {
		where := res.Scenario
		if r.Runs > 1 {
			where = fmt.Sprintf("%s (run %d)", res.Scenario, res.Run)
		}
		if res.Error != "" {
			failed = append(failed, fmt.Sprintf("  %s: not played: %s", where, res.Error))
		}
		for _, c := range res.Checks {
			if c.Passed {
				continue
			}
			line := fmt.Sprintf("  %s: %s %s", where, c.Kind, c.What)
			if c.Detail != "" {
				line += " — " + c.Detail
			}
			failed = append(failed, line)
		}
		for _, p := range res.Problems {
			failed = append(failed, fmt.Sprintf("  %s: note: %s", where, p))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\nFailed checks and notes:\n%s\n", strings.Join(failed, "\n"))
	}
	passed := 0
	for _, s := range r.Scenarios {
		if s.Runs > 0 && s.PassedRuns == s.Runs {
			passed++
		}
	}
	_, err := fmt.Fprintf(w, "\n%d of %d scenarios passed every check.\n", passed, len(r.Scenarios))
	return err
}

func pct(s *Stat, runs int) string {
	if s == nil {
		return "–"
	}
	if runs <= 1 || s.Min == s.Max {
		return fmt.Sprintf("%.0f%%", s.Mean)
	}
	return fmt.Sprintf("%.0f%% (%.0f–%.0f)", s.Mean, s.Min, s.Max)
}

func count(s Stat, runs int, format string) string {
	if runs <= 1 || s.Min == s.Max {
		return fmt.Sprintf(format, s.Mean)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.Mean, s.Min, s.Max)
}

func tok(s Stat, runs int) string {
	if runs <= 1 || s.Min == s.Max {
		return human(s.Mean)
	}
	return fmt.Sprintf("%s (%s–%s)", human(s.Mean), human(s.Min), human(s.Max))
}

// human writes a token count briefly: 950, 12.3K, 4.1M.
func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fK", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fK", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

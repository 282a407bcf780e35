package eval

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Player plays one scenario through the pipeline in a throw-away workspace
// and returns what it left behind.
type Player interface {
	// Play returns an error only when the scenario could not be played at
	// all (a temp directory, a workspace); what the model does badly shows
	// in the Outcome and its checks.
	Play(ctx context.Context, sc Scenario) (Outcome, error)
}

// Options are how Run runs.
type Options struct {
	// Runs repeats every scenario (models are not deterministic); < 1 is 1.
	Runs int
	// Progress receives one line per scenario played; nil discards.
	Progress io.Writer
	// Now is the clock for wall times; nil is time.Now.
	Now func() time.Time
}

// Run plays every scenario Runs times and scores it. It stops early, with
// what it has, when ctx ends.
func Run(ctx context.Context, scs []Scenario, p Player, opt Options) Report {
	if opt.Runs < 1 {
		opt.Runs = 1
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	var results []Result
	for run := 1; run <= opt.Runs && ctx.Err() == nil; run++ {
		for i, sc := range scs {
			if ctx.Err() != nil {
				break
			}
			start := opt.Now()
			out, err := p.Play(ctx, sc)
			r := Score(sc, out)
			if err != nil {
				r.Passed, r.Error = false, err.Error()
			}
			r.Run = run
			r.Wall = opt.Now().Sub(start)
			r.Seconds = r.Wall.Seconds()
			results = append(results, r)
			if opt.Progress != nil {
				fmt.Fprintln(opt.Progress, progressLine(r, i, len(scs), run, opt.Runs))
			}
		}
	}
	return Summarize(scs, opt.Runs, results)
}

func progressLine(r Result, i, n, run, runs int) string {
	prefix := fmt.Sprintf("eval: [%d/%d]", i+1, n)
	if runs > 1 {
		prefix = fmt.Sprintf("eval: run %d/%d [%d/%d]", run, runs, i+1, n)
	}
	if r.Error != "" {
		return fmt.Sprintf("%s %s: not played: %s", prefix, r.Scenario, r.Error)
	}
	passed := 0
	for _, c := range r.Checks {
		if c.Passed {
			passed++
		}
	}
	verdict := "passed"
	if !r.Passed {
		verdict = "FAILED"
	}
	return fmt.Sprintf("%s %s: %s, %d/%d checks, %d model calls, %s", prefix, r.Scenario, verdict,
		passed, len(r.Checks), r.Calls, r.Wall.Round(100*time.Millisecond))
}

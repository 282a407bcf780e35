package dream

import "time"

// Observer is told of every finished Dream run, for metrics; cmd passes
// *metrics.Metrics. It is called on the run's goroutine and must return at
// once.
type Observer interface {
	// DreamDone: a run ended with outcome (an Outcome value) after took.
	DreamDone(outcome string, took time.Duration)
}

// observe reports a run; a run refused because another was going (no
// Outcome) is not one.
func (d *Dreamer) observe(rep Report) {
	if d.obs == nil || rep.Outcome == "" {
		return
	}
	d.obs.DreamDone(string(rep.Outcome), rep.Duration)
}

package web

import (
	"fmt"
	"strconv"
	"time"

	"github.com/a-h/templ"

	"github.com/dreamgate/dreamgate/dream"
)

// How the pages word numbers, times and counts: the small functions the
// templates (*.templ) call.

// clock shows times as the pages do: in the page's zone, and how long
// ago from now.
type clock struct {
	loc *time.Location
	now time.Time
}

func (s *Server) clock() clock { return clock{loc: s.cfg.Location, now: s.now()} }

// when shows a time in the page's zone; the zero time is "—".
func (c clock) when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(c.loc).Format("2006-01-02 15:04 MST")
}

// ago says how long ago t was, roughly.
func (c clock) ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := c.now.Sub(t)
	switch {
	case d < 0:
		d = -d
		return "in " + roughly(d)
	case d < time.Minute:
		return "just now"
	default:
		return roughly(d) + " ago"
	}
}

func roughly(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "less than a minute"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return plural(int(d/time.Hour), "hour")
	default:
		return plural(int(d/(24*time.Hour)), "day")
	}
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// count is "1 entry", "2 entries", "1,200 entries".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(n) + " " + many
}

// plural1 is one when n is 1, else many.
func plural1(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// pct is a of b in whole percent, at most 100.
func pct(a, b int) int {
	if b <= 0 {
		return 0
	}
	return min(100, a*100/b)
}

// lastRunLine is the overview's account of Dream's last run after its time.
func lastRunLine(l *dream.LastRun) string {
	s := string(l.Outcome) + ", " + count(l.Entries, "entry", "entries") + " read, " + count(l.Changes, "change", "changes")
	if l.UndoneBy != "" {
		s += ", undone by " + l.UndoneBy
	}
	return s
}

// budgetLine says what a scope's hot memory costs against its budget.
func budgetLine(u *usageView) string {
	s := fmt.Sprintf("About %s of %s tokens (%d%%). ", thousands(u.Tokens), thousands(u.Budget), pct(u.Tokens, u.Budget))
	if u.Shown < u.Total {
		return s + fmt.Sprintf("The prompt shows %d of its %d lines, the most important and newest; a deep Dream will move the rest to cold memory.", u.Shown, u.Total)
	}
	return s + "The prompt shows all " + strconv.Itoa(u.Total) + " lines."
}

func factClass(l lineView) string {
	c := "fact"
	if l.Indent {
		c += " indent"
	}
	if l.Superseded != "" {
		c += " old"
	}
	return c
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// prefixed is prefix+s, or "" when s is.
func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

func commitURL(sha string) templ.SafeURL { return templ.SafeURL("/commit/" + sha) }

package web

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway/dreamtext"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm"
)

// The overview shows what /status, `dreamgate status` and /healthz
// compute, from the same sources: the health report cmd builds for
// /healthz, Dream's Status (its /status line worded by dreamtext), the
// newest Dream commit of the viewer's scopes as `dreamgate status` finds
// it, and the tokens used. A person reads their own scopes' Dream and no
// operator's detail (error classes, channel details, Dream's operator
// reasons), as /status in a chat.

// Health is what /healthz reports, as the overview shows it; cmd fills it
// from the same report.
type Health struct {
	// Status is "starting", "ok", "degraded" or "stopping".
	Status   string
	Models   []ModelHealth
	Channels []ChannelHealth
	// Tools are the MCP servers.
	Tools []ToolHealth
}

// ModelHealth is one model of one purpose.
type ModelHealth struct {
	// Purpose is its chain's ("chat", "archive", "dream"); "" for the one
	// model that serves every purpose.
	Purpose string
	Name    string
	// State is "unknown" (no call yet), "reachable", "unreachable" or
	// "cooling" (passed over until Until after a failure).
	State string
	// Served: it answered its chain's last call.
	Served bool
	// LastError is the class of its last failure (llm's classes, no text
	// from the provider), with its time.
	LastError   string
	LastErrorAt time.Time
	Until       time.Time
}

// ChannelHealth is one channel's connection.
type ChannelHealth struct {
	Name, State string
	// Detail says why it is not connected (the operator's).
	Detail string
	Since  time.Time
}

// ToolHealth is one MCP server.
type ToolHealth struct {
	Name, State string
	// Problem says why it is down, in words safe to show anyone.
	Problem string
}

type overviewData struct {
	Health    Health
	HasHealth bool
	Usage     []usageRow
	Dream     dreamPart
	Problems  []problem
}

type usageRow struct {
	Purpose            string
	In, Out, Cached, N int
}

type dreamPart struct {
	// Off says why Dream does not run ("" when it does).
	Off string
	// Line is /status's Dream line.
	Line           string
	Cron, Timezone string
	Status         dream.Status
	// LastCommit is the newest Dream commit of the viewer's scopes.
	LastCommit *gitstore.Commit
	// PerScope: the operator sees each scope's backlog and last run.
	PerScope bool
}

// problem is one recent thing that went wrong.
type problem struct {
	When time.Time
	What string
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request, v *Viewer) {
	d := overviewData{}
	if s.deps.Health != nil {
		d.Health, d.HasHealth = s.deps.Health(), true
		if !v.Operator {
			d.Health = publicHealth(d.Health)
		}
	}
	// The gateway's tokens are every audience's conversations' and
	// Dream's: the operator's to read, as at the terminal's /status.
	if s.deps.Usage != nil && v.Operator {
		d.Usage = usageRows(s.deps.Usage())
	}
	d.Dream = s.dreamPart(v)
	d.Problems = problems(d.Health, d.Dream, v.Operator)
	s.render(w, r, v, http.StatusOK, "Overview", "overview", overviewPage(s.clock(), d))
}

func (s *Server) dreamPart(v *Viewer) dreamPart {
	p := dreamPart{Cron: s.cfg.DreamCron, Timezone: s.cfg.DreamTimezone, PerScope: v.Operator}
	if s.deps.Dream == nil {
		p.Off = s.deps.DreamOff
		if p.Off == "" {
			p.Off = "Dream is off (dream.enabled is false)."
		}
		return p
	}
	st := s.deps.Dream.Status(v.dreamScopes(s.deps.Memory))
	if !v.Operator {
		st = st.Public()
	}
	p.Status = st
	p.Line = dreamtext.Status(st, s.now())
	if s.deps.Repo != nil {
		cs, err := s.deps.Repo.LogBefore("", 1, dream.SubjectPrefix, v.keep(s.deps.Memory))
		if err != nil {
			s.log.Warn("web: newest Dream commit", "err", err)
		} else if len(cs) == 1 {
			p.LastCommit = &cs[0]
		}
	}
	return p
}

// publicHealth is the report without the operator's detail, as /status
// tells a person that a model is not answering but not why.
func publicHealth(h Health) Health {
	out := Health{Status: h.Status}
	for _, m := range h.Models {
		m.LastError, m.LastErrorAt = "", time.Time{}
		out.Models = append(out.Models, m)
	}
	for _, c := range h.Channels {
		c.Detail = ""
		out.Channels = append(out.Channels, c)
	}
	return out
}

func usageRows(u map[string]llm.Usage) []usageRow {
	var out []usageRow
	for p, v := range u {
		out = append(out, usageRow{Purpose: p, In: v.PromptTokens, Out: v.CompletionTokens, Cached: v.CachedTokens, N: v.Calls})
	}
	slices.SortFunc(out, func(a, b usageRow) int {
		if a.Purpose < b.Purpose {
			return -1
		}
		if a.Purpose > b.Purpose {
			return 1
		}
		return 0
	})
	return out
}

// problems gathers what went wrong recently, newest first: models that
// failed, channels not connected, tools down, Dream's failed run and
// skipped batches.
func problems(h Health, d dreamPart, operator bool) []problem {
	var out []problem
	for _, m := range h.Models {
		name := m.Name
		if m.Purpose != "" {
			name += " (" + m.Purpose + ")"
		}
		switch {
		case m.State == "unreachable" && operator:
			out = append(out, problem{m.LastErrorAt, fmt.Sprintf("Model %s is unreachable: its last call failed (%s).", name, m.LastError)})
		case m.State == "unreachable":
			out = append(out, problem{m.LastErrorAt, fmt.Sprintf("Model %s is not answering right now; the operator has been told.", name)})
		case m.State == "cooling":
			out = append(out, problem{m.LastErrorAt, fmt.Sprintf("Model %s is passed over until %s after a failure.", name, m.Until.Format("15:04"))})
		}
	}
	for _, c := range h.Channels {
		if c.State != "connected" && c.State != "stopped" {
			what := fmt.Sprintf("Channel %s is %s.", c.Name, c.State)
			if c.Detail != "" {
				what = fmt.Sprintf("Channel %s is %s: %s.", c.Name, c.State, c.Detail)
			}
			out = append(out, problem{c.Since, what})
		}
	}
	for _, t := range h.Tools {
		if t.State == "down" {
			what := "MCP server " + t.Name + " is down."
			if t.Problem != "" {
				what = "MCP server " + t.Name + " is down: " + t.Problem + "."
			}
			out = append(out, problem{What: what})
		}
	}
	if l := d.Status.Last; l != nil && (l.Outcome == dream.OutcomeFailed || l.Outcome == dream.OutcomeSkipped || l.Outcome == dream.OutcomePartial) {
		reason := l.Reason
		if reason == "" {
			reason = string(l.Outcome)
		}
		out = append(out, problem{l.When, "Dream " + string(l.Outcome) + ": " + reason})
	}
	for _, k := range d.Status.Skips {
		out = append(out, problem{k.When, fmt.Sprintf("Dream skipped history %d-%d after repeated failures: %s", k.First, k.Last, k.Reason)})
	}
	slices.SortStableFunc(out, func(a, b problem) int { return b.When.Compare(a.When) })
	return out
}

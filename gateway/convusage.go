package gateway

import (
	"context"
	"sync"

	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/llm"
)

// convUsage counts the tokens of each conversation's model calls since
// the gateway started, by session key and purpose: its chat turns and the
// archives of its messages. /status in a conversation shows its own
// count; the gateway's totals (Deps.Usage), which every audience's calls
// and Dream's make, are the operator's.
type convUsage struct {
	mu sync.Mutex
	by map[string]map[string]llm.Usage
}

// add counts one call's (or one report's) usage for the conversation key.
func (c *convUsage) add(key, purpose string, u llm.Usage) {
	if u == (llm.Usage{}) {
		return
	}
	if u.Calls == 0 {
		u.Calls = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]map[string]llm.Usage{}
	}
	if c.by[key] == nil {
		c.by[key] = map[string]llm.Usage{}
	}
	c.by[key][purpose] = c.by[key][purpose].Add(u)
}

// of returns a copy of the conversation key's counts.
func (c *convUsage) of(key string) map[string]llm.Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]llm.Usage, len(c.by[key]))
	for p, u := range c.by[key] {
		out[p] = u
	}
	return out
}

// countedConsolidator counts what the archive calls of a conversation
// cost, as its reports say.
type countedConsolidator struct {
	Consolidator
	usage *convUsage
}

func (c countedConsolidator) Before(ctx context.Context, s consolidator.Session, p consolidator.Prompt) (consolidator.Prompt, consolidator.Report, error) {
	p, rep, err := c.Consolidator.Before(ctx, s, p)
	c.usage.add(s.Key(), llm.PurposeArchive, rep.Usage)
	return p, rep, err
}

func (c countedConsolidator) After(ctx context.Context, s consolidator.Session, p consolidator.Prompt, sent consolidator.Sent) (consolidator.Report, error) {
	rep, err := c.Consolidator.After(ctx, s, p, sent)
	c.usage.add(s.Key(), llm.PurposeArchive, rep.Usage)
	return rep, err
}

func (c countedConsolidator) ArchiveTail(ctx context.Context, s consolidator.Session) (consolidator.Report, error) {
	rep, err := c.Consolidator.ArchiveTail(ctx, s)
	c.usage.add(s.Key(), llm.PurposeArchive, rep.Usage)
	return rep, err
}

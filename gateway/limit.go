package gateway

import (
	"context"

	"github.com/dreamgate/dreamgate/llm"
)

// LimitConcurrency wraps m so that at most n calls run at once; the others
// wait (or give up when their context ends). It caps the load on the
// provider across all sessions.
func LimitConcurrency(m Model, n int) Model {
	if n <= 0 {
		return m
	}
	return &limited{m: m, sem: make(chan struct{}, n)}
}

type limited struct {
	m   Model
	sem chan struct{}
}

func (l *limited) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
	defer func() { <-l.sem }()
	return l.m.Chat(ctx, req)
}

// Package sessiontest writes session fixtures for tests and benchmarks of
// the packages that read sessions (gateway, cmd), through the real store.
package sessiontest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
)

// WriteLong writes under key, in the sessions directory dir, a
// conversation of n chat-sized messages (user and assistant in turn), all
// but tail of them archived.
func WriteLong(tb testing.TB, dir, key string, n, tail int) {
	tb.Helper()
	st, err := session.NewStore(dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	s, err := st.Get(key)
	if err != nil {
		tb.Fatal(err)
	}
	pad := strings.Repeat("some words of a chat message ", 3)
	msgs := make([]llm.Message, 0, 1000)
	for i := range n {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		msgs = append(msgs, llm.Message{Role: role, Content: fmt.Sprint(pad, i)})
		if len(msgs) == cap(msgs) || i == n-1 {
			if err := s.Append(msgs...); err != nil {
				tb.Fatal(err)
			}
			msgs = msgs[:0]
		}
	}
	if err := s.SetLastConsolidated(n-tail, "- earlier"); err != nil {
		tb.Fatal(err)
	}
}

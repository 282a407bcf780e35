package mcp

import (
	"testing"
)

// BenchmarkForTurn is what choosing a turn's tools costs once the
// servers run: one shared server, and a per-scope one whose scope's
// process runs among others (the cap's worth), whose turns also look for
// idle processes.
func BenchmarkForTurn(b *testing.B) {
	for _, use := range []Use{UseShared, UsePerScope} {
		b.Run(use.ConfigName(), func(b *testing.B) {
			sc, _ := stdioServer(b, "t")
			sc.Use = use
			m, _ := newManager(b, Config{Servers: []ServerConfig{sc}, StateDir: b.TempDir()})
			turns := []Turn{anaDM, bobDM, bobPublic, operator}
			for _, t := range turns {
				if len(m.ForTurn(b.Context(), t)) == 0 {
					b.Fatal("no tools")
				}
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				m.ForTurn(b.Context(), turns[i%len(turns)])
			}
		})
	}
}

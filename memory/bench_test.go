package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
)

// benchScope writes a scope's three hot files of n lines each.
func benchScope(b *testing.B, n int) (string, audience.Scope) {
	b.Helper()
	ws := b.TempDir()
	s := audience.Scope("team-slack-t1")
	for _, rel := range HotFiles() {
		var sb strings.Builder
		for i := range n {
			fmt.Fprintf(&sb, "- Fact %d of %s. <!-- durable 2026-11-26 src:%d id:%04x -->\n", i, rel, i+1, i)
		}
		p := filepath.Join(ws, filepath.FromSlash(s.Dir()), filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(sb.String()), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return ws, s
}

// What a turn pays to learn that a scope's files did not change: Hot
// through Disk (a look at each file and each folder on its way, refusing
// links), beside BenchmarkHotStatBaseline, three os.Stat calls — what the
// prompt builder did before it read through the memory.
func BenchmarkHotUnchanged(b *testing.B) {
	ws, s := benchScope(b, 200)
	m := New(NewDisk(ws), false)
	if _, err := m.Hot(s); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Hot(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHotStatBaseline(b *testing.B) {
	ws, s := benchScope(b, 200)
	b.ReportAllocs()
	for b.Loop() {
		for _, rel := range HotFiles() {
			if _, err := os.Stat(filepath.Join(ws, filepath.FromSlash(s.Dir()), filepath.FromSlash(rel))); err != nil {
				b.Fatal(err)
			}
		}
	}
}

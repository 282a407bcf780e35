package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// go test -run '^$' -bench . -benchmem ./agent/
func BenchmarkResolve(b *testing.B) {
	fx := newFixture(b)
	cases := []struct {
		name, path string
		pol        Policy
		write      bool
	}{
		{"chat/write/memory/MEMORY.md", "memory/MEMORY.md", ChatPolicy(), true},
		{"chat/read/deep/new", "notes/2026/04/new.md", ChatPolicy(), false},
		{"dream/write/memory/MEMORY.md", "./memory//MEMORY.md", DreamPolicy(), true},
		{"chat/refused/climb", "memory/../../x", ChatPolicy(), false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Resolve(fx.w, c.path, c.pol, c.write); (err == nil) == strings.Contains(c.name, "refused") {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEditFile50KB is one edit_file call on a 50 KB memory file: read,
// unique match, atomic write (temp file, fsync, rename, directory fsync).
func BenchmarkEditFile50KB(b *testing.B) {
	fx := newFixture(b)
	var sb strings.Builder
	for i := 0; sb.Len() < 50_000; i++ {
		sb.WriteString("- fact number ")
		sb.WriteString(strings.Repeat("x", i%40))
		sb.WriteString("\n")
	}
	sb.WriteString("- User prefers dark mode\n")
	if err := os.WriteFile(filepath.Join(fx.dir, "memory", "MEMORY.md"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	edit := toolByName(b, FileTools(fx.w, DreamPolicy(), ToolEditFile), ToolEditFile)
	flip := []string{"- User prefers dark mode\n", "- User prefers light mode\n"}
	b.SetBytes(int64(sb.Len()))
	i := 0
	for b.Loop() {
		a := args(b, "path", "memory/MEMORY.md", "old_text", flip[i%2], "new_text", flip[(i+1)%2])
		if _, err := edit.Run(b.Context(), a); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

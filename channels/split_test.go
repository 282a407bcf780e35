package channels

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

func TestSplitMessage(t *testing.T) {
	code := "```go\n" + strings.Repeat("fmt.Println(\"hello, world\")\n", 120) + "```\n"
	prose := strings.Repeat("word ", 900)
	tests := []struct {
		name  string
		text  string
		limit int
		parts int // 0: don't check the count
	}{
		{"short", "hello", 2000, 1},
		{"no limit", prose, 0, 1},
		{"prose", prose, 2000, 3},
		{"code block across parts", "Here:\n" + code + "done", 2000, 0},
		{"one long word", strings.Repeat("x", 4500), 2000, 3},
		{"multibyte", strings.Repeat("é", 2500), 2000, 2},
		{"tiny limit", "```\nabcdef\n```", 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := SplitMessage(tt.text, tt.limit)
			if tt.parts > 0 && len(parts) != tt.parts {
				t.Fatalf("got %d parts, want %d", len(parts), tt.parts)
			}
			for i, p := range parts {
				if tt.limit > 0 && utf8.RuneCountInString(p) > tt.limit {
					t.Errorf("part %d has %d runes, limit %d", i, utf8.RuneCountInString(p), tt.limit)
				}
				if tt.limit > 8 && !testkit.FencesBalanced(p) {
					t.Errorf("part %d has unbalanced fences:\n%s", i, p)
				}
			}
			joined := strings.Join(parts, "")
			for _, w := range []string{"hello", "done", "Here:"} {
				if strings.Contains(tt.text, w) && !strings.Contains(joined, w) {
					t.Errorf("lost %q", w)
				}
			}
		})
	}
}

func TestSplitMessageReopensFenceWithInfo(t *testing.T) {
	text := "```python\n" + strings.Repeat("print('x')\n", 400) + "```"
	parts := SplitMessage(text, 2000)
	if len(parts) < 2 {
		t.Fatalf("want several parts, got %d", len(parts))
	}
	for i, p := range parts[1:] {
		if !strings.HasPrefix(p, "```python\n") {
			t.Errorf("part %d does not reopen the python fence: %.30q", i+1, p)
		}
	}
	// Nothing of the code is lost: count the lines.
	got := strings.Count(strings.Join(parts, "\n"), "print('x')")
	if got != 400 {
		t.Errorf("code lines after split = %d, want 400", got)
	}
}

func TestSplitMessageLongerFences(t *testing.T) {
	// A diff shown in a four-backtick fence contains a "```" context line:
	// it is content, not a fence.
	diff := "````diff\n" + strings.Repeat(" context\n ```\n+added line\n", 150) + "````"
	parts := SplitMessage(diff, 2000)
	if len(parts) < 2 {
		t.Fatalf("want several parts, got %d", len(parts))
	}
	for i, p := range parts {
		lines := strings.Split(p, "\n")
		if lines[0] != "````diff" {
			t.Errorf("part %d does not open the four-backtick fence: %q", i, lines[0])
		}
		if last := lines[len(lines)-1]; last != "````" {
			t.Errorf("part %d does not close with four backticks: %q", i, last)
		}
		if utf8.RuneCountInString(p) > 2000 {
			t.Errorf("part %d too long", i)
		}
	}
}

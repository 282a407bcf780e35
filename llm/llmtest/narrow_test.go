package llmtest

import (
	"strings"
	"testing"
)

func TestNarrowEdit(t *testing.T) {
	cases := []struct{ before, after string }{
		{"# A\n- one\n- two", "# A\n- one\n- two\n- three"},
		{"# A\n- one\n- two\n## B\n- x", "# A\n- one\n- two\n- new\n## B\n- x"},
		{"# A\n- one\n- two\n- three", "# A\n- one\n- three"},
		{"- x\n- x", "- x\n- x\n- y"},
		{"", "- y"},
		{"- a", "- a\n- b"},
		{"- a\n- b", "- c\n- b"},
	}
	for _, c := range cases {
		o, n := narrowEdit(c.before, c.after)
		if strings.Count(c.before, o) != 1 || strings.Replace(c.before, o, n, 1) != c.after {
			t.Errorf("narrowEdit(%q, %q) = %q, %q", c.before, c.after, o, n)
		}
	}
}

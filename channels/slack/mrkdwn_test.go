package slack

import (
	"strings"
	"testing"
)

func TestToMrkdwn(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello world", "hello world"},
		{"bold", "a **bold** word", "a *bold* word"},
		{"underscore bold becomes italics", "__x__", "_x_"},
		{"underscore italics kept", "an _italic_ word", "an _italic_ word"},
		{"star italics", "an *italic* word", "an _italic_ word"},
		{"bold inside italics", "*it **b** it*", "_it *b* it_"},
		{"strike", "~~gone~~", "~gone~"},
		{"link", "see [the docs](https://example.com/a?b=1&c=2)", "see <https://example.com/a?b=1&amp;c=2|the docs>"},
		{"link with title", `[x](https://e.com "T")`, "<https://e.com|x>"},
		{"link label escaped", "[a < b](https://e.com)", "<https://e.com|a &lt; b>"},
		{"image", "![chart](https://e.com/c.png)", "<https://e.com/c.png|chart>"},
		{"not a link", "[just brackets] and (parens)", "[just brackets] and (parens)"},
		{"heading", "# Heading", "*Heading*"},
		{"heading level 3 with bold", "### Sub **x** y", "*Sub x y*"},
		{"heading closing hashes", "## Title ##", "*Title*"},
		{"hash without space is text", "#channel-ish", "#channel-ish"},
		{"escape outside links", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"code span untouched but escaped", "run `**x** <y> & z`", "run `**x** &lt;y&gt; &amp; z`"},
		{"double backtick span", "``a ` b``", "`a ` b`"},
		{"unclosed backtick", "a ` b **c**", "a ` b *c*"},
		{"fenced block untouched", "```go\nx := **y** < 2 // [a](b)\n```", "```\nx := **y** &lt; 2 // [a](b)\n```"},
		{"tilde fence", "~~~\n~~s~~\n~~~", "```\n~~s~~\n```"},
		{"text after fence converted", "```\ncode\n```\n**bold**", "```\ncode\n```\n*bold*"},
		{"unclosed fence stays code", "```\n**x**", "```\n**x**"},
		{"quote", "> quoted **b**", "> quoted *b*"},
		{"bullets", "- one\n* two\n  + three", "• one\n• two\n  • three"},
		{"snake_case", "use snake_case_names here", "use snake_case_names here"},
		{"lone stars", "5 * 3 * 2 = 30", "5 * 3 * 2 = 30"},
		{"unclosed bold", "**open only", "**open only"},
		{"backslash escape", `\*not italic\*`, `\*not italic\*`},
		{"autolink kept", "<https://e.com/x?a=1&b=2>", "<https://e.com/x?a=1&amp;b=2>"},
		{"user mention kept", "ask <@U123ABC> or <#C42|general>", "ask <@U123ABC> or <#C42|general>"},
		{"broadcast escaped", "<!channel> hi", "&lt;!channel&gt; hi"},
		{"html escaped", "<div>", "&lt;div&gt;"},
		{"link inside bold", "**see [x](https://e.com)**", "*see <https://e.com|x>*"},
		{"horizontal rule", "a\n---\nb", "a\n──────────\nb"},
		{"empty", "", ""},
		{"unicode", "**héllo** — ünïcode", "*héllo* — ünïcode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := toMrkdwn(tt.in); got != tt.want {
				t.Errorf("toMrkdwn(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// A line of thousands of unmatched openers must stay fast (linear), or a
// silly model answer would stall a send.
func TestToMrkdwnUnmatchedDelimitersLinear(t *testing.T) {
	in := strings.Repeat("**a ", 20000)
	out := toMrkdwn(in)
	if out != in {
		t.Fatalf("unmatched delimiters changed the text")
	}
}

func BenchmarkToMrkdwn(b *testing.B) {
	block := "# Title\nSome **bold** and *italic* text with a [link](https://e.com) & `code`.\n" +
		"```go\nfunc main() { fmt.Println(\"<hi>\") }\n```\n- item one\n- item two\n\n"
	in := strings.Repeat(block, 200) // ~40 KB
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		_ = toMrkdwn(in)
	}
}

func TestTablesBecomeAlignedCodeBlocks(t *testing.T) {
	in := "Sizes:\n\n| Name | **Size** | Note |\n|:-----|-----:|:---:|\n| a.go | 12 | `ok` |\n| longer_name.go | 1024 | a \\| b |\n\nAfter **x**."
	want := "Sizes:\n\n```\n" +
		"Name           | Size | Note\n" +
		"---------------+------+------\n" +
		"a.go           |   12 |  ok\n" +
		"longer_name.go | 1024 | a | b\n" +
		"```\n\nAfter *x*."
	if got := toMrkdwn(in); got != want {
		t.Errorf("toMrkdwn =\n%s\nwant\n%s", got, want)
	}
	// Not tables: pipes without a delimiter row, and a table in a fence.
	for _, s := range []string{"a | b\nc | d", "```\n| a | b |\n|---|---|\n```"} {
		if got := toMrkdwn(s); strings.Contains(got, "-+-") {
			t.Errorf("toMrkdwn(%q) made a table: %q", s, got)
		}
	}
	// Short rows are padded; & < > are escaped in cells.
	got := toMrkdwn("|a|b|\n|-|-|\n|x<y|\n")
	if !strings.Contains(got, "x&lt;y |") {
		t.Errorf("short row or escape: %q", got)
	}
}

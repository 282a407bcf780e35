package tokens

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer/codec"
)

// The reference: tiktoken-go's cl100k_base, which the product no longer
// links. Every count of ours must be its count.
var reference = sync.OnceValue(codec.NewCl100kBase)

func referenceCount(t testing.TB, s string) int {
	n, err := reference().Count(s)
	if err != nil {
		t.Fatalf("reference count of %q: %v", s, err)
	}
	return n
}

// cl100k_base.tokens is the library's vocabulary, rank by rank, and the
// table finds every token at its rank. Fails when the library changed and
// go generate was not run.
func TestVocabularyIsTheLibrarys(t *testing.T) {
	tab := newTable()
	if len(cl100k) < ranks {
		t.Fatalf("cl100k_base.tokens has %d bytes, fewer than its %d lengths: run go generate ./internal/tokens", len(cl100k), ranks)
	}
	off := ranks
	for r := range ranks {
		want, err := reference().Decode([]uint{uint(r)})
		if err != nil {
			t.Fatalf("rank %d: the reference has no token: %v", r, err)
		}
		n := int(cl100k[r])
		if off+n > len(cl100k) || cl100k[off:off+n] != want {
			t.Fatalf("rank %d is not %q in cl100k_base.tokens, as in the reference: run go generate ./internal/tokens", r, want)
		}
		if got := tab.token(r); got != want {
			t.Fatalf("the table's token of rank %d is %q, want %q", r, got, want)
		}
		if rank, ok := tab.rank([]byte(want)); !ok || rank != r {
			t.Fatalf("the table finds %q at rank %d (%v), want %d", want, rank, ok, r)
		}
		off += n
	}
	if off != len(cl100k) {
		t.Fatalf("cl100k_base.tokens has %d bytes past rank %d: run go generate ./internal/tokens", len(cl100k)-off, ranks-1)
	}
	if _, err := reference().Decode([]uint{ranks}); err == nil {
		t.Fatalf("the reference has a token at rank %d: raise ranks and run go generate ./internal/tokens", ranks)
	}
	for _, s := range []string{"", "zzzzzzzzzzzzzzzzzzzzzzzz", "\x00\x01", "日本語のテキストです"} {
		if _, ok := tab.rank([]byte(s)); ok && referenceCount(t, s) != 1 {
			t.Errorf("the table finds %q, which is no token", s)
		}
	}
}

// texts is what the counts are compared on: prose, code, other scripts,
// whitespace runs, invalid UTF-8, long pieces (the heap's path) and
// everything the split pattern turns on.
func texts(t testing.TB) map[string]string {
	m := map[string]string{
		"prose":        "Ana prefers tea over coffee, and she answers email only in the mornings. She's said it twice; we'll remember.",
		"contractions": "I'M sure they'RE here, it'S fine, you'VE seen, we'LL go, he'D know, don'T. 's 't 'll",
		"numbers":      "1 12 123 1234 12345 3.14159 1,000,000 ٣٤٥ ²³ Ⅻ 0x7fff 2026-12-07T03:31:40Z",
		"code":         "func (c *Counter) Count(s string) int {\n\tif s == \"\" {\n\t\treturn 0\n\t}\n\treturn len(s) // TODO\n}\n",
		"unicode":      "héllo wörld, Straße, naïve café; Привет мир; 你好，世界；こんにちは世界；안녕하세요; مرحبا بالعالم; שלום; नमस्ते; ไทย; Ελληνικά",
		"emoji":        "👋🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ ✔︎ 😀😃😄😁😆😅😂🤣",
		"combining":    "e\u0301 a\u0308\u0301 \u0301\u0302 Z\u0351\u0352\u0353\u0354",
		"spaces":       "a  b   c    d\t\te \t \tf\n\ng\r\n\r\nh \n i\u00a0j\u3000k\u2028l\u0085m   \n",
		"space runs":   strings.Repeat(" ", 300) + "x" + strings.Repeat("\t", 200) + strings.Repeat("\n", 150) + strings.Repeat(" \n", 100),
		"trailing":     "end with spaces   ",
		"leading":      "   \n\n  start",
		"punctuation":  strings.Repeat("!?.,;:-_=+*/\\|<>()[]{}\"'`~@#$%^&", 8),
		"long word":    strings.Repeat("abcdefghij", 30) + " " + strings.Repeat("Донауферштрассе", 12),
		"long mixed":   strings.Repeat("ab", 200) + strings.Repeat("💡", 60) + strings.Repeat("=", 400),
		"repeat":       strings.Repeat("a", 500) + " " + strings.Repeat("aa ", 50),
		"invalid":      "ok \xff\xfe bad \xc3 cut \xe2\x82 half \xed\xa0\x80 surrogate \xf4\x90\x80\x80 big \x80\x80\x80",
		"invalid run":  strings.Repeat("\xff", 120) + "a" + strings.Repeat("\xc3", 100),
		"specials":     "<|endoftext|> <|fim_prefix|><|endofprompt|>",
		"control":      "\x00\x01\x02\x1b[0m\x7f bell\a",
	}
	goroot := runtime.GOROOT()
	for _, p := range []string{"src/net/http/server.go", "src/fmt/doc.go", "src/unicode/tables.go", "LICENSE", "README.md", "doc/go_spec.html"} {
		b, err := os.ReadFile(filepath.Join(goroot, p))
		if err != nil {
			continue
		}
		if len(b) > 100_000 {
			b = b[:100_000]
		}
		m[p] = string(b)
	}
	if len(m) < 22 {
		t.Logf("only %d texts: Go's sources were not found", len(m))
	}
	return m
}

func TestCountsAreTheLibrarys(t *testing.T) {
	var c Counter
	for name, s := range texts(t) {
		if got, want := c.Count(s), referenceCount(t, s); got != want {
			t.Errorf("%s: Count = %d, reference %d", name, got, want)
		}
		for i, line := range strings.Split(s, "\n") {
			if got, want := c.Count(line), referenceCount(t, line); got != want {
				t.Errorf("%s, line %d: Count(%q) = %d, reference %d", name, i+1, line, got, want)
			}
		}
	}
}

// Random texts from pieces the pattern and the merges turn on, and random
// bytes, valid UTF-8 or not.
func TestCountsAreTheLibrarysOnRandomTexts(t *testing.T) {
	alphabet := []string{"a", "e", "s", "t", "th", "ing", "tion", "Z", "QU", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000",
		"'", "'s", "'T", "'re", "'VE", "'m", "'ll", "'D", "1", "23", "4567", "٣", "²", ".", ",", "!", "?!", "...", "(", ")", "-", "—",
		"«", "»", "é", "e\u0301", "ß", "日本", "語", "한", "ж", "😀", "🏽", "\u200d", "\ufe0f", "_", "\"", "``", "/", "\\", "<|", "|>",
		"\xff", "\xc3", "\xe2\x82", "\x00"}
	var c Counter
	r := rand.New(rand.NewPCG(7, 33))
	for i := range 10000 {
		var b strings.Builder
		for range 1 + r.IntN(30) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		if got, want := c.Count(s), referenceCount(t, s); got != want {
			t.Fatalf("text %d: Count(%q) = %d, reference %d", i, s, got, want)
		}
	}
	for i := range 3000 {
		raw := make([]byte, 1+r.IntN(200))
		for j := range raw {
			raw[j] = byte(r.IntN(256))
		}
		s := string(raw)
		if got, want := c.Count(s), referenceCount(t, s); got != want {
			t.Fatalf("bytes %d (valid UTF-8: %v): Count(%q) = %d, reference %d", i, utf8.ValidString(s), s, got, want)
		}
	}
}

// The scan and the heap merge every piece alike; the piece's length picks
// one, so each is made to count pieces of both lengths here.
func TestScanAndHeapAgree(t *testing.T) {
	tab := newTable()
	r := rand.New(rand.NewPCG(3, 4))
	letters := "abcdefghijklmnopqrstuvwxyz      ..!!==''éé"
	for i := range 5000 {
		piece := make([]byte, 2+r.IntN(scanLimit-2))
		for j := range piece {
			piece[j] = letters[r.IntN(len(letters))]
		}
		if s, h := tab.partsScan(piece), tab.partsHeap(piece); s != h {
			t.Fatalf("piece %d %q: scan %d parts, heap %d", i, piece, s, h)
		}
	}
}

func FuzzCount(f *testing.F) {
	for _, s := range texts(f) {
		f.Add(s[:min(len(s), 2000)])
	}
	for _, s := range []string{"", " ", "a", "\xff", "  \n", "I'm", "1234", strings.Repeat("=", 100)} {
		f.Add(s)
	}
	var c Counter
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := c.Count(s), referenceCount(t, s); got != want {
			t.Fatalf("Count(%q) = %d, reference %d", s, got, want)
		}
	})
}

func Example() {
	var c Counter
	fmt.Println(c.Count("Ana prefers dark mode."))
	// Output: 5
}

// The split is the generated matcher of split_regexp2cg.go, as the
// reference's is: that file registers the very pattern tokens.go compiles.
// Were the pattern changed without go generate, the product would
// interpret it instead (the tests would not: tiktoken-go's package
// registers its own matcher for the same pattern), and the interpreter
// cuts some texts otherwise: it keeps U+007F, which the generated matcher
// skips, and takes spaces before a newline into one piece.
func TestSplitIsTheGeneratedMatcher(t *testing.T) {
	src, err := os.ReadFile("tokens.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "regexp2.MustCompile(`")
	pattern, _, ok2 := strings.Cut(rest, "`")
	if !ok || !ok2 {
		t.Fatal("tokens.go compiles no raw-string pattern with regexp2.MustCompile")
	}
	gen, err := os.ReadFile("split_regexp2cg.go")
	if err != nil {
		t.Fatalf("%v: run go generate ./internal/tokens", err)
	}
	if !strings.Contains(string(gen), "regexp2.RegisterEngine("+strconv.Quote(pattern)+",") {
		t.Errorf("split_regexp2cg.go registers no matcher for tokens.go's pattern %q: run go generate ./internal/tokens", pattern)
	}
	var c Counter
	for _, s := range []string{"a\x7fb", "   \t\t\n\n \n \nx"} {
		if got, want := c.Count(s), referenceCount(t, s); got != want {
			t.Errorf("Count(%q) = %d, reference %d", s, got, want)
		}
	}
}

package tokens

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tiktoken-go/tokenizer/codec"
)

// benchTexts: English prose, Go source and other scripts, each about 20 KB.
func benchTexts(b *testing.B) map[string]string {
	code, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src/net/http/server.go"))
	if err != nil {
		b.Skip("Go's sources are not here:", err)
	}
	return map[string]string{
		"prose":   strings.Repeat("Ana prefers tea over coffee, and she answers email only in the mornings; she's said so twice. ", 210),
		"code":    string(code[:20_000]),
		"unicode": strings.Repeat("Straße naïve café; Привет мир; 你好，世界；こんにちは; 안녕하세요 👋🏽 ", 170),
	}
}

// BenchmarkCount counts the same texts with this package's counter and
// with tiktoken-go's (the reference), both loaded before the timer, one
// after the other in each iteration so that both see the same load on a
// shared machine; x-library is ours' time over the library's.
func BenchmarkCount(b *testing.B) {
	var ours Counter
	ours.Count("warm")
	lib := codec.NewCl100kBase()
	for name, s := range benchTexts(b) {
		b.Run(name, func(b *testing.B) {
			var tOurs, tLib time.Duration
			n := 0
			for b.Loop() {
				t0 := time.Now()
				n = ours.Count(s)
				t1 := time.Now()
				if _, err := lib.Count(s); err != nil {
					b.Fatal(err)
				}
				tOurs, tLib = tOurs+t1.Sub(t0), tLib+time.Since(t1)
			}
			b.ReportMetric(float64(n)*float64(b.N)/tOurs.Seconds()/1e6, "M-tokens/s")
			b.ReportMetric(float64(n)*float64(b.N)/tLib.Seconds()/1e6, "library-M-tokens/s")
			b.ReportMetric(float64(tOurs)/float64(tLib), "x-library")
		})
	}
}

// BenchmarkFirstCount is a process's first count of a short message,
// with this package's counter and with tiktoken-go's, and no count at all
// beside them: each run is a process of its own (this test binary again),
// which reports the count's time and its peak RSS (VmHWM). What the
// vocabulary costs a process is maxRSS-MB less none's.
func BenchmarkFirstCount(b *testing.B) {
	for _, with := range []string{"none", "ours", "library"} {
		b.Run(with, func(b *testing.B) {
			var rss, took []float64
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestFirstCountProcess$")
				cmd.Env = append(os.Environ(), "TOKENS_FIRST_COUNT="+with)
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				var kb, ns float64
				if _, err := fmt.Sscanf(string(out), "first-count %g %g", &kb, &ns); err != nil {
					b.Fatalf("%q: %v", out, err)
				}
				rss, took = append(rss, kb/1024), append(took, ns/1e6)
			}
			b.ReportMetric(slices.Max(rss), "maxRSS-MB")
			slices.Sort(took)
			b.ReportMetric(took[len(took)/2], "count-ms")
		})
	}
}

// TestFirstCountProcess is BenchmarkFirstCount's process: it counts once
// as TOKENS_FIRST_COUNT says and prints its peak RSS in KiB and the count's
// time in ns.
func TestFirstCountProcess(t *testing.T) {
	with := os.Getenv("TOKENS_FIRST_COUNT")
	if with == "" {
		t.Skip("run by BenchmarkFirstCount")
	}
	const msg = "Ana prefers dark mode."
	start := time.Now()
	switch with {
	case "ours":
		var c Counter
		c.Count(msg)
	case "library":
		if _, err := codec.NewCl100kBase().Count(msg); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Printf("first-count %s %d\n", strings.TrimSpace(strings.TrimSuffix(kb, "kB")), took.Nanoseconds())
			os.Exit(0)
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
}

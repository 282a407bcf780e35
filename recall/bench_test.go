package recall

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/workspace"
)

// benchConvs serves generated conversations as the session store would,
// without holding their messages: conversation i's message j is a
// function of (i, j). Every message is archived.
type benchConvs struct {
	n, perConv int
	vocab      []string
}

func (c *benchConvs) key(i int) string { return fmt.Sprintf("slack:C%06d", i) }

// audienceOf spreads conversations over scopes as a team might: 40 % in
// public channels, 30 % in 300 people's DMs, 20 % in 30 private channels,
// 10 % at the terminal.
func (c *benchConvs) audienceOf(i int) audience.Audience {
	switch r := i % 10; {
	case r < 4:
		return team1
	case r < 7:
		return audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: fmt.Sprintf("U%d", i%300)}
	case r < 9:
		return audience.Audience{Kind: audience.Private, Platform: "slack", Team: "T1", Chat: fmt.Sprintf("C%d", i%30)}
	}
	return op
}

func (c *benchConvs) Files() ([]ConversationFile, error) {
	out := make([]ConversationFile, c.n)
	for i := range out {
		out[i] = ConversationFile{Name: c.key(i), Key: c.key(i), Stamp: "v1"}
	}
	return out, nil
}

func (c *benchConvs) Read(name string, resume func(string) (int, int64), fn func(int, llm.Message) error) (ConversationRead, error) {
	var i int
	if _, err := fmt.Sscanf(name, "slack:C%06d", &i); err != nil {
		return ConversationRead{}, err
	}
	from, _ := resume("g")
	rng := rand.New(rand.NewSource(int64(i)))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	for j := range c.perConv {
		m := llm.Message{Role: llm.RoleUser, Sender: "Ana", Time: t0.Add(time.Duration(j) * time.Second), Content: sentence(rng, c.vocab, 8, 30)}
		if j%2 == 1 {
			m.Role, m.Sender = llm.RoleAssistant, ""
		}
		if j == 7 && i%1000 == 3 {
			m.Content += " zqxrare marker"
		}
		if j >= from {
			if err := fn(j, m); err != nil {
				return ConversationRead{}, err
			}
		}
	}
	return ConversationRead{Key: name, ID: "g", Audience: c.audienceOf(i), Next: c.perConv, NextAt: int64(c.perConv)}, nil
}

func benchVocab() []string {
	rng := rand.New(rand.NewSource(2))
	out := make([]string, 50_000)
	for i := range out {
		b := make([]byte, 3+rng.Intn(7))
		for j := range b {
			b[j] = byte('a' + rng.Intn(26))
		}
		out[i] = string(b)
	}
	return out
}

// sentence draws words with a Zipf distribution: a few very common, most
// rare, as in text.
func sentence(rng *rand.Rand, vocab []string, lo, hi int) string {
	z := rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))
	var b strings.Builder
	for k := range lo + rng.Intn(hi-lo) {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocab[z.Uint64()])
	}
	return b.String()
}

// writeBenchHistory writes n archive entries straight into history.jsonl,
// in the history store's format, spread over the conversations' scopes.
func writeBenchHistory(b testing.TB, ws string, n int, convs *benchConvs) {
	dir := filepath.Join(ws, workspace.MemoryDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(ws, filepath.FromSlash(workspace.History)))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewSource(3))
	t0 := time.Date(2025, 6, 1, 0, 0, 0, 0, time.Local)
	for c := 1; c <= n; c++ {
		i := rng.Intn(max(convs.n, 1))
		content := "- " + sentence(rng, convs.vocab, 8, 20) + "\n- " + sentence(rng, convs.vocab, 8, 20)
		if c%20_000 == 5 {
			content += "\n- zqxrare entry"
		}
		line, _ := json.Marshal(map[string]any{
			"cursor": c, "timestamp": t0.Add(time.Duration(c) * time.Minute).Format(history.TimestampLayout),
			"content": content, "session_key": convs.key(i),
		})
		// The scope comes last, as the store writes it.
		if s := convs.audienceOf(i).Home(); s != audience.Default {
			line = append(line[:len(line)-1], []byte(fmt.Sprintf(`,"scope":%q}`, s))...)
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRecall builds the index of an archive and conversations once
// per engine (Build: time, documents a second, size) and then measures a
// search at that size, a query kind at a time, and an update with nothing
// new (what a search starts at most every 2 s). By default 10,000 archive
// entries and 100,000 archived messages (1,000 conversations of 100); with
// DREAMGATE_BENCH_1M=1 also 100,000 entries and 1,000,000 messages (10,000
// conversations), which takes minutes and about a gigabyte of disk. The
// embedded engine always runs; PostgreSQL's beside it, on the same sources
// and queries, when the test cluster is set (internal/pgtest's variable:
// .ci/postgres run make bench-recall), so each query's figures compare.
func BenchmarkRecall(b *testing.B) {
	sizes := [][2]int{{10_000, 1_000}}
	if os.Getenv("DREAMGATE_BENCH_1M") == "1" {
		sizes = append(sizes, [2]int{100_000, 10_000})
	}
	engines := []string{"embedded"}
	if os.Getenv(pgtest.EnvDSN) != "" {
		engines = append(engines, "postgres")
	}
	vocab := benchVocab()
	for _, size := range sizes {
		entries, nConvs := size[0], size[1]
		b.Run(fmt.Sprintf("%dK-entries-%dK-messages", entries/1000, nConvs*100/1000), func(b *testing.B) {
			ws := b.TempDir()
			convs := &benchConvs{n: nConvs, perConv: 100, vocab: vocab}
			writeBenchHistory(b, ws, entries, convs)
			hist, err := history.Open(filepath.Join(ws, workspace.MemoryDir), history.Options{})
			if err != nil {
				b.Fatal(err)
			}
			for _, engine := range engines {
				b.Run(engine, func(b *testing.B) {
					opts := Options{Dir: filepath.Join(b.TempDir(), "recall"), Memory: memory.New(memory.NewDisk(ws), false),
						History: hist, Conversations: convs, Every: time.Hour}
					size := func() int64 { return dirSize(b, opts.Dir) }
					if engine == "postgres" {
						db, err := postgres.Open(context.Background(), pgtest.DSN(b), postgres.Options{})
						if err != nil {
							b.Fatal(err)
						}
						b.Cleanup(db.Close)
						opts.Store = db.Recall()
						size = func() int64 { return db.RecallSize(b.Context()) }
					}
					benchIndex(b, Open(opts), vocab, size)
				})
			}
		})
	}
}

// benchIndex builds idx from nothing, then measures its searches and an
// update that finds nothing new.
func benchIndex(b *testing.B, idx *Index, vocab []string, size func() int64) {
	defer idx.Close()
	ctx := context.Background()
	b.Run("Build", func(b *testing.B) {
		for b.Loop() {
			if err := idx.Reset(ctx); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			st, err := idx.Update(ctx)
			if err != nil {
				b.Fatal(err)
			}
			d := time.Since(start)
			b.ReportMetric(d.Seconds(), "build-s")
			b.ReportMetric(float64(st.History+st.Messages)/d.Seconds(), "docs/s")
			b.ReportMetric(float64(size())/(1<<20), "index-MB")
		}
	})
	if _, err := idx.Update(ctx); err != nil { // when Build ran no loop (-bench filtered)
		b.Fatal(err)
	}
	benchSearches(b, idx, vocab)
	b.Run("UpdateNothingNew", func(b *testing.B) {
		for b.Loop() {
			st, err := idx.Update(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if st != (Stats{}) {
				b.Fatalf("added %+v", st)
			}
		}
	})
}

// benchSearches measures a search of each kind in idx.
func benchSearches(b *testing.B, idx *Index, vocab []string) {
	ctx := context.Background()
	dm := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "U7"}
	common := vocab[2] + " " + vocab[3] + " " + vocab[10]
	for _, q := range []struct {
		name, query string
		readable    []audience.Scope
	}{
		{"RareWord/Team", "zqxrare", team1.Readable()},
		{"RareWord/DM", "zqxrare", dm.Readable()},
		{"TwoWords/Team", vocab[500] + " " + vocab[3000], team1.Readable()},
		{"CommonWord/Team", vocab[2], team1.Readable()},
		{"ThreeCommonWords/Team", common, team1.Readable()},
		{"ThreeCommonWords/DM", common, dm.Readable()},
		{"ThreeCommonWords/Operator", common, op.Readable()},
		{"EightCommonWords/Team", strings.Join(vocab[2:10], " "), team1.Readable()},
	} {
		b.Run("Search/"+q.name, func(b *testing.B) {
			// The first search opens the database and warms its
			// cache; a gateway's searches find it open.
			if _, err := idx.Search(ctx, q.query, q.readable, DefaultLimit); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				res, err := idx.Search(ctx, q.query, q.readable, DefaultLimit)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Matches) == 0 {
					b.Fatal("found nothing")
				}
			}
		})
	}
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	des, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, de := range des {
		if fi, err := de.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

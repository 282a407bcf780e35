package recall

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/store"
)

// Kind is where a match was found.
type Kind int

// The kinds of match.
const (
	// KindHistory is an archive entry (memory/history.jsonl).
	KindHistory = Kind(store.RecallHistory)
	// KindMessage is an archived message of a conversation.
	KindMessage = Kind(store.RecallMessage)
	// KindCold is a line of a scope's cold memory.
	KindCold = Kind(store.RecallCold)
)

// Match is one thing found: its text around the words searched for, when
// and where it was said, and its scope.
type Match struct {
	Scope audience.Scope
	Kind  Kind
	// Time is when it was said (a message), archived (an entry) or last
	// confirmed (a cold-memory line with a date); zero when unknown.
	Time time.Time
	// Conversation is the session key of a message, or of the
	// conversation an archive entry came from ("" when it names none).
	Conversation string
	// Cursor is an archive entry's; Index a message's place in its
	// conversation; Line a cold-memory line's number (from 1).
	Cursor, Index, Line int
	// Who said a message: the sender's name, "user" or "assistant".
	Who string
	// Text is the part of the text around the first word matched, on one
	// line.
	Text string
}

// Results are a search's matches, best first.
type Results struct {
	Matches []Match
	// Incomplete says the index is still being built for the first time:
	// what was said long ago may not be found yet.
	Incomplete bool
}

// Search limits.
const (
	// DefaultLimit and MaxLimit bound a search's matches.
	DefaultLimit = 10
	MaxLimit     = 50
	// perTerm bounds the rows one word contributes in one scope, its
	// newest: a word in half of everything ever said ranks little, and
	// reading all of its rows would cost the search its speed.
	perTerm = 500
	// allTerms and allTermsTime bound the search for rows holding every
	// word: when the words are all common and rarely meet, that search
	// reads most of their rows, so it stops after this long with what it
	// found (the newest such rows).
	allTerms     = 100
	allTermsTime = 30 * time.Millisecond
)

// ErrUnavailable is returned by Search when the index cannot be read
// (damaged, and being rebuilt by the update Search started).
var ErrUnavailable = errors.New("recall index unavailable")

// Search returns what was said in the readable scopes that matches the
// words of query, at most limit matches (0 means DefaultLimit; at most
// MaxLimit), best first: those with more of the rarer words first, newer
// first among equals; what people said, archive entries and cold memory
// before the assistant's own answers. Only the given scopes are searched,
// one at a time: the engine finds a scope's rows by the scope's name,
// never by the query, so no query, whatever it holds, reaches another
// scope. A query without a word finds nothing. It first brings the index
// up to date (see refresh), waiting for that at most Options.Wait.
func (x *Index) Search(ctx context.Context, query string, readable []audience.Scope, limit int) (Results, error) {
	if x.isClosed() {
		return Results{}, ErrClosed
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	terms := Terms(query)
	if len(terms) == 0 || len(readable) == 0 {
		return Results{}, nil
	}
	x.refresh(ctx)
	res, err := search(ctx, x.store, terms, readable, limit)
	if errors.Is(err, store.ErrRecallUnusable) {
		// Let the next update rebuild it.
		x.mu.Lock()
		x.last = time.Time{}
		x.mu.Unlock()
		return Results{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return res, err
}

func search(ctx context.Context, ix store.RecallIndex, terms []string, readable []audience.Scope, limit int) (Results, error) {
	var res Results
	complete, err := ix.Mark(ctx, markComplete)
	if err != nil {
		return res, err
	}
	res.Incomplete = complete != "1"
	t := newTally(terms)
	for _, s := range readable {
		if t.searched[s] {
			continue
		}
		if err := t.scope(ctx, ix, s); err != nil {
			return res, err
		}
	}
	if len(t.scores) == 0 {
		return res, nil
	}
	res.Matches, err = t.best(ctx, ix, limit)
	return res, err
}

// tally is a search's scores: each row's, found in the scopes searched so
// far, and what the ranking needs besides. The engines find the rows; the
// ranking is this, the same for every engine.
type tally struct {
	terms  []string
	scores map[int64]float64
	// order places each row scored in time (store.RecallHit.Order).
	order map[int64]int64
	// rows counts each word's rows over the scopes searched (each scope's
	// newest perTerm at most): the snippet shows the rarest word found.
	rows map[string]int
	// searched are the scopes searched.
	searched map[audience.Scope]bool
}

func newTally(terms []string) *tally {
	return &tally{terms: terms, scores: map[int64]float64{}, order: map[int64]int64{},
		rows: make(map[string]int, len(terms)), searched: map[audience.Scope]bool{}}
}

// scope scores the rows of scope s that hold the words.
func (t *tally) scope(ctx context.Context, ix store.RecallIndex, s audience.Scope) error {
	t.searched[s] = true
	n, err := ix.Count(ctx, s)
	if err != nil || n == 0 {
		return err // nothing said there yet
	}
	var all float64
	for _, term := range t.terms {
		hits, err := ix.Match(ctx, s, []string{term}, perTerm, 0)
		if err != nil {
			return err
		}
		t.rows[term] += len(hits)
		if len(hits) == 0 {
			continue
		}
		// The rarer a word in the scope, the more a row holding it
		// counts; a word cut at perTerm rows is common, and counts as if
		// it were in perTerm of them or more.
		idf := math.Log(1 + float64(n)/float64(len(hits)))
		all += idf
		for _, h := range hits {
			t.scores[h.ID] += idf
			t.order[h.ID] = h.Order
		}
	}
	if len(t.terms) < 2 || all == 0 {
		return nil
	}
	// Rows holding every word rank first, also those past a common word's
	// newest rows; the search for them stops after allTermsTime with what
	// it found.
	hits, err := ix.Match(ctx, s, t.terms, allTerms, allTermsTime)
	if err != nil {
		return err
	}
	for _, h := range hits {
		t.scores[h.ID] = max(t.scores[h.ID], all) + all
		t.order[h.ID] = h.Order
	}
	return nil
}

// ranked are the rows scored, best first; among equals, newer first.
func (t *tally) ranked() []scoreRow {
	out := make([]scoreRow, 0, len(t.scores))
	for id, s := range t.scores {
		out = append(out, scoreRow{id: id, score: s, order: t.order[id]})
	}
	slices.SortFunc(out, func(a, b scoreRow) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.order, a.order); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	return out
}

type scoreRow struct {
	id, order int64
	score     float64
}

// best reads the best limit rows as matches. What people said, the
// archive and cold memory come before the assistant's own answers, which
// quote them (an answer "I found: …" is newer than the words it found and
// holds as many): among the best limit×answersPool rows, the answers go
// last.
func (t *tally) best(ctx context.Context, ix store.RecallIndex, limit int) ([]Match, error) {
	rarest := slices.Clone(t.terms)
	slices.SortStableFunc(rarest, func(a, b string) int { return cmp.Compare(t.rows[a], t.rows[b]) })
	ranked := t.ranked()
	ranked = ranked[:min(len(ranked), limit*answersPool)]
	ids := make([]int64, len(ranked))
	for i, r := range ranked {
		ids[i] = r.id
	}
	rows, err := ix.Read(ctx, ids)
	if err != nil {
		return nil, err
	}
	var said, answers []Match
	for _, r := range rows {
		if !t.searched[r.Scope] {
			// Cannot happen: every row came from a searched scope.
			return nil, fmt.Errorf("recall: row %d of a scope not searched", r.ID)
		}
		m := matchOf(r, rarest)
		if m.Kind == KindMessage && m.Who == string(llm.RoleAssistant) {
			answers = append(answers, m)
		} else {
			said = append(said, m)
		}
		if len(said) == limit {
			break
		}
	}
	all := append(said, answers...)
	return all[:min(limit, len(all))], nil
}

// answersPool is how many times a search's limit of the best rows are
// read to rank the assistant's answers after what was said.
const answersPool = 4

// matchOf is a row as a match shows it: its text cut around the words
// searched (terms, rarest first).
func matchOf(r store.RecallRow, terms []string) Match {
	m := Match{Scope: r.Scope, Kind: Kind(r.Kind), Conversation: r.Conversation, Who: r.Who, Text: snippet(r.Text, terms)}
	if r.At != 0 {
		m.Time = time.Unix(r.At, 0)
	}
	switch m.Kind {
	case KindHistory:
		m.Cursor = r.Pos
	case KindMessage:
		m.Index = r.Pos
	case KindCold:
		m.Line = r.Pos
	}
	return m
}

// snippetLen is about how many characters of a match's text are shown.
const snippetLen = 240

// snippet is the part of text that holds the most of the terms (terms
// come rarest first, and of windows holding as many, the one with the
// rarer words wins: in a long message of sentences alike, the word that
// told it apart), on one line, marked "…" where cut. It is cut at
// sentence ends where the window holds one, else at word boundaries: a
// snippet that ended mid-sentence, right after the word asked about, would
// show a fact without its value, and once the answer quoting it is
// archived, that fragment would be found again as if it were the fact.
func snippet(text string, terms []string) string {
	flat := strings.Join(strings.Fields(text), " ")
	r := []rune(flat)
	if len(r) <= snippetLen {
		return flat
	}
	hit, need := bestHit(r, terms)
	start := max(0, hit-snippetLen/4)
	end := min(len(r), start+snippetLen)
	start = max(0, end-snippetLen)
	if k := sentenceStart(r, start, hit); k >= 0 {
		start = k
	} else {
		for start > 0 && start > hit-snippetLen/2 && r[start-1] != ' ' {
			start--
		}
	}
	if k := sentenceEnd(r, max(need, start+1), end); k >= 0 {
		end = k
	} else if k := sentenceEndAfter(r, end, end+snippetLen/4); k >= 0 {
		end = k // a little longer, to end the sentence
	} else {
		for end < len(r) && end < start+snippetLen+20 && r[end] != ' ' {
			end++
		}
	}
	out := strings.TrimSpace(string(r[start:end]))
	if start > 0 {
		out = "…" + out
	}
	if end < len(r) {
		out += "…"
	}
	return out
}

// sentenceStart is the first offset in [from, to] where a sentence starts
// (after ". ", "! " or "? "), or -1; 0 starts one.
func sentenceStart(r []rune, from, to int) int {
	for k := from; k <= to && k < len(r); k++ {
		if k == 0 || k >= 2 && r[k-1] == ' ' && isSentenceEnd(r[k-2]) {
			return k
		}
	}
	return -1
}

// sentenceEnd is the last offset in [from, to] where a sentence ends (just
// after its ".", "!" or "?", before a space or the text's end), or -1.
func sentenceEnd(r []rune, from, to int) int {
	for k := min(to, len(r)); k >= from && k > 0; k-- {
		if isSentenceEnd(r[k-1]) && (k == len(r) || r[k] == ' ') {
			return k
		}
	}
	return -1
}

// sentenceEndAfter is the first offset in (from, to] where a sentence
// ends, or -1.
func sentenceEndAfter(r []rune, from, to int) int {
	for k := from + 1; k <= min(to, len(r)); k++ {
		if isSentenceEnd(r[k-1]) && (k == len(r) || r[k] == ' ') {
			return k
		}
	}
	return -1
}

func isSentenceEnd(c rune) bool { return c == '.' || c == '!' || c == '?' }

// termHit is a word of a text matching terms[term], at rune offsets
// [at, end).
type termHit struct{ at, end, term int }

// bestHit places a snippet: of the words matching a term, the one whose
// window (from a quarter of snippetLen before it) holds the most distinct
// terms, the rarer ones weighing more among windows holding as many, and
// among those the window placed on the rarest word (so that what follows
// it is shown too); the first such. It returns that word's offset and the end of the last word
// counted in its window, which the snippet must show; 0, 0 when no word
// matches.
func bestHit(r []rune, terms []string) (at, need int) {
	hits := termHits(r, terms)
	bestScore := -1
	for _, h := range hits {
		from := max(0, h.at-snippetLen/4)
		seen := make([]bool, len(terms))
		score, last := 0, h.end
		for _, o := range hits {
			if o.at < from || o.end > from+snippetLen || seen[o.term] {
				continue
			}
			seen[o.term] = true
			last = max(last, o.end)
			// One more term outweighs any rarity; terms[0] is the rarest.
			score += 1000*(len(terms)+1) + (len(terms)-o.term)*(len(terms)+1)
		}
		score += len(terms) - h.term
		if score > bestScore {
			at, need, bestScore = h.at, last, score
		}
	}
	return at, need
}

// termHits are the words of r that match a term: the same word, or one
// sharing its stem roughly (the index stems words, so "salaries" finds
// "salary").
func termHits(r []rune, terms []string) []termHit {
	var hits []termHit
	start := -1
	for i := 0; i <= len(r); i++ {
		if i < len(r) && isWordRune(r[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			w := strings.ToLower(string(r[start:i]))
			for k, t := range terms {
				if w == t || stems(t) && strings.HasPrefix(w, stem(t)) {
					hits = append(hits, termHit{at: start, end: i, term: k})
					break
				}
			}
			start = -1
		}
	}
	return hits
}

// stems says whether t may be matched by its stem: a word of four
// letters or more (a code such as "p0009" is not inflected, and its stem
// would match every code alike).
func stems(t string) bool {
	n := 0
	for _, c := range t {
		if !unicode.IsLetter(c) {
			return false
		}
		n++
	}
	return n >= 4
}

func stem(t string) string {
	r := []rune(t)
	return string(r[:max(3, len(r)-2)])
}

package dream

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/history"
)

// What a call of Dream may hold: the Dream model's window (Config.Window,
// the smallest of its chain) less its reply allowance (Config.MaxTokens)
// and a margin for what the counter and the provider count differently.
// Phase 1 reads every history entry whole, in as many calls as fit — an
// entry too long for one call in parts of its own — and a deep Dream shows
// a scope's lines in as many calls as fit, so no prompt is cut and none
// passes the window.
const (
	// DefaultWindow and DefaultMaxTokens are the window and the reply
	// allowance Dream assumes when cmd gives none.
	DefaultWindow    = 128_000
	DefaultMaxTokens = 4_096
	// windowMargin is kept free in every call.
	windowMargin = 1_024
	// minRoom is the least room a call gives its entries or lines, even
	// when the files alone fill a small window: the provider then says
	// the prompt is too long, and the batch fails with that reason.
	minRoom = 1_000
)

// room is the tokens a call of Dream may spend on its variable part when
// its fixed part (instructions, the files) costs fixed.
func (d *Dreamer) room(fixed int) int {
	return max(minRoom, d.cfg.Window-d.cfg.MaxTokens-windowMargin-fixed)
}

// phase1Parts renders the batch's entries for phase 1 as the archive
// sections of as many calls as fit room tokens each: whole entries, in
// order, while they fit; an entry longer than a whole call alone is cut,
// at line breaks where it can be, into parts of their own, each saying
// which part of which entry it is. Nothing of an entry is left out.
func (d *Dreamer) phase1Parts(entries []history.Entry, room int) [][]string {
	var parts [][]string
	var cur []string
	used := 0
	flush := func() {
		if len(cur) > 0 {
			parts = append(parts, cur)
			cur, used = nil, 0
		}
	}
	for _, e := range entries {
		content := strings.TrimSpace(e.Content)
		line := fmt.Sprintf("[%s] %s", e.Timestamp, content)
		n := d.count.Count(line) + 1
		if n <= room {
			if used+n > room {
				flush()
			}
			cur, used = append(cur, line), used+n
			continue
		}
		flush()
		pieces := d.cutToRoom(content, room-d.count.Count(e.Timestamp)-16)
		for i, p := range pieces {
			parts = append(parts, []string{fmt.Sprintf("[%s] (part %d of %d of this entry) %s", e.Timestamp, i+1, len(pieces), p)})
		}
	}
	flush()
	return parts
}

// cutToRoom cuts text into pieces of at most room tokens, at line breaks
// where it can; a line longer than room is cut between characters.
func (d *Dreamer) cutToRoom(text string, room int) []string {
	room = max(room, minRoom/2)
	var pieces []string
	var cur strings.Builder
	used := 0
	for line := range strings.Lines(text) {
		n := d.count.Count(line)
		if n > room {
			if cur.Len() > 0 {
				pieces, used = append(pieces, strings.TrimRight(cur.String(), "\n")), 0
				cur.Reset()
			}
			pieces = append(pieces, d.cutLine(line, room)...)
			continue
		}
		if used+n > room && cur.Len() > 0 {
			pieces, used = append(pieces, strings.TrimRight(cur.String(), "\n")), 0
			cur.Reset()
		}
		cur.WriteString(line)
		used += n
	}
	if cur.Len() > 0 {
		pieces = append(pieces, strings.TrimRight(cur.String(), "\n"))
	}
	return pieces
}

// cutLine cuts one line into pieces of at most room tokens, between
// characters, shortening a piece until it fits.
func (d *Dreamer) cutLine(line string, room int) []string {
	var out []string
	rest := strings.TrimRight(line, "\n")
	for rest != "" {
		n := min(len(rest), room*4)
		for n < len(rest) && n > 0 && !utf8.RuneStart(rest[n]) {
			n--
		}
		for n > 0 && d.count.Count(rest[:n]) > room {
			n = n * 3 / 4
			for n < len(rest) && n > 0 && !utf8.RuneStart(rest[n]) {
				n--
			}
		}
		if n <= 0 {
			_, n = utf8.DecodeRuneInString(rest)
		}
		out = append(out, rest[:n])
		rest = rest[n:]
	}
	return out
}

// deepGroup is the facts one call of a deep pass shows, and what they
// cost there.
type deepGroup struct {
	shown  func(id string) bool // nil: every fact
	tokens int
}

// deepGroups cuts a scope's facts into the calls of one deep pass: one
// call when they fit room tokens, else as many calls of consecutive facts
// (in file order) as fit room each.
func (d *Dreamer) deepGroups(files []*deepFile, room int) []deepGroup {
	type fact struct {
		id   string
		cost int
	}
	var all []fact
	total := 0
	for _, f := range files {
		for n, i := range f.f.Facts() {
			id := deepFileIDs[f.rel] + strconv.Itoa(n+1)
			c := d.count.Count(deepLine(id, f.f.Items[i].Line)) + 1
			all, total = append(all, fact{id, c}), total+c
		}
	}
	if total <= room {
		return []deepGroup{{tokens: total}}
	}
	var groups []deepGroup
	cur, used := map[string]bool{}, 0
	flush := func() {
		if len(cur) > 0 {
			set := cur
			groups = append(groups, deepGroup{shown: func(id string) bool { return set[id] }, tokens: used})
			cur, used = map[string]bool{}, 0
		}
	}
	for _, f := range all {
		if used+f.cost > room {
			flush()
		}
		cur[f.id], used = true, used+f.cost
	}
	flush()
	return groups
}

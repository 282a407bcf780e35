package consolidator

import (
	"math"
	"slices"
	"sync"

	"github.com/dreamgate/dreamgate/llm"
)

// maxFloorRatio caps the provider floor. Providers count 10–50% more than
// cl100k for newer models; a larger ratio means the observation was of a
// different prompt than the one we counted, and is not trusted beyond this.
const maxFloorRatio = 4.0

// sessionCounts caches the token counts of one session (one Session.ID()).
// Sessions are append-only, so each message is measured once: the per-turn
// budget check adds the new messages' counts to running sums and never
// re-counts the rest.
type sessionCounts struct {
	mu   sync.Mutex
	used uint64 // recency, for eviction; guarded by Consolidator.mu

	// Indexes below are into the messages the session holds (see
	// Session.Tail): index i is the session's message base+i.
	base  int
	n     int     // messages seen
	ubCum []int64 // ubCum[i]: sum of MessageUpperBound over messages[:i]
	ex    []int32 // exact count per message, -1 until counted

	// exSum is the exact count of messages[exLo:exHi]; exHi < 0 when unset.
	exLo, exHi int
	exSum      int64

	fixed   string
	fixedEx int // exact count of fixed, -1 until counted

	ratio   float64      // provider floor (>= 1) applied to exact estimates
	pending *observation // an observation not yet turned into ratio
}

// observation is a provider-reported prompt size, kept until the tokenizer
// is needed anyway: resolving it at once would load the vocabulary on the
// first turn of every one-shot chat.
type observation struct {
	provider int
	fixed    string
	// lc is where the observed prompt's replay started (its continuity
	// window included); n is how many messages the session then had.
	lc, n int
}

func newSessionCounts() *sessionCounts {
	st := &sessionCounts{ratio: 1}
	st.reset()
	return st
}

func (st *sessionCounts) reset() {
	st.n = 0
	st.ubCum = append(st.ubCum[:0], 0)
	st.ex = st.ex[:0]
	st.exLo, st.exHi, st.exSum = 0, -1, 0
	st.fixed, st.fixedEx = "", -1
	st.pending = nil
}

// sync takes in messages appended since the last call (upper bounds only;
// exact counts are made when first needed), msgs[i] being the session's
// message base+i. Counts of messages the session no longer holds (base
// moved on) are dropped.
func (st *sessionCounts) sync(base int, msgs []llm.Message) {
	if d := base - st.base; d > 0 && d <= st.n {
		st.shift(d)
	}
	if base != st.base || len(msgs) < st.n {
		// Not the append-only session we measured; start over.
		ratio := st.ratio
		st.reset()
		st.ratio = ratio
		st.base = base
	}
	for _, m := range msgs[st.n:] {
		st.ubCum = append(st.ubCum, st.ubCum[len(st.ubCum)-1]+int64(MessageUpperBound(m)))
		st.ex = append(st.ex, -1)
	}
	st.n = len(msgs)
}

// shift drops the counts of the first d messages, which the session no
// longer holds.
func (st *sessionCounts) shift(d int) {
	if st.exHi >= 0 {
		if st.exHi < d {
			st.exLo, st.exHi, st.exSum = 0, -1, 0
		} else {
			for i := st.exLo; i < d; i++ {
				st.exSum -= int64(st.ex[i])
			}
			st.exLo = max(st.exLo, d) - d
			st.exHi -= d
		}
	}
	if o := st.pending; o != nil {
		if o.lc < d {
			st.pending = nil // its prompt started before what is held
		} else {
			o.lc, o.n = o.lc-d, o.n-d
		}
	}
	// New arrays, so that the old ones are freed.
	st.ubCum = slices.Clone(st.ubCum[d:])
	st.ex = slices.Clone(st.ex[d:])
	st.n -= d
	st.base += d
}

// bound is an upper bound of the scaled estimate, found without the
// tokenizer: fixedLen bytes of the fixed part and the bytes of
// messages[from:], times the floor ratio (or its cap while an observation
// is unresolved). While an observation is unresolved, the provider's own
// count of that prompt plus the bytes added since bounds the estimate far
// more tightly than the cap, so a long session below budget still needs no
// tokenizer.
func (st *sessionCounts) bound(from, fixedLen int) int {
	ratio := st.ratio
	if st.pending != nil {
		ratio = maxFloorRatio
	}
	ub := int64(fixedLen+MessageOverhead) + st.ubCum[st.n] - st.ubCum[from]
	b := scale(ub, ratio)
	if o := st.pending; o != nil && o.n <= st.n && o.lc <= from {
		// The provider's count is the truth for the observed prompt (and
		// equals the scaled estimate of it whenever the provider counts
		// at least as many tokens as cl100k, the usual case); messages
		// archived since only lower it, and the messages and fixed-part
		// growth added since cost at most their bytes, times the cap.
		added := st.ubCum[st.n] - st.ubCum[o.n] + int64(max(fixedLen-len(o.fixed), 0))
		b = min(b, o.provider+scale(added, maxFloorRatio))
	}
	return b
}

// convBound bounds the scaled estimate of messages[from:] and note more
// bytes (the continuity note, which goes with them) as bound does; total
// is bound's answer, which bounds it too.
func (st *sessionCounts) convBound(from, note, total int) int {
	ratio := st.ratio
	if st.pending != nil {
		ratio = maxFloorRatio
	}
	return min(scale(st.ubCum[st.n]-st.ubCum[from]+int64(note), ratio), total)
}

// fixedTokens is the scaled count of the part outside the messages, as
// exact last counted it.
func (st *sessionCounts) fixedTokens() int { return scale(int64(st.fixedEx), st.ratio) }

// exact is the exact (unscaled) count of the prompt: fixed as one message
// plus messages[lc:].
func (st *sessionCounts) exact(c *Counter, msgs []llm.Message, lc int, fixed string) int64 {
	if fixed != st.fixed || st.fixedEx < 0 {
		st.fixed, st.fixedEx = fixed, c.Count(fixed)+MessageOverhead
	}
	n := st.n
	if st.exHi < 0 || lc < st.exLo || lc > st.exHi {
		st.exLo, st.exHi, st.exSum = lc, lc, 0
	}
	for i := st.exLo; i < lc; i++ {
		st.exSum -= int64(st.ex[i])
	}
	st.exLo = lc
	for i := st.exHi; i < n; i++ {
		st.exSum += int64(st.msg(c, msgs, i))
	}
	st.exHi = n
	return int64(st.fixedEx) + st.exSum
}

// msg is the exact count of messages[i], counted once.
func (st *sessionCounts) msg(c *Counter, msgs []llm.Message, i int) int {
	if st.ex[i] < 0 {
		st.ex[i] = int32(min(c.Message(msgs[i]), math.MaxInt32))
	}
	return int(st.ex[i])
}

// window chooses where the replay of a prompt starts: at lc, or at an
// earlier user message no earlier than from, keeping the archived messages
// between it and lc in view (the continuity window). It keeps as many whole
// user turns as fit: the estimate of the prompt, with note tokens added for
// the note that then goes with it, must stay at or below the limit, which
// limit gives for the count of fixed (no limit when it is <= 0). A window
// starting at a user message never splits a tool chain, which lives inside
// one turn. It returns the start and the estimate of the prompt replayed
// from it.
func (st *sessionCounts) window(c *Counter, msgs []llm.Message, lc, from int, fixed string, note int, limit func(fixed int) int) (start, est int) {
	st.resolve(c, msgs)
	sum := st.exact(c, msgs, lc, fixed)
	lim := limit(st.fixedTokens())
	start, est = lc, scale(sum, st.ratio)
	sum += int64(note)
	for i := lc - 1; i >= from; i-- {
		sum += int64(st.msg(c, msgs, i))
		e := scale(sum, st.ratio)
		if lim > 0 && e > lim {
			break
		}
		if msgs[i].Role == llm.RoleUser {
			start, est = i, e
		}
	}
	return start, est
}

// estimate is the exact count scaled by the provider floor.
func (st *sessionCounts) estimate(c *Counter, msgs []llm.Message, lc int, fixed string) int {
	st.resolve(c, msgs)
	return scale(st.exact(c, msgs, lc, fixed), st.ratio)
}

// resolve turns a pending observation into the floor ratio.
func (st *sessionCounts) resolve(c *Counter, msgs []llm.Message) {
	o := st.pending
	if o == nil {
		return
	}
	st.pending = nil
	if o.n > st.n || o.lc > o.n {
		return // the session it described is gone
	}
	ours := int64(c.Count(o.fixed) + MessageOverhead)
	for i := o.lc; i < o.n; i++ {
		ours += int64(st.msg(c, msgs, i))
	}
	if ours <= 0 {
		return
	}
	st.ratio = min(max(float64(o.provider)/float64(ours), 1), maxFloorRatio)
}

func scale(n int64, ratio float64) int {
	if ratio <= 1 {
		return int(n)
	}
	return int(math.Ceil(float64(n) * ratio))
}

// keepMessages is how many of a session's last messages its prompt keeps
// in view after they are archived, at least, when the budget allows
// (nanobot keeps 8 too): the conversation reads on after an archive.
// Sessions hold only a margin of archived messages (see Session.Tail; the
// gateway's keep 16 from a user turn): raising this past it needs the
// margin raised too.
const keepMessages = 8

// Budget is the token budget and where a session's prompt stands in it,
// as /status shows it. All figures are tokens; all are 0 when the budget is
// off (Config.ContextWindow <= 0).
type Budget struct {
	// Estimate is the exact prompt estimate (provider floor applied) plus
	// an allowance for the gateway's runtime header on the newest message.
	Estimate int
	// Limit is the hard limit: ContextWindow - MaxTokens - 1024.
	Limit int
	// Trigger: archiving starts when the estimate exceeds it
	// (ConsolidateRatio x ContextWindow, at most Limit; with a
	// conversation budget, at most the prompt's system part and tools plus
	// the budget).
	Trigger int
	// Target: archiving stops once the estimate is at or below it
	// (TargetRatio x ContextWindow, at most Trigger; with a conversation
	// budget, at most the system part and tools plus half the budget).
	Target int
	// Messages is how many of the session's messages the prompt replays:
	// the unarchived ones and the continuity window. Set also when the
	// budget is off.
	Messages int
}

// runtimeAllowance is what Status adds for the gateway's runtime header on
// the newest message (time, channel, conversation, sender), which is never
// counted; the per-turn check leaves it to the safety margin.
const runtimeAllowance = 64

// Status reports s's budget as /status shows it, with p as for Before
// (its History is rendered here). It counts exactly, loading the tokenizer
// if needed; counts are cached, so repeated calls cost little.
func (c *Consolidator) Status(s Session, p Prompt) Budget {
	if c.cfg.ContextWindow <= 0 {
		_, msgs, lc := held(s)
		return Budget{Messages: len(msgs) - windowStart(msgs, lc)}
	}
	_, est, n, th := c.fit(c.state(s.ID()), s, c.render(s, p))
	return Budget{
		Estimate: est + runtimeAllowance,
		Limit:    c.hard,
		Trigger:  th.trigger,
		Target:   th.target,
		Messages: n,
	}
}

// fit chooses the continuity window of p (see Before) as s stands now and
// returns p with Kept set, the estimate of the prompt, how many of the
// session's messages it replays and the prompt's thresholds.
func (c *Consolidator) fit(st *sessionCounts, s Session, p Prompt) (Prompt, int, int, thresholds) {
	base, msgs, lc := held(s)
	from := windowStart(msgs, lc)
	note := 0
	if from < lc {
		note = c.counter.Count(continuityNote)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sync(base, msgs)
	var th thresholds
	start, est := st.window(c.counter, msgs, lc, from, p.base(), note, func(fixed int) int {
		th = c.thresholds(fixed)
		return th.trigger
	})
	p.Kept = lc - start
	return p, est, len(msgs) - start, th
}

// estimate is the exact prompt estimate for s with fixed as the part
// outside its messages: cl100k tokens scaled by the provider floor.
func (c *Consolidator) estimate(s Session, fixed string) int {
	st := c.state(s.ID())
	st.mu.Lock()
	defer st.mu.Unlock()
	base, msgs, lc := held(s)
	st.sync(base, msgs)
	return st.estimate(c.counter, msgs, lc, fixed)
}

// observe records the provider's prompt_tokens for the last call made with
// s and p, which carried s's messages from LastConsolidated - p.Kept up to
// sent.Messages. The ratio to our own count of that prompt (at least 1)
// scales later estimates, since providers' tokenizers often count more
// than cl100k.
func (c *Consolidator) observe(s Session, p Prompt, sent Sent) {
	if sent.PromptTokens <= 0 {
		return
	}
	st := c.state(s.ID())
	st.mu.Lock()
	defer st.mu.Unlock()
	base, msgs, lc := held(s)
	st.sync(base, msgs)
	n := clampLC(sent.Messages-base, len(msgs))
	st.pending = &observation{
		provider: sent.PromptTokens,
		fixed:    p.counted(),
		lc:       min(max(lc-p.Kept, 0), n),
		n:        n,
	}
	if c.counter.Loaded() {
		st.resolve(c.counter, msgs)
	}
}

// held is what s holds of its messages (see Session.Tail), with
// LastConsolidated as an index into msgs.
func held(s Session) (base int, msgs []llm.Message, lc int) {
	base, msgs = s.Tail()
	return base, msgs, clampLC(s.LastConsolidated()-base, len(msgs))
}

// windowStart is where the continuity window may start at the earliest,
// msgs being what the session holds and lc where its unarchived messages
// start. While fewer than keepMessages messages follow lc, the window
// holds the keepMessages messages before lc, from the user message opening
// their turn; once as many follow lc they carry the conversation on, and
// there is none (lc). It depends on lc and the messages alone: the window
// moves when an archive moves lc and goes once, not a message at a time
// with every turn, so the prompt's opening stays byte-identical between
// archives and providers' prompt caches can serve it.
func windowStart(msgs []llm.Message, lc int) int {
	if len(msgs)-lc >= keepMessages {
		return lc
	}
	return min(lc, continuityStart(msgs[:lc]))
}

// continuityStart is the start of the last keepMessages messages of msgs,
// moved back to the user message that opens their turn (0 when there is
// none).
func continuityStart(msgs []llm.Message) int {
	for i := len(msgs) - keepMessages; i > 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return i
		}
	}
	return 0
}

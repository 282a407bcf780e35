package consolidator

import (
	"fmt"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// How a conversation is measured: the provider's count of the last
// request as a floor, the estimate cached per session, and the tokenizer
// kept off while the count says there is room.

func TestProviderFloor(t *testing.T) {
	tests := []struct {
		name     string
		provider func(exact int) int
		want     func(exact int) int
	}{
		{"provider counts 30% more", func(e int) int { return e * 13 / 10 }, func(e int) int { return e * 13 / 10 }},
		{"provider counts less: no change", func(e int) int { return e / 2 }, func(e int) int { return e }},
		{"implausible ratio is capped at 4", func(e int) int { return e * 10 }, func(e int) int { return e * 4 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestConsolidator(t, newFakeModel(t), baseConfig)
			s := newSession("k", user(words("", 1000)), assistant(words("", 1000)))
			fixed := words("", 500)
			exact := c.estimate(s, fixed)
			if exact != 1000+4+1000+4+500+4 {
				t.Fatalf("exact estimate %d", exact)
			}
			c.observe(s, Prompt{Fixed: fixed}, sent(s, tt.provider(exact)))
			got := c.estimate(s, fixed)
			if diff := got - tt.want(exact); diff < -1 || diff > 1 {
				t.Errorf("estimate %d, want %d", got, tt.want(exact))
			}
			// The ratio also scales what is appended later.
			s.append(user(words("", 1000)))
			if got := c.estimate(s, fixed); got < tt.want(exact)+1000 {
				t.Errorf("after an append: %d", got)
			}
		})
	}
}

func TestFloorTriggersArchiving(t *testing.T) {
	// 4000 tokens by cl100k is under the 5000 trigger; a provider that
	// counts 1.5x as many makes it 6000, over.
	m := newFakeModel(t)
	c, _ := newTestConsolidator(t, m, baseConfig)
	s := newSession("k", user(words("", 1000)), assistant(words("", 1000)), user(words("", 1000)), assistant(words("", 1000)), user("next"))
	if rep, _ := before(c, t.Context(), s); rep.Rounds != 0 {
		t.Fatalf("archived without the floor: %+v", rep)
	}
	c.observe(s, Prompt{}, sent(s, c.estimate(s, "")*3/2))
	rep, err := before(c, t.Context(), s)
	if err != nil || rep.Rounds != 1 || s.lc == 0 {
		t.Errorf("with the floor: %+v, %v", rep, err)
	}
}

func TestObservationDoesNotLoadTokenizer(t *testing.T) {
	c, _ := newTestConsolidator(t, newFakeModel(t), baseConfig)
	s := newSession("k", user("hi"), assistant("hello"))
	for range 3 {
		p, rep, err := c.Before(t.Context(), s, Prompt{Fixed: "system prompt"})
		if err != nil || rep.Rounds != 0 {
			t.Fatal(rep, err)
		}
		if rep, err := c.After(t.Context(), s, p, sent(s, 40)); err != nil || rep.Rounds != 0 {
			t.Fatal(rep, err)
		}
		s.append(user("and again"), assistant("sure"))
	}
	if c.counter.Loaded() {
		t.Error("a small chat loaded the tokenizer")
	}
}

// A long conversation well below budget: the provider's count of the last
// prompt (a little above ours, as usual) bounds the next estimate, so the
// tokenizer stays unloaded even though the raw bytes, scaled by the
// unresolved floor's cap, would exceed the trigger.
func TestProviderCountKeepsLongSessionsOffTheTokenizer(t *testing.T) {
	c, _ := newTestConsolidator(t, newFakeModel(t), baseConfig)
	s := newSession("k")
	for range 40 {
		s.append(user(words("", 5)), assistant(words("", 5)))
	}
	fixed := "system prompt"
	if bytes := len(fixed) + MessageOverhead + s.bytes(); scale(int64(bytes), maxFloorRatio) <= c.trigger {
		t.Fatalf("fixture too small: %d bytes, trigger %d", bytes, c.trigger)
	}
	ours := New(nil, nil, baseConfig, nil).estimate(s, fixed) // a separate tokenizer
	c.observe(s, Prompt{Fixed: fixed}, sent(s, ours*6/5))
	s.append(user("one more"), assistant("sure"))
	_, rep, err := c.Before(t.Context(), s, Prompt{Fixed: fixed})
	if err != nil || rep.Rounds != 0 {
		t.Fatalf("archived below budget: %+v, %v", rep, err)
	}
	if c.counter.Loaded() {
		t.Error("the tokenizer was loaded although the provider's count settled it")
	}
}

func TestEstimateCachesPerSession(t *testing.T) {
	c, _ := newTestConsolidator(t, newFakeModel(t), baseConfig)
	s := newSession("k")
	for i := range 50 {
		s.append(user(words(fmt.Sprint(i), i)), assistant(words("", 2*i)))
		if i%7 == 0 {
			s.lc = len(s.msgs) - 2
		}
		fresh := New(nil, nil, baseConfig, nil)
		if got, want := c.estimate(s, "sys"), fresh.estimate(s, "sys"); got != want {
			t.Fatalf("step %d: cached estimate %d, fresh %d", i, got, want)
		}
	}
	// /new: same key, new ID, shorter message list.
	s.id, s.msgs, s.lc = "k#2", []llm.Message{user("hi")}, 0
	if got := c.estimate(s, ""); got != 4+4+1 {
		t.Errorf("after /new: %d", got)
	}
}

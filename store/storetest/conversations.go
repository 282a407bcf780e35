package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dreamgate/dreamgate/store"
)

// OpenConversations opens a fresh, empty store of conversations of the
// engine under test, and reopen another handle on the same state.
type OpenConversations func(t *testing.T) (c store.Conversations, reopen func(t *testing.T) store.Conversations)

// RunConversations runs the conversations' contract tests against an
// engine, and a copy from it into a second fresh one and back.
func RunConversations(t *testing.T, open OpenConversations) {
	t.Run("LinesMetaAndGenerations", func(t *testing.T) { convLines(t, open) })
	t.Run("CopyRoundTrip", func(t *testing.T) { convCopy(t, open) })
}

func lines(texts ...string) [][]byte {
	out := make([][]byte, len(texts))
	for i, s := range texts {
		out[i] = fmt.Appendf(nil, `{"role":"user","content":%q}`, s)
	}
	return out
}

func texts(t *testing.T, c store.ConversationReader, key, id string, from, to int) []string {
	t.Helper()
	ls, err := c.Lines(key, id, from, to)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l)
	}
	return out
}

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func convLines(t *testing.T, open OpenConversations) {
	c, reopen := open(t)
	if _, ok, err := c.Live("k"); ok || err != nil {
		t.Fatalf("Live of an unknown key: %v %v", ok, err)
	}
	if err := c.Append("k", "g1", 0, lines("a", "b")); err != nil {
		t.Fatal(err)
	}
	if err := c.Append("k", "g1", 2, lines("c")); err != nil {
		t.Fatal(err)
	}
	if err := c.PutMeta("k", "g1", []byte(`{"key":"k","id":"g1","last_consolidated":1}`)); err != nil {
		t.Fatal(err)
	}
	r := reopen(t)
	live, ok, err := r.Live("k")
	if err != nil || !ok || live.ID != "g1" || live.Lines != 3 || !live.Live || string(live.Meta) != `{"key":"k","id":"g1","last_consolidated":1}` {
		t.Fatalf("Live = %+v %v %v", live, ok, err)
	}
	if got := texts(t, r, "k", "g1", 1, 0); !slices.Equal(got, strs(lines("b", "c"))) {
		t.Fatalf("Lines(1, end) = %q", got)
	}
	if got := texts(t, r, "k", "g1", 0, 2); !slices.Equal(got, strs(lines("a", "b"))) {
		t.Fatalf("Lines(0, 2) = %q", got)
	}
	if err := r.SetAside("k", "g1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := r.Live("k"); ok {
		t.Fatal("the key is still live after SetAside")
	}
	if err := r.Append("k", "g2", 0, lines("fresh")); err != nil {
		t.Fatal(err)
	}
	old, ok, err := c.Generation("k", "g1")
	if err != nil || !ok || old.Live || old.Lines != 3 {
		t.Fatalf("the set-aside generation = %+v %v %v", old, ok, err)
	}
	all, err := c.List()
	if err != nil || len(all) != 2 {
		t.Fatalf("List = %+v %v", all, err)
	}
}

func convCopy(t *testing.T, open OpenConversations) {
	src, _ := open(t)
	for k := range 3 {
		key := fmt.Sprintf("slack:C%d", k)
		if err := src.Append(key, "old", 0, lines("o1", "o2", "o3 \"quoted\" ünï")); err != nil {
			t.Fatal(err)
		}
		if err := src.PutMeta(key, "old", []byte(`{"id":"old","last_consolidated":3}`)); err != nil {
			t.Fatal(err)
		}
		if err := src.SetAside(key, "old"); err != nil {
			t.Fatal(err)
		}
		if err := src.Append(key, "new", 0, lines("n1")); err != nil {
			t.Fatal(err)
		}
		if err := src.PutMeta(key, "new", []byte(`{"id":"new","last_consolidated":0}`)); err != nil {
			t.Fatal(err)
		}
	}
	mid, _ := open(t)
	r, err := store.CopyConversations(mid, src)
	if err != nil || r.Conversations != 6 || r.Lines != 12 {
		t.Fatalf("copy: %+v %v", r, err)
	}
	if r, err := store.CopyConversations(mid, src); err != nil || r != (store.ConversationCopy{}) {
		t.Fatalf("a second copy changed %+v, %v", r, err)
	}
	if err := src.Append("slack:C0", "new", 1, lines("n2")); err != nil {
		t.Fatal(err)
	}
	if r, err := store.CopyConversations(mid, src); err != nil || r.Conversations != 1 || r.Lines != 1 {
		t.Fatalf("a copy after one more message: %+v, %v", r, err)
	}
	back, _ := open(t)
	if _, err := store.CopyConversations(back, mid); err != nil {
		t.Fatal(err)
	}
	want, _ := src.List()
	got, _ := back.List()
	if len(got) != len(want) {
		t.Fatalf("round trip: %d generations, want %d", len(got), len(want))
	}
	for _, w := range want {
		g, ok, err := back.Generation(w.Key, w.ID)
		if err != nil || !ok || g.Live != w.Live || g.Lines != w.Lines || string(g.Meta) != string(w.Meta) {
			t.Fatalf("round trip of %s/%s: %+v %v %v, want %+v", w.Key, w.ID, g, ok, err, w)
		}
		if a, b := texts(t, back, w.Key, w.ID, 0, 0), texts(t, src, w.Key, w.ID, 0, 0); !slices.Equal(a, b) {
			t.Fatalf("round trip of %s/%s lines %q, want %q", w.Key, w.ID, a, b)
		}
	}
}

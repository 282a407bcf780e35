package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/store"
)

// OpenInbox opens a fresh, empty inbox of the engine under test, and
// reopen another handle on it (a restart).
type OpenInbox func(t *testing.T) (ib store.Inbox, reopen func(t *testing.T) store.Inbox)

// RunInbox runs the inbox's contract tests against an engine.
func RunInbox(t *testing.T, open OpenInbox) {
	t.Run("OncePerPlatformMessage", func(t *testing.T) { inboxOnce(t, open) })
	t.Run("AnsweredRememberedThenForgotten", func(t *testing.T) { inboxAnswered(t, open) })
}

var inboxStart = time.Date(2026, 4, 3, 9, 30, 0, 0, time.UTC)

// InboxNow is the time the suite's messages are accepted at: an engine
// that forgets old answers when it opens (the file's) opens at it.
var InboxNow = inboxStart.Add(2 * time.Minute)

func inboxMsg(i int) store.InboxMessage {
	return store.InboxMessage{
		Channel: "slack", MessageID: fmt.Sprintf("1712.%d", i), Conversation: fmt.Sprintf("slack:C%d", i%2),
		Origin: fmt.Appendf(nil, `{"channel":"slack","chat":"C%d","message_id":"1712.%d","sender_id":"U1","sender_name":"Ana \"A\""}`, i%2, i),
		Text:   fmt.Sprintf("message %d ünï", i), Accepted: inboxStart.Add(time.Duration(i) * time.Second),
	}
}

func sameMessage(t *testing.T, got, want store.InboxMessage) {
	t.Helper()
	var a, b map[string]any
	if json.Unmarshal(got.Origin, &a) != nil || json.Unmarshal(want.Origin, &b) != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("origin %s, want %s", got.Origin, want.Origin)
	}
	got.Origin, want.Origin = nil, nil
	if !got.Accepted.Equal(want.Accepted) {
		t.Fatalf("accepted %v, want %v", got.Accepted, want.Accepted)
	}
	got.Accepted, want.Accepted = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("message %+v, want %+v", got, want)
	}
}

func openOf(t *testing.T, ib store.Inbox) []store.InboxMessage {
	t.Helper()
	ms, err := ib.Open()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// Each platform message is accepted once; the open ones come back in the
// order they were accepted, also after a restart.
func inboxOnce(t *testing.T, open OpenInbox) {
	ib, reopen := open(t)
	for _, i := range []int{3, 1, 2} {
		known, err := ib.Accept(inboxMsg(i))
		if err != nil || known {
			t.Fatalf("Accept(%d) = %v, %v", i, known, err)
		}
	}
	if known, err := ib.Accept(inboxMsg(1)); err != nil || !known {
		t.Fatalf("a second delivery of an open message: known %v, %v", known, err)
	}
	got := openOf(t, reopen(t))
	if len(got) != 3 {
		t.Fatalf("open after a restart: %d messages", len(got))
	}
	for k, i := range []int{3, 1, 2} {
		sameMessage(t, got[k], inboxMsg(i))
	}
	if known, err := reopen(t).Accept(inboxMsg(2)); err != nil || !known {
		t.Fatalf("a delivery after a restart of an open message: known %v, %v", known, err)
	}
}

// An answered message is remembered for store.KeepAnswered (a delivery
// again is known), then forgotten (accepted again as new).
func inboxAnswered(t *testing.T, open OpenInbox) {
	ib, reopen := open(t)
	for i := range 3 {
		if _, err := ib.Accept(inboxMsg(i)); err != nil {
			t.Fatal(err)
		}
	}
	at := inboxStart.Add(time.Minute)
	if err := ib.Answer("slack", "1712.1", at); err != nil {
		t.Fatal(err)
	}
	if err := ib.Answer("slack", "1712.99", at); err != nil {
		t.Fatalf("answering an unknown message: %v", err)
	}
	got := openOf(t, ib)
	if len(got) != 2 || got[0].MessageID != "1712.0" || got[1].MessageID != "1712.2" {
		t.Fatalf("open after an answer: %+v", got)
	}
	again := reopen(t)
	if known, err := again.Accept(inboxMsg(1)); err != nil || !known {
		t.Fatalf("a delivery of an answered message within the hour: known %v, %v", known, err)
	}
	if err := again.Forget(at.Add(store.KeepAnswered / 2)); err != nil {
		t.Fatal(err)
	}
	if known, _ := again.Accept(inboxMsg(1)); !known {
		t.Fatal("an answer within store.KeepAnswered was forgotten")
	}
	if err := again.Forget(at.Add(store.KeepAnswered + time.Minute)); err != nil {
		t.Fatal(err)
	}
	later := inboxMsg(1)
	later.Accepted = at.Add(store.KeepAnswered + 2*time.Minute)
	if known, err := again.Accept(later); err != nil || known {
		t.Fatalf("a delivery after the answer was forgotten: known %v, %v", known, err)
	}
	if got := openOf(t, reopen(t)); len(got) != 3 || got[2].MessageID != "1712.1" {
		t.Fatalf("open at the end: %+v", got)
	}
}

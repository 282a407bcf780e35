package main

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// arrivingPosts is a Slack fake whose posts keep coming while they are
// read: each read shows one post more, up to all of them; a wait for more
// posts than there will ever be fails at once (in the scenarios, after
// five minutes).
type arrivingPosts struct {
	mu    sync.Mutex
	all   []fakeslack.Post
	shown int
}

func (a *arrivingPosts) Posts() []fakeslack.Post {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.shown = min(a.shown+1, len(a.all))
	return append([]fakeslack.Post(nil), a.all[:a.shown]...)
}

func (a *arrivingPosts) WaitPosts(_ context.Context, n int) ([]fakeslack.Post, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n > len(a.all) {
		return nil, errors.New("waiting for a post that never comes")
	}
	a.shown = max(a.shown, n)
	return append([]fakeslack.Post(nil), a.all[:a.shown]...), nil
}

// A wait for answers sees the answers that came while it was checking
// the ones before: it failed CI with every message answered ("248 of 250
// messages answered: waiting for 251 posts"), having counted the answers
// in one read of the posts and waited for one more than a later read.
func TestWaitSeesPostsThatCameMeanwhile(t *testing.T) {
	src := &arrivingPosts{all: []fakeslack.Post{{Text: "a: c00 m000 (saw 1)"}, {Text: "b: c01 m000 (saw 1)"}}}
	err := waitSlackPosts(context.Background(), src, func(posts []fakeslack.Post) bool {
		return len(repliesIn(posts)) >= 2
	})
	if err != nil {
		t.Fatal(err)
	}
}

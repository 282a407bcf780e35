package main

import (
	"context"
	"path/filepath"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/recall"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/web"
)

// recallDir is where the embedded engine's recall index lives:
// <stateDir>/recall, a cache rebuilt from the archive, the conversations
// and cold memory.
func recallDir(stateDir string) string { return filepath.Join(stateDir, "recall") }

// recallStore is the recall index's engine: the database's, which every
// process on it searches, or nil, the embedded one in recallDir.
func recallStore(db *postgres.DB) store.RecallIndex {
	if db == nil {
		return nil
	}
	return db.Recall()
}

// recallIndex is the recall index of the workspace's archive, the
// conversations and the scopes' cold memory. Making it opens nothing: the
// first search does.
func (a *app) recallIndex() *recall.Index {
	if a.recall == nil {
		a.recall = recall.Open(recall.Options{
			Store:         recallStore(a.db),
			Dir:           recallDir(a.cfg.StateDir),
			Memory:        a.mem,
			History:       a.history,
			Conversations: recallConversations{a.sessions},
			Logger:        a.logger.With("component", "recall"),
		})
	}
	return a.recall
}

// recallConversations reads the session files for the recall index,
// without their locks.
type recallConversations struct{ st *session.Store }

func (c recallConversations) Files() ([]recall.ConversationFile, error) {
	files, err := c.st.ArchiveFiles()
	if err != nil {
		return nil, err
	}
	out := make([]recall.ConversationFile, len(files))
	for i, f := range files {
		out[i] = recall.ConversationFile{Name: f.Name, Key: f.Key, Stamp: f.Stamp}
	}
	return out, nil
}

func (c recallConversations) Read(name string, resume func(string) (int, int64), fn func(int, llm.Message) error) (recall.ConversationRead, error) {
	r, err := c.st.ReadArchived(name, resume, fn)
	if err != nil {
		return recall.ConversationRead{}, err
	}
	return recall.ConversationRead{Key: r.Key, ID: r.ID, Audience: r.Audience, Next: r.Next, NextAt: r.NextAt}, nil
}

// recallArchives tells the recall index when a consolidator call archived
// something, so that the next search waits for it to be indexed.
func recallArchives(c gateway.Consolidator, idx *recall.Index) gateway.Consolidator {
	return archiveNotices{Consolidator: c, notice: func(consolidator.Report) { idx.Changed() }}
}

// webRecall is the recall index as the memory page's search.
type webRecall struct{ idx *recall.Index }

func (w webRecall) Search(ctx context.Context, query string, readable []audience.Scope, limit int) (web.SearchResults, error) {
	res, err := w.idx.Search(ctx, query, readable, limit)
	if err != nil {
		return web.SearchResults{}, err
	}
	out := web.SearchResults{Incomplete: res.Incomplete, Matches: make([]web.SearchMatch, 0, len(res.Matches))}
	for _, m := range res.Matches {
		kind := "message"
		switch m.Kind {
		case recall.KindHistory:
			kind = "history"
		case recall.KindCold:
			kind = "cold"
		}
		out.Matches = append(out.Matches, web.SearchMatch{
			Scope: m.Scope, Kind: kind, Time: m.Time, Conversation: m.Conversation,
			Cursor: m.Cursor, Line: m.Line, Who: m.Who, Text: m.Text,
		})
	}
	return out, nil
}

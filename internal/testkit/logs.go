package testkit

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// Record is one logged record as a LogRecorder keeps it: its attributes
// as strings, by key.
type Record struct {
	Level   slog.Level
	Message string
	Attrs   map[string]string
}

// LogRecorder is a slog.Handler that keeps every record, at every level,
// so a test can check what was logged and how often. It is safe for
// concurrent use; the zero value is ready. Attributes and groups added
// with Logger.With are not kept: the tests look at a record's own.
type LogRecorder struct {
	mu      sync.Mutex
	records []Record
	notify  func(Record)
}

// Logger returns a logger writing to r.
func (r *LogRecorder) Logger() *slog.Logger { return slog.New(r) }

func (r *LogRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *LogRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *LogRecorder) WithGroup(string) slog.Handler            { return r }

func (r *LogRecorder) Handle(_ context.Context, sr slog.Record) error {
	rec := Record{Level: sr.Level, Message: sr.Message, Attrs: map[string]string{}}
	sr.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	r.records = append(r.records, rec)
	notify := r.notify
	r.mu.Unlock()
	if notify != nil {
		notify(rec)
	}
	return nil
}

// OnRecord makes r call f with every record it keeps from now on, on the
// logging goroutine: f must not block (send to a buffered channel with a
// default case).
func (r *LogRecorder) OnRecord(f func(Record)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notify = f
}

// Records returns a copy of what was logged so far.
func (r *LogRecorder) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.records...)
}

// Reset forgets what was logged so far.
func (r *LogRecorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = nil
}

// Count returns how many records were at exactly level with exactly the
// message msg.
func (r *LogRecorder) Count(level slog.Level, msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.records {
		if rec.Level == level && rec.Message == msg {
			n++
		}
	}
	return n
}

// Find returns the records at level or above whose message contains msg.
func (r *LogRecorder) Find(level slog.Level, msg string) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record
	for _, rec := range r.records {
		if rec.Level >= level && strings.Contains(rec.Message, msg) {
			out = append(out, rec)
		}
	}
	return out
}

package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/dreamgate/dreamgate/store"
)

// Files is the sessions directory seen through the store's contract for
// conversations (store.Conversations): how a copy between engines
// (dreamgate migrate --to-postgres, dreamgate export) reads and writes the
// embedded engine's conversations. A running Store does not go through
// it: it keeps its own handles, locks and tail marks. Its lines are the
// message lines a load reads (blank, torn and unreadable lines, and the
// answered marks of earlier versions, are not messages and not copied),
// numbered as a load numbers them. Use it only while no process writes
// the directory.
type Files struct{ dir string }

var _ store.Conversations = Files{}

// NewFiles returns the conversations of the sessions directory dir.
func NewFiles(dir string) Files { return Files{dir: dir} }

// importedID names the generation of a conversation whose metadata was
// never written (a load gives such a one a new ID each time).
const importedID = "imported"

// List implements store.ConversationReader.
func (f Files) List() ([]store.Conversation, error) {
	if _, err := os.Stat(f.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	st := &Store{dir: f.dir}
	files, err := st.messageFiles()
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := make([]store.Conversation, 0, len(files))
	for _, mf := range files {
		c, err := f.read(mf)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// read describes one message file's generation.
func (f Files) read(mf messageFile) (store.Conversation, error) {
	prefix := filepath.Join(f.dir, mf.name)
	c := store.Conversation{Key: mf.key, ID: mf.id, Live: mf.id == "", Modified: mf.modified}
	raw, err := os.ReadFile(prefix + ".meta.json")
	switch {
	case err == nil:
		c.Meta = raw
		var m meta
		if json.Unmarshal(raw, &m) == nil && c.ID == "" {
			c.ID = m.ID
		}
	case !errors.Is(err, fs.ErrNotExist):
		return c, fmt.Errorf("read session %s metadata: %w", mf.key, err)
	}
	if c.ID == "" {
		c.ID = importedID
	}
	lines, err := messageLines(prefix + ".jsonl")
	if err != nil {
		return c, err
	}
	c.Lines = len(lines)
	return c, nil
}

// messageLines reads a message file's message lines.
func messageLines(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		var l storedLine
		if len(line) == 0 || json.Unmarshal(line, &l) != nil || l.Answered || l.Role == "" {
			continue
		}
		out = append(out, bytes.Clone(line))
	}
	return out, sc.Err()
}

// find returns the generation (key, id): its files' prefix and record.
func (f Files) find(key, id string) (string, store.Conversation, bool, error) {
	all, err := f.List()
	if err != nil {
		return "", store.Conversation{}, false, err
	}
	st := &Store{dir: f.dir}
	for _, c := range all {
		if c.Key == key && c.ID == id {
			prefix := st.prefix(key)
			if !c.Live {
				prefix += "." + id
			}
			return prefix, c, true, nil
		}
	}
	return "", store.Conversation{}, false, nil
}

// Live implements store.ConversationReader.
func (f Files) Live(key string) (store.Conversation, bool, error) {
	all, err := f.List()
	if err != nil {
		return store.Conversation{}, false, err
	}
	for _, c := range all {
		if c.Key == key && c.Live {
			return c, true, nil
		}
	}
	return store.Conversation{}, false, nil
}

// Generation implements store.ConversationReader.
func (f Files) Generation(key, id string) (store.Conversation, bool, error) {
	_, c, ok, err := f.find(key, id)
	return c, ok, err
}

// Lines implements store.ConversationReader.
func (f Files) Lines(key, id string, from, to int) ([][]byte, error) {
	prefix, _, ok, err := f.find(key, id)
	if err != nil || !ok {
		return nil, err
	}
	lines, err := messageLines(prefix + ".jsonl")
	if err != nil {
		return nil, err
	}
	if to <= 0 || to > len(lines) {
		to = len(lines)
	}
	if from >= to {
		return nil, nil
	}
	return lines[from:to], nil
}

// place is where (key, id) is or would be made: its prefix, and how many
// lines it holds.
func (f Files) place(key, id string) (string, int, error) {
	prefix, c, ok, err := f.find(key, id)
	if err != nil {
		return "", 0, err
	}
	if ok {
		return prefix, c.Lines, nil
	}
	if live, ok, err := f.Live(key); err != nil || ok {
		if err == nil {
			err = fmt.Errorf("session %s already has a live conversation (%s)", key, live.ID)
		}
		return "", 0, err
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return "", 0, err
	}
	// A live conversation's ID is durable only in its metadata: a new
	// one gets the record a SaveID would write.
	prefix = (&Store{dir: f.dir}).prefix(key)
	data, err := json.Marshal(meta{Key: key, ID: id, Created: time.Now().UTC()})
	if err != nil {
		return "", 0, err
	}
	if err := writeAtomic(prefix+".meta.json", data); err != nil {
		return "", 0, err
	}
	return prefix, 0, nil
}

// Append implements store.ConversationWriter.
func (f Files) Append(key, id string, at int, lines [][]byte) error {
	prefix, n, err := f.place(key, id)
	if err != nil {
		return err
	}
	if at != n {
		return fmt.Errorf("append to session %s at %d: it holds %d messages", key, at, n)
	}
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	out, err := os.OpenFile(prefix+".jsonl", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := out.Write(buf.Bytes()); err != nil {
		out.Close()
		return fmt.Errorf("append to session %s: %w", key, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// PutMeta implements store.ConversationWriter.
func (f Files) PutMeta(key, id string, meta []byte) error {
	prefix, _, err := f.place(key, id)
	if err != nil {
		return err
	}
	return writeAtomic(prefix+".meta.json", meta)
}

// SetAside implements store.ConversationWriter: the files are renamed
// aside as /new does.
func (f Files) SetAside(key, id string) error {
	prefix, c, ok, err := f.find(key, id)
	if err != nil || !ok || !c.Live {
		return err
	}
	for _, ext := range []string{".jsonl", ".meta.json"} {
		if err := os.Rename(prefix+ext, prefix+"."+id+ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("set session %s aside: %w", key, err)
		}
	}
	return nil
}

package dreamtext

import (
	"fmt"
	"path"
	"time"
)

// Commands names the Dream commands as the reader types them, for the texts
// that point to one ("Undo it with /dream-restore 1a2b3c4d").
type Commands struct {
	Run     string // runs a Dream now
	Log     string // shows a Dream commit
	Restore string // lists Dream commits, or undoes one
	// Code shows a command as a code span: a shell command reads better
	// set apart from the sentence around it.
	Code bool
}

// Chat is how the commands are typed in a chat.
func Chat() Commands {
	return Commands{Run: "/dream", Log: "/dream-log", Restore: "/dream-restore"}
}

// CLI is how they are typed in a shell.
func CLI() Commands {
	return Commands{Run: "dreamgate dream run", Log: "dreamgate dream log", Restore: "dreamgate dream restore", Code: true}
}

// cmd renders a command with its argument, if any.
func (k Commands) cmd(name, arg string) string {
	if arg != "" {
		name += " " + arg
	}
	if k.Code {
		return "`" + name + "`"
	}
	return name
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// base is a memory file's name as users know it ("MEMORY.md").
func base(p string) string { return path.Base(p) }

// showTime renders a commit time with its zone: a named zone by name
// ("CEST"), an unnamed one by offset ("+0200"), offset zero as "UTC".
func showTime(t time.Time) string {
	name, off := t.Zone()
	switch {
	case off == 0 && (name == "" || name[0] == '+' || name[0] == '-'):
		return t.Format("2006-01-02 15:04") + " UTC"
	case name == "" || name[0] == '+' || name[0] == '-':
		return t.Format("2006-01-02 15:04 -0700")
	}
	return t.Format("2006-01-02 15:04 MST")
}

// ago renders an elapsed time coarsely: 12s, 3m, 1h5m.
func ago(d time.Duration) string {
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
}

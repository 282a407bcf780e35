package memory

import (
	"testing"

	"github.com/dreamgate/dreamgate/memory/memline"
)

func TestFactsFollowWhatReplacedALine(t *testing.T) {
	files := map[string]*memline.File{
		User: memline.ParseFile([]byte("- Ana's office is Dock 9. <!-- durable 2026-12-20 id:000c replaces:000b -->\n")),
		Cold: memline.ParseFile([]byte("# Cold memory\n\n" +
			"- Ana's office is Harbour. <!-- durable 2026-10-01 id:000a out:2026-11-20 why:budget superseded-by:000b -->\n" +
			"- Ana's office is Canal Road. <!-- durable 2026-12-01 id:000b out:2026-12-20 why:replaced superseded-by:000c -->\n" +
			"- A loop. <!-- id:00d1 superseded-by:00d2 -->\n- Its other half. <!-- id:00d2 superseded-by:00d1 -->\n" +
			"- Gone. <!-- id:00e1 superseded-by:ffff -->\n")),
	}
	x := FactsOf(files)
	harbour, _ := x.Get("000a")
	now, ok := x.Now(harbour.Line)
	if !ok || now.Line.ID != "000c" || now.File != User {
		t.Errorf("Now(Harbour) = %+v, %v; want the current line, hot", now, ok)
	}
	if _, ok := x.Now(now.Line); ok {
		t.Error("a current line has something standing for it")
	}
	loop, _ := x.Get("00d1")
	if now, ok := x.Now(loop.Line); !ok || now.Line.ID != "00d2" {
		t.Errorf("a loop: %+v, %v", now, ok)
	}
	gone, _ := x.Get("00e1")
	if got := SupersededNote(gone.Line, x); got != "superseded, no longer current (what replaced it is no longer in memory)" {
		t.Errorf("note = %q", got)
	}
	if got := SupersededNote(harbour.Line, x); got != "superseded, no longer current; now: “Ana's office is Dock 9.”" {
		t.Errorf("note = %q", got)
	}
	if got := Why(harbour.Line); got != "left hot memory 2026-11-20: moved out to keep memory within its budget (still true then)" {
		t.Errorf("Why = %q", got)
	}
}

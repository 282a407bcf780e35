package history

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Environment of the helper process run by the crash tests.
const (
	childDirEnv   = "DREAMGATE_TEST_APPEND_DIR"   // memory dir to append to
	childCountEnv = "DREAMGATE_TEST_APPEND_COUNT" // appends before exiting; 0 = until killed
	childSeedEnv  = "DREAMGATE_TEST_APPEND_SEED"
)

// TestMain lets the test binary be the helper process of the crash tests:
// run again with childDirEnv set, it appends instead of testing.
func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		os.Exit(appendAsChild(dir))
	}
	os.Exit(m.Run())
}

// appendAsChild appends entries of varied sizes (up to ~60 KB, so a SIGKILL
// can land in the middle of a write) and prints each cursor once Append
// has returned.
func appendAsChild(dir string) int {
	count, _ := strconv.Atoi(os.Getenv(childCountEnv))
	seed, _ := strconv.ParseUint(os.Getenv(childSeedEnv), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 7))
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pid := os.Getpid()
	for i := 0; count == 0 || i < count; i++ {
		var content string
		switch rng.IntN(3) {
		case 0:
			content = fmt.Sprintf("- small %d/%d", pid, i)
		case 1:
			content = fmt.Sprintf("%d/%d ", pid, i) + strings.Repeat("word ", rng.IntN(2000))
		default:
			content = fmt.Sprintf("%d/%d ", pid, i) + strings.Repeat("ü€", rng.IntN(12000))
		}
		e, err := s.Append(content, "test:crash")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintf(os.Stdout, "ack %d\n", e.Cursor)
	}
	return 0
}

// appendChild starts the helper process on dir.
func appendChild(t *testing.T, dir string, count int, seed uint64) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(),
		childDirEnv+"="+dir,
		childCountEnv+"="+strconv.Itoa(count),
		childSeedEnv+"="+strconv.FormatUint(seed, 10))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

func parseAck(line string) (int, bool) {
	rest, ok := strings.CutPrefix(line, "ack ")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// checkHistoryFile verifies the file after crashes: every complete line
// but at most maxBad is a valid entry, cursors strictly increase in file
// order, and every acknowledged cursor is present.
func checkHistoryFile(t *testing.T, dir string, acked map[int]bool, maxBad int) (valid int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, historyFile))
	if err != nil {
		t.Fatal(err)
	}
	present := map[int]bool{}
	last, bad := 0, 0
	for raw := range bytes.Lines(data) {
		e, kind := parseLine(bytes.TrimSuffix(raw, []byte("\n")))
		if kind != lineOK {
			bad++
			continue
		}
		if e.Cursor <= last {
			t.Errorf("cursor %d follows %d: not strictly increasing", e.Cursor, last)
		}
		last = e.Cursor
		present[e.Cursor] = true
		valid++
	}
	if bad > maxBad {
		t.Errorf("%d damaged lines, at most %d allowed (one torn line per kill)", bad, maxBad)
	}
	for c := range acked {
		if !present[c] {
			t.Errorf("acknowledged cursor %d is missing from the file", c)
		}
	}
	// The file must also read cleanly through the Store.
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Len(); err != nil || n != valid {
		t.Errorf("Store.Len = %d, %v; the file holds %d valid entries", n, err, valid)
	}
	t.Logf("%d valid entries, %d damaged lines, %d acknowledged", valid, bad, len(acked))
	return valid
}

func TestAppendSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 30+ processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 1))
	acked := map[int]bool{}
	const kills = 30
	for k := range kills {
		cmd, out := appendChild(t, dir, 0, rng.Uint64())
		sc := bufio.NewScanner(out)
		// Kill after a random number of acknowledged appends (0: while it
		// is still opening the store); the child keeps appending meanwhile,
		// so the kill lands at an arbitrary point of its loop.
		want := rng.IntN(8)
		for seen := 0; seen < want && sc.Scan(); {
			if c, ok := parseAck(sc.Text()); ok {
				acked[c] = true
				seen++
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		for sc.Scan() { // acks printed before the kill landed
			if c, ok := parseAck(sc.Text()); ok {
				acked[c] = true
			}
		}
		_ = cmd.Wait()
	}
	valid := checkHistoryFile(t, dir, acked, kills)
	if valid < len(acked) {
		t.Errorf("%d valid entries, fewer than the %d acknowledged", valid, len(acked))
	}
	// Numbering goes on after the crashes.
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	last, _ := s.LastCursor()
	e, err := s.Append("after the crashes", "k")
	if err != nil || e.Cursor != last+1 {
		t.Errorf("append after crashes: %d, %v; want %d", e.Cursor, err, last+1)
	}
}

func TestTwoProcessesAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	const each = 60
	var mu sync.Mutex
	acked := map[int]bool{}
	var wg sync.WaitGroup
	for p := range 2 {
		cmd, out := appendChild(t, dir, each, uint64(p+1))
		wg.Go(func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if c, ok := parseAck(sc.Text()); ok {
					mu.Lock()
					if acked[c] {
						t.Errorf("cursor %d handed out twice", c)
					}
					acked[c] = true
					mu.Unlock()
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("child %d: %v", p, err)
			}
		})
	}
	wg.Wait()
	if len(acked) != 2*each {
		t.Errorf("%d distinct cursors acknowledged, want %d", len(acked), 2*each)
	}
	if valid := checkHistoryFile(t, dir, acked, 0); valid != 2*each {
		t.Errorf("%d entries in the file, want %d", valid, 2*each)
	}
}

package dream

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"
)

// The test binary, run again with holdLockEnv set to a workspace, is
// another process holding that workspace's Dream lock (as a gateway beside
// a CLI run would) until its stdin closes; TestDreamInAnotherProcess runs
// it so.
const (
	holdLockEnv      = "DREAM_TEST_HOLD_LOCK"
	holdLockSinceEnv = "DREAM_TEST_HOLD_LOCK_SINCE" // the start time it records, Unix nanoseconds
)

func TestMain(m *testing.M) {
	if ws := os.Getenv(holdLockEnv); ws != "" {
		os.Exit(holdLock(ws))
	}
	os.Exit(m.Run())
}

// holdLock is the other process: it says "locked" once it holds the lock.
func holdLock(ws string) int {
	ns, err := strconv.ParseInt(os.Getenv(holdLockSinceEnv), 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hold lock:", err)
		return 2
	}
	f := flight{path: lockPath(ws)}
	release, err := f.acquire(time.Unix(0, ns))
	if err != nil {
		fmt.Fprintln(os.Stderr, "hold lock:", err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	release()
	return 0
}

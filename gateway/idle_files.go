package gateway

import "time"

// fileIdleAfter is how long a session's file stays open after its last
// message. Reopening costs one open(2) on the next message; holding it costs
// a descriptor per conversation seen in the last hour.
const fileIdleAfter = 5 * time.Minute

// closeIdleFiles closes the files of sessions quiet for fileIdleAfter and
// returns how many it closed.
func (g *Gateway) closeIdleFiles() int {
	return g.deps.Sessions.CloseIdleFiles(g.now().Add(-fileIdleAfter))
}

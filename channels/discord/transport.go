package discord

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// maxIdlePerHost keeps enough connections to Discord open for replies to
// many channels at once; the net/http default of 2 makes a burst of sends
// dial a new connection for nearly every request.
const maxIdlePerHost = 32

// newTransport is net/http's default transport with more idle connections
// per host.
func newTransport() http.RoundTripper {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t := base.Clone()
	t.MaxIdleConnsPerHost = maxIdlePerHost
	return t
}

// rewriteTransport sends every REST request to the configured apiURL instead
// of Discord's host. discordgo builds its URLs from package-level variables;
// rewriting here leaves them alone, so adapters pointed at different servers
// (parallel tests) never interfere.
type rewriteTransport struct {
	base *url.URL
	next http.RoundTripper
}

func (t rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.URL.Scheme = t.base.Scheme
	r.URL.Host = t.base.Host
	r.URL.Path = strings.TrimSuffix(t.base.Path, "/") + req.URL.Path
	r.URL.RawPath = ""
	r.Host = ""
	return t.next.RoundTrip(r)
}

// openWatch bounds one gateway Open: discordgo's Open is not cancellable and
// blocks on reads until HELLO and READY arrive, so the socket it dials is
// closed when the attempt's context ends (shutdown, or a server that stalls).
// Once Open has returned the watch is released and the connection lives on.
type openWatch struct {
	mu   sync.Mutex
	ctx  context.Context
	stop func() bool
}

// begin sets the context of the next dial.
func (w *openWatch) begin(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ctx, w.stop = ctx, nil
}

// end releases the watch on the dialled connection, if any.
func (w *openWatch) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		w.stop()
	}
	w.ctx, w.stop = nil, nil
}

// dial is the websocket dialer's NetDialContext.
func (w *openWatch) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	w.mu.Lock()
	watch := w.ctx
	w.mu.Unlock()
	var d net.Dialer
	if watch == nil {
		return d.DialContext(ctx, network, addr)
	}
	conn, err := d.DialContext(watch, network, addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(watch, func() { _ = conn.Close() })
	w.mu.Lock()
	if w.ctx == watch {
		w.stop = stop
	}
	w.mu.Unlock()
	return conn, nil
}

package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

// gatewayProc is a running `dreamgate gateway`.
type gatewayProc struct {
	cmd    *exec.Cmd
	stderr *testkit.Buffer
	health string
	exited chan struct{}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startGateway runs the gateway with the harness config; it is stopped with
// SIGTERM when the test ends.
func (h *harness) startGateway(t testing.TB) *gatewayProc {
	t.Helper()
	addr := freeAddr(t)
	h.set("gateway.healthAddr", addr)
	cmd := exec.Command(binPath, "--config", h.cfgPath, "gateway")
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	p := &gatewayProc{cmd: cmd, stderr: &testkit.Buffer{}, health: "http://" + addr + "/healthz", exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	cmd.Stdout = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exited
			t.Errorf("gateway did not stop within 20s of SIGTERM; log:\n%s", p.stderr.String())
		}
	})
	return p
}

type healthBody struct {
	Status   string `json:"status"`
	Channels map[string]struct {
		State string `json:"state"`
	} `json:"channels"`
}

func (p *gatewayProc) healthz() (healthBody, error) {
	var hb healthBody
	resp, err := http.Get(p.health)
	if err != nil {
		return hb, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&hb)
	return hb, err
}

// waitConnected polls /healthz until every named channel is connected. The
// gateway is another process, so there is nothing to wait on but its
// answers.
func (p *gatewayProc) waitConnected(t testing.TB, names ...string) {
	t.Helper()
	if !p.connected(t, 30*time.Second, names...) {
		t.Fatalf("gateway exited; log:\n%s", p.stderr.String())
	}
}

// connected polls /healthz until every named channel is connected, and
// reports false when the process exits first; past within, the test fails.
func (p *gatewayProc) connected(t testing.TB, within time.Duration, names ...string) bool {
	t.Helper()
	deadline := time.After(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		hb, err := p.healthz()
		ok := err == nil
		for _, n := range names {
			ok = ok && hb.Channels[n].State == "connected"
		}
		if ok {
			return true
		}
		select {
		case <-deadline:
			t.Fatalf("channels %v not connected within %s (last %+v, %v); log:\n%s", names, within, hb, err, p.stderr.String())
		case <-p.exited:
			return false
		case <-tick.C:
		}
	}
}

func waitCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// The scenario runner: end-to-end scenarios written as txtar scripts
// (testdata/scenarios/*.txtar) that a reader can scan, run by testscript
// against the built binary. The scripts' commands start what a scenario
// needs — a PostgreSQL schema of its own, the Slack and Discord fakes, a
// fake model per gateway, `dreamgate gateway` processes on one workspace
// and database — inject what people say, kill a process, and check what
// was posted. The fakes run in this test process; each gateway is a real
// process of the built binary, which `gateway kill` ends with SIGKILL.
// `exec dreamgate …` runs the binary itself. See scenarioCmds for the
// commands.

// TestScenarios runs every script of testdata/scenarios. They need
// PostgreSQL (the cluster .ci/run starts): without it they are skipped,
// and under CI=true they fail.
func TestScenarios(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "scenarios"),
		Setup:               setupScenario,
		Cmds:                scenarioCmds(),
		RequireExplicitExec: true,
	})
}

// scriptT is what a scenario's steps need of what runs them: a script
// (*testscript.TestScript) or a benchmark (benchT).
type scriptT interface {
	Fatalf(format string, args ...any)
	Check(err error)
	Logf(format string, args ...any)
}

// scenarioKey is where Setup keeps a script's scenario (ts.Value).
type scenarioKey struct{}

// scenario is one script's world.
type scenario struct {
	work string
	dsn  string

	mu       sync.Mutex
	slack    *fakeslack.Server
	discord  *fakediscord.Server
	gateways map[string]*scenarioGateway
	models   map[string]*scenarioModel
	talk     *slackTalk
	archived int // the archive's entries at the last archive wait or check
	pool     *pgxpool.Pool
}

// scenarioGateway is one `dreamgate gateway` of a scenario.
type scenarioGateway struct {
	name    string
	cfgPath string
	cmd     *exec.Cmd
	health  string
	log     *testkit.Buffer
	exited  chan struct{}
}

// env is the environment of the gateway's process and of the commands
// run with its config: its folder as home.
func (g *scenarioGateway) env() []string {
	return []string{"HOME=" + filepath.Dir(g.cfgPath), "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
}

func setupScenario(env *testscript.Env) error {
	server := os.Getenv(pgtest.EnvDSN)
	if server == "" {
		why := pgtest.EnvDSN + " is not set: no PostgreSQL for the scenarios (make test-postgres starts one)"
		if os.Getenv("CI") == "true" {
			env.T().Fatal("a PostgreSQL scenario may not be skipped under CI: " + why)
		}
		env.T().Skip("skipped: " + why)
	}
	schema := "sc_" + randomID()
	if err := pgExec(server, "CREATE SCHEMA "+schema); err != nil {
		return fmt.Errorf("create the scenario's schema: %w", err)
	}
	dsn, err := pgtest.WithSearchPath(server, schema)
	if err != nil {
		return err
	}
	s := &scenario{work: env.WorkDir, dsn: dsn, gateways: map[string]*scenarioGateway{}, models: map[string]*scenarioModel{}}
	env.Values[scenarioKey{}] = s
	env.Defer(func() {
		s.stopAll()
		if s.pool != nil {
			s.pool.Close()
		}
		if err := pgExec(server, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			env.T().Log("drop the scenario's schema: ", err)
		}
	})
	env.Setenv("DSN", dsn)
	env.Setenv("PATH", filepath.Dir(binPath)+string(os.PathListSeparator)+env.Getenv("PATH"))
	env.Setenv("TZ", "UTC")
	env.Setenv("HOME", env.WorkDir)
	return nil
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func pgExec(dsn, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func scenarioOf(ts *testscript.TestScript) *scenario {
	return ts.Value(scenarioKey{}).(*scenario)
}

// scenarioCmds are the scripts' commands beside testscript's own.
func scenarioCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"gateway": cmdScenarioGateway,
		"slack":   cmdScenarioSlack,
		"discord": cmdScenarioDiscord,
		"model":   cmdScenarioModel,
		"metric":  cmdScenarioMetric,
		"healthz": cmdScenarioHealthz,
		"archive": cmdScenarioArchive,
		"memory":  cmdScenarioMemory,
		"log":     cmdScenarioLog,
		"dream":   cmdScenarioDream,
	}
}

// stopAll ends every gateway still running and the fakes.
func (s *scenario) stopAll() {
	s.mu.Lock()
	gws := make([]*scenarioGateway, 0, len(s.gateways))
	for _, g := range s.gateways {
		gws = append(gws, g)
	}
	s.mu.Unlock()
	for _, g := range gws {
		g.stop(syscall.SIGTERM)
	}
	for _, m := range s.models {
		m.close()
	}
	if s.slack != nil {
		s.slack.Close()
	}
	if s.discord != nil {
		s.discord.Close()
	}
}

// gateway start NAME [key=value ...] | gateway kill NAME | gateway stop NAME
//
// start writes NAME's config (the scenario's workspace and database, a
// state directory of its own, its own fake model, the fakes started so
// far as its channels; each key=value, a dotted config path and a JSON
// value, changes it) and runs `dreamgate gateway` until its channels are
// connected. kill ends it with SIGKILL, stop with SIGTERM, each waiting
// for it to exit.
func cmdScenarioGateway(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: gateway start|kill|stop NAME [key=value ...]")
	}
	s, name := scenarioOf(ts), args[1]
	switch args[0] {
	case "start":
		s.startGateway(ts, name, args[2:])
	case "kill", "stop":
		g := s.gateway(ts, name)
		sig := syscall.SIGKILL
		if args[0] == "stop" {
			sig = syscall.SIGTERM
		}
		if !g.stop(sig) {
			ts.Fatalf("gateway %s did not exit after %v; log:\n%s", name, sig, g.log.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ts.Check(s.waitConnectionsGone(ctx, name))
	default:
		ts.Fatalf("gateway: unknown action %q", args[0])
	}
}

func (s *scenario) gateway(ts *testscript.TestScript, name string) *scenarioGateway {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gateways[name]
	if g == nil {
		ts.Fatalf("no gateway %s", name)
	}
	return g
}

// startGateway writes name's config and runs it until it answers.
func (s *scenario) startGateway(ts scriptT, name string, sets []string) {
	s.mu.Lock()
	if s.gateways[name] != nil {
		s.mu.Unlock()
		ts.Fatalf("gateway %s is already running", name)
	}
	model := s.models[name]
	if model == nil {
		model = newScenarioModel(name)
		s.models[name] = model
	}
	s.mu.Unlock()
	cfg := s.gatewayConfig(ts, name, model)
	for _, kv := range sets {
		k, v, ok := strings.Cut(kv, "=")
		var val any
		if !ok || json.Unmarshal([]byte(v), &val) != nil {
			ts.Fatalf("gateway start: %q is not key=<JSON value>", kv)
		}
		setPath(cfg, k, val)
	}
	dir := filepath.Join(s.work, name)
	cfgPath := filepath.Join(dir, "config.json")
	data, err := json.MarshalIndent(cfg, "", "  ")
	ts.Check(err)
	ts.Check(os.MkdirAll(dir, 0o700))
	ts.Check(os.WriteFile(cfgPath, data, 0o600))
	g := &scenarioGateway{name: name, cfgPath: cfgPath, log: &testkit.Buffer{}, exited: make(chan struct{}),
		health: "http://" + cfg["gateway"].(map[string]any)["healthAddr"].(string)}
	g.cmd = exec.Command(binPath, "--config", cfgPath, "gateway")
	g.cmd.Env = g.env()
	g.cmd.Stdout, g.cmd.Stderr = g.log, g.log
	ts.Check(g.cmd.Start())
	go func() { _ = g.cmd.Wait(); close(g.exited) }()
	s.mu.Lock()
	s.gateways[name] = g
	s.mu.Unlock()
	if !g.waitConnected(2 * time.Minute) {
		ts.Fatalf("gateway %s did not connect; log:\n%s", name, g.log.String())
	}
	ts.Logf("gateway %s running (pid %d)", name, g.cmd.Process.Pid)
}

// gatewayConfig is name's config before the script's changes.
func (s *scenario) gatewayConfig(ts scriptT, name string, model *scenarioModel) map[string]any {
	chans := map[string]any{"terminal": map[string]any{"enabled": false}}
	if sl := s.slack; sl != nil {
		chans["slack"] = map[string]any{"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(),
			"replyInThread": true}
	}
	if dc := s.discord; dc != nil {
		chans["discord"] = map[string]any{"enabled": true, "token": dc.Token(), "apiURL": dc.URL()}
	}
	return map[string]any{
		"workspace": filepath.Join(s.work, "ws"),
		"stateDir":  filepath.Join(s.work, name, "state"),
		"llm": map[string]any{"baseURL": model.srv.URL(), "apiKey": "sk-" + name, "model": "test-model",
			"contextWindow": 128000, "maxTokens": 1024, "timeoutSeconds": 60},
		"agent":    map[string]any{"idleCompactAfterMinutes": 0},
		"gateway":  map[string]any{"healthAddr": scenarioAddr(ts), "maxConcurrentTurns": 4},
		"store":    map[string]any{"postgres": s.appNamed(ts, name), "leaseSeconds": 3},
		"channels": chans,
	}
}

// scenarioAddr is a free address on 127.0.0.1.
func scenarioAddr(ts scriptT) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	defer ln.Close()
	return ln.Addr().String()
}

// setPath sets a dotted path of a config map.
func setPath(cfg map[string]any, path string, v any) {
	keys := strings.Split(path, ".")
	m := cfg
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}

// waitConnected polls /healthz until every channel is connected (or
// standing by for a Discord shard another process holds); false when the
// process exits first or within passes.
func (g *scenarioGateway) waitConnected(within time.Duration) bool {
	deadline := time.After(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if hb, err := g.healthz(); err == nil && len(hb.Channels) > 0 {
			ok := true
			for _, c := range hb.Channels {
				ok = ok && (c.State == "connected" || c.State == "standby")
			}
			if ok {
				return true
			}
		}
		select {
		case <-deadline:
			return false
		case <-g.exited:
			return false
		case <-tick.C:
		}
	}
}

// scenarioHealth is what the scenarios read of /healthz.
type scenarioHealth struct {
	Channels map[string]struct {
		State string `json:"state"`
	} `json:"channels"`
	Processes *clusterHealth `json:"processes"`
}

func (g *scenarioGateway) healthz() (scenarioHealth, error) {
	var hb scenarioHealth
	resp, err := http.Get(g.health + "/healthz")
	if err != nil {
		return hb, err
	}
	defer resp.Body.Close()
	return hb, json.NewDecoder(resp.Body).Decode(&hb)
}

// stop signals the process and waits for it to exit; false if it did
// not within a minute (it is killed then).
func (g *scenarioGateway) stop(sig syscall.Signal) bool {
	select {
	case <-g.exited:
		return true
	default:
	}
	_ = g.cmd.Process.Signal(sig)
	select {
	case <-g.exited:
		return true
	case <-time.After(time.Minute):
		_ = g.cmd.Process.Kill()
		<-g.exited
		return false
	}
}

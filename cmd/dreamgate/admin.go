package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/internal/adminsock"
	"github.com/dreamgate/dreamgate/recall"
)

// The operator's commands (status, why, dream run|log|restore, backup)
// reach a running gateway through its admin socket in the state
// directory, <stateDir>/admin.sock: the gateway runs them itself, with its
// secrets, its account's files and its own parts (its Dreamer, its recall
// index), and the command prints what it answers. So they work against a
// gateway under systemd (secrets in a root-only file, state owned by a
// dynamic user) or in a container, from a shell that has neither. Without
// a gateway they run here, as before — unless the state directory is
// another account's, whose files this one must not write.

// adminSocketPath is the admin socket of a state directory.
func adminSocketPath(stateDir string) string { return filepath.Join(stateDir, adminsock.FileName) }

// viaGateway runs the command name args on the gateway that answers on
// cfg's admin socket. asked is false when none answers and this account may
// run the command itself; err is the command's outcome otherwise.
func (e *env) viaGateway(ctx context.Context, cfg Config, name string, args []string) (asked bool, err error) {
	path := adminSocketPath(cfg.StateDir)
	code, err := adminsock.Call(ctx, path, append([]string{name}, args...), e.stdout, e.stderr)
	switch {
	case err == nil && code == 0:
		return true, nil
	case err == nil:
		return true, &exitError{code: code, err: errors.New("")}
	case errors.Is(err, adminsock.ErrNoGateway):
		if owner, theirs := otherOwner(cfg.StateDir); theirs {
			return true, &exitError{code: 1, err: fmt.Errorf("dreamgate: no gateway answers on %s, and the state directory %s belongs to another account (%s), whose files this one must not write: run the command as that account, or while the gateway runs (docs/operations.md)", path, cfg.StateDir, owner)}
		}
		return false, nil
	case errors.Is(err, adminsock.ErrRefused):
		return true, &exitError{code: 1, err: fmt.Errorf("dreamgate: the running gateway's admin socket %s belongs to another account: run the command as the account the gateway runs as, or as root", path)}
	default:
		return true, &exitError{code: 1, err: fmt.Errorf("dreamgate: asking the running gateway: %v", err)}
	}
}

// operatorParts are what the operator's commands work with: built for the
// one command by the CLI, or the running gateway's own when the command
// came through its admin socket.
type operatorParts struct {
	cfg Config
	a   *app // nil before the workspace is set up (status only)
	// dreamer is the gateway's Dreamer, or one made for the command.
	dreamer func() (*dream.Dreamer, error)
	// live is the running gateway; nil in the CLI.
	live *gatewayProcess
}

// parts are a's parts for a command of the CLI.
func (a *app) parts(live *gatewayProcess) operatorParts {
	return operatorParts{cfg: a.cfg, a: a, dreamer: a.dreamer, live: live}
}

// ledger is Dream's progress as the gateway's Dreamer keeps it, or read
// for the command.
func (op operatorParts) ledger() *dream.Ledger {
	if op.live != nil {
		return op.a.ledger(op.live.dreamer)
	}
	return op.a.ledger(nil)
}

// recall is the recall index: the gateway's, which it keeps open, or one
// opened for the command (closed with the app).
func (op operatorParts) recall() *recall.Index { return op.a.recallIndex() }

// parts are the running gateway's parts.
func (p *gatewayProcess) parts() operatorParts {
	op := p.a.parts(p)
	op.dreamer = func() (*dream.Dreamer, error) {
		if p.dreamer == nil {
			return nil, errors.New(p.dreamOffReason())
		}
		return p.dreamer, nil
	}
	return op
}

// dreamOffReason says why the running gateway has no Dream.
func (p *gatewayProcess) dreamOffReason() string {
	if p.a.dreamOff != "" {
		return p.a.dreamOff
	}
	return "Dream is off in the running gateway's config (dream.enabled)."
}

// adminCommands are the commands the gateway runs for its admin socket.
var adminCommands = map[string]func(ctx context.Context, e *env, p *gatewayProcess, args []string) error{
	"status": adminStatus,
	"why":    adminWhy,
	"dream":  adminDream,
	"backup": adminBackup,
}

// startAdmin opens the admin socket. A second gateway with the same state
// directory (Discord shards) leaves it to the first; a socket that cannot
// be made (a state directory's path too long for one) is said in the log,
// and the gateway runs without.
func (p *gatewayProcess) startAdmin() (stop func()) {
	path := adminSocketPath(p.cfg.StateDir)
	s, err := adminsock.Listen(path)
	if err != nil {
		if errors.Is(err, adminsock.ErrInUse) {
			p.logger.Info("another gateway answers on the admin socket; this one leaves it to it", "socket", path)
		} else {
			p.logger.Warn("no admin socket: the operator's commands run on their own, not through this gateway", "socket", path, "err", err)
		}
		return func() {}
	}
	s.Serve(p.runAdmin)
	p.logger.Info("admin socket listening", "socket", path)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	}
}

// runAdmin runs one command line from the admin socket and returns its exit
// status, as the CLI would have exited.
func (p *gatewayProcess) runAdmin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	run, ok := adminCommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "dreamgate: the gateway does not run %q for the admin socket\n", args[0])
		return 2
	}
	p.logger.Info("admin command", "command", adminName(args))
	e := &env{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr, getenv: p.e.getenv,
		isTTY: func(any) bool { return false }}
	return exitCode(run(ctx, e, p, args[1:]), stderr)
}

// adminName names a command for the log, without its arguments (a why's
// words are what someone said).
func adminName(args []string) string {
	if args[0] == "dream" && len(args) > 1 {
		return "dream " + args[1]
	}
	return args[0]
}

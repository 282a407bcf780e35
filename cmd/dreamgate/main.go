// Command dreamgate runs the chat gateway and its tools. It is the only place
// that reads config and picks concrete adapters; every library package gets
// its dependencies from here.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"
)

const usage = `dreamgate — a chat gateway whose assistant remembers.

Usage:
  dreamgate [--config PATH] <command> [flags]

Commands:
  onboard                      create config and workspace (never overwrites)
  gateway [--terminal]         run every enabled channel, the Dream scheduler, /healthz and /readyz;
                               the terminal chat only at a terminal (or with --terminal)
  chat [-m msg] [--session s]  chat in the terminal; with -m: one turn, reply on stdout
  dream run                    run Dream now
  dream log [sha]              show the latest Dream change, or that commit
  dream restore [sha [keep|all]]  list changes, or undo one line by line
  why [--scope NAME] <words>   where the remembered lines holding the words came from
  memory move --conversation KEY --to SCOPE [--from SCOPE] [--since TIME] [--dry-run]
                               move a conversation's archive entries and the memory lines
                               traced to them to the scope it belongs in (as one commit)
  memory edit [--scope NAME] [--from PATH|-] FILE
                               edit a memory file (in $EDITOR, or the content given) as a hand edit
  web-link                     a one-time link that signs the operator in to the memory page
  migrate --to-postgres [DSN]  copy the program state from the files into PostgreSQL (again: no change)
  export DIR                   write the program state back as files: DIR/workspace, DIR/state
  backup FILE                  the workspace and state as one .tar.gz, taken while the gateway runs
  restore-backup FILE          a backup written into this config's empty home
  status                       config, workspace, channels, model, last and next Dream;
                               exit 1 when the model cannot be used
  version                      version, commit, build date and Go version (also --version)
  eval [--scenario F] [--runs N] [--json]  how well memory works with the configured model

Every command takes --config PATH (default ~/.dreamgate/config.json). status, why, dream and
backup are run by the gateway when one runs with the same state directory (its admin socket).
`

// exitError carries a process exit code up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	privateUmask()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// env is what every subcommand gets.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	configPath     string
	// isTTY says whether a stream is a terminal; tests replace it to play
	// a person at a terminal.
	isTTY func(any) bool
	// shutdownGrace replaces shutdownGrace in the chat's shutdown when
	// set (tests).
	shutdownGrace time.Duration
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return runEnv(ctx, &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, isTTY: isTerminal}, args)
}

// runEnv runs one command line with e's streams; --config fills
// e.configPath.
func runEnv(ctx context.Context, e *env, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	top := flag.NewFlagSet("dreamgate", flag.ContinueOnError)
	top.SetOutput(stderr)
	// The usage goes to stdout when asked for (-h, --help), to stderr
	// after a mistake (with exit 2).
	top.Usage = func() {}
	configPath := top.String("config", "", "config file")
	showVersion := top.Bool("version", false, "print the version and exit")
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprint(stderr, usage)
		return 2
	}
	if *showVersion {
		fmt.Fprint(stdout, readVersion().String())
		return 0
	}
	rest := top.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	e.configPath = *configPath
	var err error
	switch rest[0] {
	case "onboard":
		err = cmdOnboard(ctx, e, rest[1:])
	case "gateway":
		err = cmdGateway(ctx, e, rest[1:])
	case "chat":
		err = cmdChat(ctx, e, rest[1:])
	case "dream":
		err = cmdDream(ctx, e, rest[1:])
	case "status":
		err = cmdStatus(ctx, e, rest[1:])
	case "why":
		err = cmdWhy(ctx, e, rest[1:])
	case "backup":
		err = cmdBackup(ctx, e, rest[1:])
	case "restore-backup":
		err = cmdRestoreBackup(ctx, e, rest[1:])
	case "migrate":
		err = cmdMigrate(ctx, e, rest[1:])
	case "export":
		err = cmdExport(ctx, e, rest[1:])
	case "memory":
		err = cmdMemory(ctx, e, rest[1:])
	case "web-link":
		err = cmdWebLink(ctx, e, rest[1:])
	case "eval":
		err = cmdEval(ctx, e, rest[1:])
	case "version":
		err = cmdVersion(ctx, e, rest[1:])
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "dreamgate: unknown command %q\n\n%s", rest[0], usage)
		return 2
	}
	return exitCode(err, stderr)
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ce *configError
	if errors.As(err, &ce) {
		fmt.Fprintf(stderr, "dreamgate: invalid config: %v\n", ce)
		return 2
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if msg := ee.err.Error(); msg != "" {
			fmt.Fprintln(stderr, msg)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "dreamgate: %v\n", err)
	return 1
}

// flags returns a FlagSet that takes --config like every subcommand.
func (e *env) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("dreamgate "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {} // parse prints it, where it belongs
	fs.Func("config", "config file (default ~/.dreamgate/config.json)", func(v string) error {
		e.configPath = v
		return nil
	})
	return fs
}

// parse parses subcommand flags followed by at most maxArgs arguments; a
// usage error exits 2. An argument too many is refused rather than
// dropped: `chat -m hi there` would otherwise send only "hi".
func (e *env) parse(fs *flag.FlagSet, args []string, maxArgs int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			e.printUsage(fs, e.stdout) // asked for: the answer
			return &exitError{code: 0, err: errors.New("")}
		}
		e.printUsage(fs, e.stderr) // after flag's one line naming the mistake
		return &exitError{code: 2, err: errors.New("")}
	}
	if fs.NArg() > maxArgs {
		return &exitError{code: 2, err: fmt.Errorf("%s: unexpected argument %q (see %s -h)", fs.Name(), fs.Arg(maxArgs), fs.Name())}
	}
	return nil
}

// logOptions are every log handler's: durations are written as people
// read them ("1.25s", "340ms"), where JSON would write nanoseconds.
func logOptions(level slog.Level) *slog.HandlerOptions {
	return &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Value.Kind() == slog.KindDuration {
			a.Value = slog.StringValue(humanDuration(a.Value.Duration()))
		}
		return a
	}}
}

// humanDuration is d to the millisecond (to the microsecond under one).
func humanDuration(d time.Duration) string {
	if d < time.Millisecond && d > -time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// printUsage prints a subcommand's flags to w.
func (e *env) printUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage of %s:\n", fs.Name())
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(e.stderr)
}

// isHelp reports an argument that asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// config is the config of a command that runs no channel and no memory
// page: every command but the gateway. The channels' and the page's tokens
// are not needed, so an operator's shell without them (the service keeps
// them in its own environment) runs status, why, dream and the rest.
func (e *env) config() (Config, error) { return e.loadConfig(false) }

// gatewayConfig is the gateway's config: the channels' and the memory
// page's secrets are checked too.
func (e *env) gatewayConfig() (Config, error) { return e.loadConfig(true) }

func (e *env) loadConfig(secrets bool) (Config, error) {
	path := e.configPath
	if path == "" {
		return loadConfigFor(defaultConfigPath(), e.getenv, secrets)
	}
	// Only the default file may be missing: a --config that names nothing
	// is a typo, and running on defaults would hide it.
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return Config{}, &configError{path: path, msg: "no such file (`dreamgate --config " + path + " onboard` writes one)"}
	}
	return loadConfigFor(path, e.getenv, secrets)
}

// logger logs to stderr: text on a terminal, JSON otherwise.
// DREAMGATE_LOG_LEVEL (debug, info, warn, error) overrides the level.
func (e *env) logger(defaultLevel slog.Level) *slog.Logger {
	level := defaultLevel
	if l, err := parseLogLevel(e.getenv(logLevelVar)); err == nil {
		level = l // a bad value is refused with the config
	}
	opts := logOptions(level)
	if e.isTTY(e.stderr) {
		return slog.New(slog.NewTextHandler(e.stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(e.stderr, opts))
}

func (e *env) stdinIsTTY() bool { return e.isTTY(e.stdin) }

// streamReplies says whether the terminal chat shows replies as they are
// written: only to a person at a terminal, so piped output stays exactly
// the replies.
func (e *env) streamReplies() bool {
	return e.stdinIsTTY() && e.isTTY(e.stdout)
}

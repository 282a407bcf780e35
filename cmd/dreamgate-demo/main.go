// Command dreamgate-demo is make demo: the gateway at this terminal with a
// stand-in for a model, so that a newcomer sees memory work in a minute
// without a model server or a key.
//
// The stand-in is the rule-following fake the tests use
// (llm/llmtest.MemoryModel), served in OpenAI's format on 127.0.0.1 by
// this program: it takes what is said as facts, Dreams them into memory
// by fixed rules and answers questions from memory. It lives here, not in
// the dreamgate binary, which carries no test code. The gateway runs in a
// home of its own (a new temporary folder, removed at the end, unless
// -home names one to keep), so the demo never touches ~/.dreamgate.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

func main() {
	bin := flag.String("bin", "bin/dreamgate", "the dreamgate binary (make build)")
	home := flag.String("home", "", "the demo's home, kept (default: a new temporary folder, removed at the end)")
	flag.Parse()
	// Ctrl-C at the terminal reaches the gateway, which stops; the demo
	// waits for it rather than leave it behind.
	signal.Ignore(os.Interrupt)
	code, err := run(context.Background(), *bin, *home, os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "make demo:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// intro is said before the gateway's own first screen.
const intro = `make demo: the gateway with a stand-in for a model — the rule-following fake the tests use, no model
and no key. It takes what you say as facts and answers questions from memory. Try:
  I live in Lisbon and work in a bakery.
  /dream            (archive this conversation and dream it into USER.md, a git commit)
  /dream-log        (that commit's diff)     then  /why Lisbon   or   Where do I live?
`

// run starts the stand-in, writes the demo's config and runs the gateway
// on in, out and errOut; it returns the gateway's exit status.
func run(ctx context.Context, bin, home string, in io.Reader, out, errOut io.Writer) (int, error) {
	if _, err := os.Stat(bin); err != nil {
		return 0, fmt.Errorf("no dreamgate binary at %s (make build): %w", bin, err)
	}
	if home == "" {
		dir, err := os.MkdirTemp("", "dreamgate-demo-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(dir)
		home = dir
	}
	home, err := filepath.Abs(home)
	if err != nil {
		return 0, err
	}
	model := llmtest.Start()
	defer model.Close()
	model.SetResponder(llmtest.MemoryModel)
	cfgPath, err := writeConfig(home, model.URL())
	if err != nil {
		return 0, err
	}
	fmt.Fprint(errOut, intro)
	cmd := exec.CommandContext(ctx, bin, "--config", cfgPath, "gateway", "--terminal")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, errOut
	cmd.Env = append(os.Environ(), "HOME="+home)
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}

// writeConfig writes the demo's config in home: its folders there, the
// stand-in as the one model, no health address (a gateway of your own may
// hold the default one).
func writeConfig(home, modelURL string) (string, error) {
	cfg := map[string]any{
		"workspace": filepath.Join(home, "workspace"),
		"stateDir":  filepath.Join(home, "state"),
		"llm":       map[string]any{"baseURL": modelURL, "model": "rule-following-demo", "contextWindow": 128000},
		"gateway":   map[string]any{"healthAddr": ""},
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", err
	}
	p := filepath.Join(home, "config.json")
	return p, os.WriteFile(p, data, 0o600)
}

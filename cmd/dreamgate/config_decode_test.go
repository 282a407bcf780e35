package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/mcp"
)

// loadConfigText writes body as a config file in a folder of its own and
// loads it with env as the environment.
func loadConfigText(t *testing.T, body string, env map[string]string) (Config, string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, func(k string) string { return env[k] })
	return cfg, path, err
}

// A config file that is wrong is refused with one sentence that names the
// file and the key, and says what to write instead; a secret in a refused
// URL never shows.
func TestConfigFileIsReadStrictly(t *testing.T) {
	type env = map[string]string
	tests := []struct {
		name, body string
		env        env
		// want are the pieces of the error after the file's name; the
		// file is named first unless the value came from env.
		want []string
		// secret must not appear in the error.
		secret string
	}{
		// Not an object.
		{name: "null", body: "null", want: []string{"the file must hold one JSON object", "not null"}},
		{name: "null with spaces", body: " \n null \n", want: []string{"the file must hold one JSON object", "not null"}},
		{name: "list", body: "[]", want: []string{"the file must hold one JSON object", "not a list"}},
		{name: "string", body: `"{}"`, want: []string{"the file must hold one JSON object", "not a string"}},
		{name: "number", body: "42", want: []string{"the file must hold one JSON object", "not the number 42"}},
		{name: "boolean", body: "true", want: []string{"the file must hold one JSON object"}},
		{name: "empty", body: "", want: []string{"the file is empty"}},
		{name: "blank", body: " \n\t", want: []string{"the file is empty"}},
		{name: "two objects", body: "{} {}", want: []string{"unexpected data after the JSON object"}},
		{name: "cut short", body: `{"llm": {"model": "x"}`, want: []string{"invalid JSON"}},
		{name: "syntax", body: "{\n  \"llm\": {\"model\" \"x\"}\n}", want: []string{"invalid JSON at line 2"}},

		// Keys are exact.
		{name: "key in another case", body: `{"llm": {"baseUrl": "http://127.0.0.1:1/v1"}}`,
			want: []string{"llm.baseUrl: unknown key: keys are case-sensitive, write llm.baseURL"}},
		{name: "top key in another case", body: `{"Workspace": "/srv/ws"}`,
			want: []string{"Workspace: unknown key: keys are case-sensitive, write workspace"}},
		{name: "object in another case", body: `{"channels": {"Slack": {"enabled": false}}}`,
			want: []string{"channels.Slack: unknown key: keys are case-sensitive, write channels.slack"}},
		{name: "MCP server key in another case", body: `{"tools": {"mcpServers": {"x": {"command": "a", "TimeoutSeconds": 5}}}}`,
			want: []string{"tools.mcpServers.x.TimeoutSeconds: unknown key: keys are case-sensitive, write tools.mcpServers.x.timeoutSeconds"}},

		// Unknown keys: the whole path and the nearest key.
		{name: "near miss", body: `{"channels": {"slack": {"enable": true}}}`,
			want: []string{"channels.slack.enable: unknown key; did you mean channels.slack.enabled?"}},
		{name: "misspelt", body: `{"channels": {"discord": {"alowFrom": ["1"]}}}`,
			want: []string{"channels.discord.alowFrom: unknown key; did you mean channels.discord.allowFrom?"}},
		{name: "start of a key", body: `{"tools": {"mcpServers": {"x": {"command": "a", "timeout": 5}}}}`,
			want: []string{"tools.mcpServers.x.timeout: unknown key; did you mean tools.mcpServers.x.timeoutSeconds?"}},
		{name: "key at the wrong level", body: `{"slack": {"enabled": true}}`,
			want: []string{"slack: unknown key here; did you mean channels.slack?"}},
		{name: "key in the wrong object", body: `{"llm": {"cron": "0 * * * *"}}`,
			want: []string{"llm.cron: unknown key here; did you mean dream.cron?"}},
		{name: "misspelt with an accent", body: `{"dream": {"crön": "0 * * * *"}}`,
			want: []string{"dream.crön: unknown key; did you mean dream.cron?"}},
		{name: "nothing near", body: `{"gateway": {"zzzzzz": 1}}`,
			want: []string{"gateway.zzzzzz: unknown key"}},
		{name: "key inside a list", body: `{"admins": ["slack:U1"], "channels": {"terminal": {"enabled": true, "colour": 1}}}`,
			want: []string{"channels.terminal.colour: unknown key"}},
		{name: "twice", body: `{"llm": {"model": "a", "model": "b"}}`,
			want: []string{"llm.model: appears twice in the same object"}},

		// Values that were let through.
		{name: "slack command prefix with a space", body: `{"channels": {"slack": {"commandPrefix": "a b/"}}}`,
			want: []string{"channels.slack.commandPrefix: must be up to 16 lower-case letters", `got "a b/"`}},
		{name: "slack command prefix in capitals", body: `{"channels": {"slack": {"commandPrefix": "DG-"}}}`,
			want: []string{"channels.slack.commandPrefix: must be"}},
		{name: "MCP timeout 0", body: `{"tools": {"mcpServers": {"x": {"command": "a", "timeoutSeconds": 0}}}}`,
			want: []string{"tools.mcpServers.x.timeoutSeconds: must be between 1 and 3600 seconds, got 0 (leave it out for the default, 30)"}},
		{name: "MCP timeout too long", body: `{"tools": {"mcpServers": {"x": {"command": "a", "timeoutSeconds": 3601}}}}`,
			want: []string{"tools.mcpServers.x.timeoutSeconds: must be between 1 and 3600 seconds, got 3601"}},
		{name: "workspace under another user's home", body: `{"workspace": "~bob/ws"}`,
			want: []string{"workspace: only ~/", `not "~bob/ws"`}},

		// Invalid URLs: named, explained, never with their secret.
		{name: "port not a number", body: `{"llm": {"baseURL": "https://user:s3cret-pw@host:bad/v1"}}`, secret: "s3cret-pw",
			want: []string{`llm.baseURL: must be an http:// or https:// URL, got "https://[redacted]@host:bad/v1": its port is not a number`}},
		{name: "slash in the password", body: `{"llm": {"baseURL": "https://user:s3cret/pw@host/v1"}}`, secret: "s3cret",
			want: []string{`got "https://[redacted]@host/v1": its port is not a number`}},
		{name: "space in the password", body: `{"llm": {"baseURL": "https://user:s3cret pw@host/v1"}}`, secret: "s3cret",
			want: []string{"its user name or password holds a character that must be percent-encoded"}},
		{name: "bad escape in the password", body: `{"llm": {"baseURL": "https://user:s3cret%zz@host/v1"}}`, secret: "s3cret",
			want: []string{"it holds a % that does not start an escape"}},
		{name: "control character", body: `{"llm": {"baseURL": "https://user:s3cret\u0000@host/v1"}}`, secret: "s3cret",
			want: []string{"it holds a control character"}},
		{name: "no scheme", body: `{"llm": {"baseURL": "user:s3cret@host/v1"}}`, secret: "s3cret",
			want: []string{`got "[redacted]@host/v1": it must start with http:// or https://`}},
		{name: "no host", body: `{"llm": {"baseURL": "https://user:s3cret@/v1?key=t0ken"}}`, secret: "s3cret",
			want: []string{`got "https://[redacted]@/v1?[redacted]": it names no host`}},
		{name: "token in the query", body: `{"llm": {"baseURL": "ftp://host/v1?key=t0ken-s3cret"}}`, secret: "t0ken-s3cret",
			want: []string{`got "ftp://host/v1?[redacted]": it must start with http:// or https://`}},
		{name: "port too large", body: `{"llm": {"baseURL": "https://user:s3cret@host:99999/v1"}}`, secret: "s3cret",
			want: []string{"its port is not a number from 0 to 65535"}},
		{name: "slack apiURL", body: `{"channels": {"slack": {"apiURL": "https://user:s3cret@host:bad/api/"}}}`, secret: "s3cret",
			want: []string{"channels.slack.apiURL: must be an http:// or https:// URL"}},
		{name: "discord apiURL", body: `{"channels": {"discord": {"apiURL": "http://user:s3cret@[::1/"}}}`, secret: "s3cret",
			want: []string{"channels.discord.apiURL: must be an http:// or https:// URL", "its host name is not valid"}},
		{name: "from the environment", body: `{}`, env: env{"OPENAI_BASE_URL": "https://user:s3cret@host:bad/v1"}, secret: "s3cret",
			want: []string{`environment variable OPENAI_BASE_URL: must be an http:// or https:// URL, got "https://[redacted]@host:bad/v1"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, path, err := loadConfigText(t, tt.body, tt.env)
			var ce *configError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *configError", err)
			}
			msg := err.Error()
			if tt.env == nil && !strings.HasPrefix(msg, path+": ") {
				t.Errorf("error does not open with the file's name:\n%s", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			if tt.secret != "" && strings.Contains(msg, tt.secret) {
				t.Errorf("error holds the secret %q:\n%s", tt.secret, msg)
			}
			if strings.ContainsAny(msg, "\n\x00") {
				t.Errorf("error is not one line: %q", msg)
			}
		})
	}
}

// What is valid stays so: the same files with the right values load.
func TestConfigFileValidValues(t *testing.T) {
	for _, body := range []string{
		`{}`,
		" {}\n",
		`{"channels": {"slack": {"commandPrefix": "dg-"}}}`,
		`{"channels": {"slack": {"commandPrefix": "/dg"}}}`,
		`{"tools": {"mcpServers": {"x": {"command": "a", "timeoutSeconds": 1}}}}`,
		`{"tools": {"mcpServers": {"x": {"command": "a", "timeoutSeconds": 3600}}}}`,
		`{"tools": {"mcpServers": {"x": {"command": "a", "timeoutSeconds": null}}}}`,
		// null for a key means its default.
		`{"llm": null, "admins": null, "channels": {"slack": null}}`,
		`{"channels": {"discord": {"shardCount": "auto"}}}`,
		// A valid URL may carry credentials; they are only hidden when shown.
		`{"llm": {"baseURL": "https://user:pw@host/v1?key=k"}}`,
	} {
		if _, _, err := loadConfigText(t, body, nil); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// An MCP server without timeoutSeconds gets the documented default.
func TestMCPTimeoutAbsentMeansTheDefault(t *testing.T) {
	cfg, _, err := loadConfigText(t, `{"tools": {"mcpServers": {"x": {"command": "a"}, "y": {"command": "b", "timeoutSeconds": 7}}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Tools.MCPServers["x"]; s.TimeoutSeconds != nil {
		t.Errorf("absent timeoutSeconds read as %d", *s.TimeoutSeconds)
	}
	if s := cfg.Tools.MCPServers["y"]; s.TimeoutSeconds == nil || *s.TimeoutSeconds != 7 {
		t.Errorf("timeoutSeconds 7 read as %v", s.TimeoutSeconds)
	}
	if mcp.DefaultTimeout.Seconds() != 30 {
		t.Errorf("mcp's default is %s; docs/mcp.md and docs/config.md say 30", mcp.DefaultTimeout)
	}
}

// Relative workspace and stateDir are taken from the config file's folder,
// wherever the program is started from, so a service and a shell agree.
func TestRelativeDirsAreTheConfigFilesFolder(t *testing.T) {
	t.Chdir(t.TempDir()) // not the config's folder
	cfg, path, err := loadConfigText(t, `{"workspace": "ws", "stateDir": "./state/../state2"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	if want := filepath.Join(dir, "ws"); cfg.Workspace != want {
		t.Errorf("workspace = %s, want %s", cfg.Workspace, want)
	}
	if want := filepath.Join(dir, "state2"); cfg.StateDir != want {
		t.Errorf("stateDir = %s, want %s", cfg.StateDir, want)
	}

	t.Setenv("HOME", t.TempDir())
	home, _ := os.UserHomeDir()
	cfg, _, err = loadConfigText(t, `{"workspace": "~/ws", "stateDir": "/srv/dg"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workspace != filepath.Join(home, "ws") || cfg.StateDir != "/srv/dg" {
		t.Errorf("workspace %s, stateDir %s", cfg.Workspace, cfg.StateDir)
	}
}

// Through the built program: each mistake exits 2 with one line naming the
// file and the key, and no secret of a refused URL reaches stdout or
// stderr; a URL's credentials are not shown when it is valid either.
func TestConfigRefusalsThroughTheBinary(t *testing.T) {
	const secret = "pw-s3cret-0471"
	tests := []struct {
		name string
		set  func(h *harness)
		env  []string
		want string
	}{
		{"slack command prefix", func(h *harness) { h.set("channels.slack.commandPrefix", "a b/") },
			nil, `channels.slack.commandPrefix: must be up to 16 lower-case letters, digits, - or _ (what Slack accepts in a command name), such as "dg-", got "a b/"`},
		{"MCP timeout 0", func(h *harness) {
			h.set("tools.mcpServers", map[string]any{"x": map[string]any{"command": "a", "timeoutSeconds": 0}})
		}, nil, "tools.mcpServers.x.timeoutSeconds: must be between 1 and 3600 seconds, got 0 (leave it out for the default, 30)"},
		{"null", func(h *harness) { writeRaw(h, "null\n") }, nil, "the file must hold one JSON object (`{}` for all defaults), not null"},
		{"case", func(h *harness) { h.set("llm.baseUrl", "http://127.0.0.1:1/v1") },
			nil, "llm.baseUrl: unknown key: keys are case-sensitive, write llm.baseURL"},
		{"unknown key", func(h *harness) { h.set("channels.slack.enable", true) },
			nil, "channels.slack.enable: unknown key; did you mean channels.slack.enabled?"},
		{"invalid baseURL", func(h *harness) { h.set("llm.baseURL", "https://user:"+secret+"@host:bad/v1") },
			nil, `llm.baseURL: must be an http:// or https:// URL, got "https://[redacted]@host:bad/v1": its port is not a number, or its password holds a "/", "?" or "#", which must be percent-encoded (%2F, %3F, %23)`},
		{"invalid baseURL, slash in the password", func(h *harness) { h.set("llm.baseURL", "https://user:"+secret+"/x@host/v1") },
			nil, `llm.baseURL: must be an http:// or https:// URL, got "https://[redacted]@host/v1": its port is not a number, or its password holds a "/", "?" or "#", which must be percent-encoded (%2F, %3F, %23)`},
		{"invalid OPENAI_BASE_URL", func(*harness) {}, []string{"OPENAI_BASE_URL=https://" + secret + "@ho st/v1?key=" + secret},
			`environment variable OPENAI_BASE_URL: must be an http:// or https:// URL, got "https://[redacted]@ho st/v1?[redacted]": its host name is not valid`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tt.set(h)
			for _, cmd := range [][]string{{"status"}, {"chat", "-m", "hi"}} {
				r := h.runEnv(tt.env, cmd...)
				if r.code != 2 {
					t.Errorf("%s: exit %d, want 2\n%s", cmd[0], r.code, r.stderr)
				}
				want := "dreamgate: invalid config: " + h.cfgPath + ": " + tt.want + "\n"
				if tt.env != nil {
					want = "dreamgate: invalid config: " + tt.want + "\n"
				}
				if r.stderr != want {
					t.Errorf("%s: stderr\n %q, want\n %q", cmd[0], r.stderr, want)
				}
				if strings.Contains(r.stdout+r.stderr, secret) {
					t.Errorf("%s: the secret shows:\n%s%s", cmd[0], r.stdout, r.stderr)
				}
			}
		})
	}

	t.Run("valid URL with credentials", func(t *testing.T) {
		h := newHarness(t)
		h.set("llm.baseURL", strings.Replace(h.llm.URL(), "http://", "http://user:"+secret+"@", 1)+"?key="+secret)
		r := h.run("status")
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("status shows the secret (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "at http://[redacted]@127.0.0.1:") {
			t.Errorf("status does not show the endpoint redacted:\n%s", r.stdout)
		}
	})

	t.Run("relative workspace", func(t *testing.T) {
		h := newHarness(t)
		h.set("workspace", "relws")
		h.set("stateDir", "relstate")
		r := h.run("status") // from the test's folder, not the config's
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		for _, want := range []string{"Workspace: " + filepath.Join(h.home, "relws"), "State: " + filepath.Join(h.home, "relstate")} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("status lacks %q:\n%s", want, r.stdout)
			}
		}
	})
}

func writeRaw(h *harness, body string) {
	h.t.Helper()
	if err := os.WriteFile(h.cfgPath, []byte(body), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// Every key of Config, those added later included, is known to the strict
// reader as written and in no other case, and a near miss of it is
// answered with it: the reader follows the struct, not a list.
func TestEveryKeyIsExact(t *testing.T) {
	keys := map[string]reflect.Value{}
	configKeys("", reflect.TypeFor[Config](), reflect.ValueOf(defaultConfig()), keys)
	nest := func(path string, v any) string {
		parts := strings.Split(path, ".")
		for i := len(parts) - 1; i >= 0; i-- {
			v = map[string]any{parts[i]: v}
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	defaults, err := json.Marshal(defaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadConfigText(t, string(defaults), nil); err != nil {
		t.Fatalf("the defaults, written out as onboard does, are refused: %v", err)
	}
	for key, def := range keys {
		dir, leaf := "", key
		if i := strings.LastIndexByte(key, '.'); i >= 0 {
			dir, leaf = key[:i+1], key[i+1:]
		}
		upper := dir + strings.ToUpper(leaf[:1]) + leaf[1:]
		_, _, err := loadConfigText(t, nest(upper, def.Interface()), nil)
		if want := upper + ": unknown key: keys are case-sensitive, write " + key; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", upper, err, want)
		}
		near := key + "x"
		_, _, err = loadConfigText(t, nest(near, def.Interface()), nil)
		if want := near + ": unknown key; did you mean " + key + "?"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", near, err, want)
		}
	}
}

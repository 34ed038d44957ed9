package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
)

func TestAgentFlags(t *testing.T) {
	type agentFlags struct {
		config   string
		settings agent.Settings
	}
	tests := []flagCase[agentFlags]{
		{name: "no flags leave every setting unset", args: nil},
		{name: "all flags", args: []string{"--config", "a.hcl", "--probe-interval", "1s", "--probe-interval-ready", "10s",
			"--health-timeout", "1m", "--gc-interval", "2m", "--reconcile-interval", "3m", "--stop-timeout", "4s"},
			want: agentFlags{"a.hcl", agent.Settings{ProbeInterval: time.Second, ProbeIntervalReady: 10 * time.Second, HealthTimeout: time.Minute,
				GCInterval: 2 * time.Minute, ReconcileInterval: 3 * time.Minute, StopTimeout: 4 * time.Second}}},
		{name: "short config flag", args: []string{"-c", "b.hcl"}, want: agentFlags{config: "b.hcl"}},
		{name: "bad duration", args: []string{"--probe-interval", "often"}, wantErr: "invalid argument"},
		{name: "zero duration", args: []string{"--gc-interval", "0"},
			wantErr: `invalid argument "0" for "--gc-interval" flag: must be more than zero (leave the flag out for the default, 1m0s)`},
		{name: "zero with a unit", args: []string{"--health-timeout", "0s"}, wantErr: `for "--health-timeout" flag: must be more than zero`},
		{name: "negative duration", args: []string{"--stop-timeout", "-5s"}, wantErr: `for "--stop-timeout" flag: must be more than zero`},
		{name: "too long a duration", args: []string{"--reconcile-interval", "9999999999999h"},
			wantErr: `for "--reconcile-interval" flag: "9999999999999h" is longer than the longest duration volctl holds`},
		// Each flag is held to the bounds the config file holds its setting to: "1ns" probed in
		// a busy loop, "1000000h" let a stop wait 114 years (spec.CheckAgentSetting).
		{name: "a probe interval below the least", args: []string{"--probe-interval", "1ns"},
			wantErr: `invalid argument "1ns" for "--probe-interval" flag: 1ns is less than the least it may be, 100ms (probing more often keeps the agent and the plugin busy) (leave the flag out for the default, 5s)`},
		{name: "a gc interval below the least", args: []string{"--gc-interval", "999ms"},
			wantErr: `for "--gc-interval" flag: 999ms is less than the least it may be, 1s`},
		{name: "a stop timeout below the least", args: []string{"--stop-timeout", "1ns"},
			wantErr: `for "--stop-timeout" flag: 1ns is less than the least it may be, 1s`},
		{name: "a stop timeout above the most", args: []string{"--stop-timeout", "1000000h"},
			wantErr: `for "--stop-timeout" flag: 1000000h0m0s is more than the most it may be, 1h0m0s`},
		{name: "a health timeout above the most", args: []string{"--health-timeout", "25h"},
			wantErr: `for "--health-timeout" flag: 25h0m0s is more than the most it may be, 24h0m0s`},
		{name: "the least and the most are taken", args: []string{"--probe-interval", "100ms", "--probe-interval-ready", "24h",
			"--health-timeout", "1s", "--gc-interval", "24h", "--reconcile-interval", "100ms", "--stop-timeout", "1h"},
			want: agentFlags{settings: agent.Settings{ProbeInterval: 100 * time.Millisecond, ProbeIntervalReady: 24 * time.Hour, HealthTimeout: time.Second,
				GCInterval: 24 * time.Hour, ReconcileInterval: 100 * time.Millisecond, StopTimeout: time.Hour}}},
		{name: "extra argument", args: []string{"x"}, wantErr: "accepts 0 arg"},
	}
	checkFlagCases(t, newCmdAgent, tests, func(_ *testing.T, o AgentOptions) (agentFlags, error) {
		return agentFlags{o.ConfigFile, o.Settings}, nil
	})
}

// Bad input is refused before the agent starts: exit 2, the config's problems on stderr with
// their lines, and no state touched.
func TestAgentRunRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hcl")
	if err := os.WriteFile(bad, []byte("agent {\n  probe_interval = \"soon\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	tests := []struct {
		name       string
		opts       AgentOptions
		wantErr    string
		wantStderr string
	}{
		{name: "negative flag", opts: AgentOptions{Settings: agent.Settings{HealthTimeout: -time.Second}},
			wantErr: "agent: --health-timeout must be positive, got -1s"},
		{name: "missing config", opts: AgentOptions{ConfigFile: filepath.Join(dir, "none.hcl")},
			wantErr: "agent: --config: read " + filepath.Join(dir, "none.hcl") + ": no such file or directory"},
		{name: "invalid config", opts: AgentOptions{ConfigFile: bad},
			wantErr: "agent: config " + bad + " is invalid; the agent did not start", wantStderr: bad + ":2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, stderr := iostreams.Test()
			tt.opts.IO = ios
			tt.opts.StateDir = func() (string, error) { return state, nil }
			err := agentRun(context.Background(), &tt.opts)
			if err == nil || err.Error() != tt.wantErr || ExitCode(err) != ExitUsage {
				t.Fatalf("err = %v (exit %d), want %q exit 2", err, ExitCode(err), tt.wantErr)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want %q in it", stderr, tt.wantStderr)
			}
			if _, err := os.Stat(state); !os.IsNotExist(err) {
				t.Errorf("state dir created before the input was checked: %v", err)
			}
		})
	}
}

// The agent runs until its context ends and then exits cleanly; the config's settings and
// plugins reach it, flags win over the file, and its start line shows every setting.
func TestAgentRunUntilCancelled(t *testing.T) {
	dir := hostpathtest.ShortDir(t) // the plugin's socket goes under it
	cfg := filepath.Join(dir, "agent.hcl")
	src := `agent {
  probe_interval = "1h"
  stop_timeout   = "3s"
}
plugin "later" {
  type   = "monolith"
  socket = "` + filepath.Join(dir, "later.sock") + `"
  exec {
    command = "` + filepath.Join(dir, "no-such-plugin") + `"
  }
}
`
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := iostreams.Test()
	stderr := &iostreams.SyncBuffer{}
	ios.ErrOut = stderr // the agent logs from its goroutines while the test reads
	ctx, cancel := context.WithCancel(context.Background())
	opts := &AgentOptions{IO: ios, StateDir: func() (string, error) { return filepath.Join(dir, "state"), nil },
		ConfigFile: cfg, Settings: agent.Settings{ProbeInterval: 20 * time.Millisecond}}
	done := make(chan error, 1)
	go func() { done <- agentRun(ctx, opts) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), `plugin=later`) || !strings.Contains(stderr.String(), "did not start") && !strings.Contains(stderr.String(), "starting plugin") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the agent did not try to start the declared plugin:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("agent: %v", err)
	}
	log := stderr.String()
	// Every setting is in the start line, the file's (stop_timeout, which the line left out: a
	// config's stop_timeout could not be told taken) as the flags'.
	checkHolds(t, "agent log", log, []string{"probe_interval=20ms", "stop_timeout=3s", "registered plugin", "agent stopped"}, nil)
}

// An agent config another user may change (theirs, writable by them, in a directory they may
// write) says what the agent runs as root at every start: its exec blocks. The agent refuses
// it, naming the path and what to change, and starts nothing; before, it ran the config's
// plugins, a command of that user's choosing among them.
func TestAgentRefusesAConfigAnotherUserMayChange(t *testing.T) {
	tests := []struct {
		name string
		// setup makes dir/conf/agent.hcl unsafe and says what the refusal names.
		setup func(t *testing.T, conf, cfg string) (path, why string)
	}{
		{"writable by other users", func(t *testing.T, conf, cfg string) (string, string) {
			if err := os.Chmod(cfg, 0o666); err != nil {
				t.Fatal(err)
			}
			return cfg, "is writable by other users (mode 0666)"
		}},
		{"another user's", func(t *testing.T, conf, cfg string) (string, string) {
			if err := os.Chown(cfg, 4242, -1); err != nil {
				t.Skipf("giving the config another owner needs root: %v", err)
			}
			return cfg, "is owned by uid 4242"
		}},
		{"in a directory other users may write", func(t *testing.T, conf, cfg string) (string, string) {
			if err := os.Chmod(conf, 0o777); err != nil {
				t.Fatal(err)
			}
			return conf, "is writable by other users (mode 0777)"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := hostpathtest.ShortDir(t) // the plugin's socket goes under it
			conf := filepath.Join(dir, "conf")
			if err := os.Mkdir(conf, 0o755); err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(dir, "ran")
			cfg := filepath.Join(conf, "agent.hcl")
			src := `plugin "p" {
  type   = "monolith"
  socket = "` + filepath.Join(dir, "p.sock") + `"
  exec {
    command = "/bin/sh"
    args    = ["-c", "touch ` + marker + `"]
  }
}
`
			if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			path, why := tt.setup(t, conf, cfg)
			ios, _, _, _ := iostreams.Test()
			ios.ErrOut = &iostreams.SyncBuffer{} // the agent logs from its goroutines
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err := agentRun(ctx, &AgentOptions{IO: ios, StateDir: func() (string, error) { return filepath.Join(dir, "state"), nil },
				ConfigFile: cfg, Settings: agent.Settings{ProbeInterval: 20 * time.Millisecond}})
			if err == nil {
				t.Fatalf("agentRun = nil: the agent ran the config %s (%s %s); want it refused", cfg, path, why)
			}
			for _, want := range []string{"--config " + cfg, path + " " + why, "the agent did not start", "chmod go-w"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v\nwant it to say %q", err, want)
				}
			}
			if code := ExitCode(err); code != ExitUsage {
				t.Errorf("exit code %d, want %d", code, ExitUsage)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the config's plugin ran")
			}
		})
	}
}

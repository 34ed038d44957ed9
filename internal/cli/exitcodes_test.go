package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// TestExitCodesByFailureClass runs commands into each class of failure a user or host makes
// (a usage error, an invalid spec, a thing not found, a conflict, a plugin that errs, times out
// or cannot be reached, a state dir that cannot be one, an interrupted command) and checks the
// exit status against the table of docs/architecture.md (Command line) and
// docs/troubleshooting.md: 1 runtime, 2 usage or invalid spec, 3 declined, 4 conflict.
func TestExitCodesByFailureClass(t *testing.T) {
	requireMount(t)
	ctx := context.Background()
	faults := csitest.NewFaults()
	_, e, _ := serveMem(t, csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()), csitest.WithFaults(faults))
	createSingleWriter(t, e, "db", "free")
	if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "a1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateSnapshot(ctx, "free", "nightly", nil); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hcl")
	notADir := filepath.Join(dir, "file")
	for path, text := range map[string]string{bad: invalidVolume, notADir: "x"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()

	for _, tt := range []struct {
		class  string
		args   []string
		code   int
		before func() // arms a fault
		ctx    context.Context
		own    bool   // the command opens its own engine (a state dir case)
		answer string // typed at a terminal's prompt
	}{
		{class: "declined at the prompt", args: []string{"volume", "delete", "free"}, code: ExitDeclined, answer: "n\n"},
		{class: "usage: no terminal to confirm on, no --yes", args: []string{"volume", "delete", "free"}, code: ExitUsage},
		{class: "usage: unknown flag", args: []string{"volume", "status", "--bogus"}, code: ExitUsage},
		{class: "usage: a required flag missing", args: []string{"volume", "claim", "free"}, code: ExitUsage},
		{class: "usage: too many arguments", args: []string{"volume", "delete", "free", "db"}, code: ExitUsage},
		{class: "invalid spec", args: []string{"volume", "create", bad}, code: ExitUsage},
		{class: "not found: volume status", args: []string{"volume", "status", "nope"}, code: ExitError},
		{class: "not found: volume claim", args: []string{"volume", "claim", "nope", "--alloc", "a2"}, code: ExitError},
		{class: "not found: volume release", args: []string{"volume", "release", "nope", "--alloc", "a1"}, code: ExitError},
		{class: "not found: volume delete", args: []string{"volume", "delete", "nope", "--yes"}, code: ExitError},
		{class: "not found: plugin status", args: []string{"plugin", "status", "nope"}, code: ExitError},
		{class: "not found: group status", args: []string{"group", "status", "nope"}, code: ExitError},
		{class: "conflict: claim held by another alloc", args: []string{"volume", "claim", "db", "--alloc", "a2"}, code: ExitConflict},
		{class: "conflict: delete a volume in use", args: []string{"volume", "delete", "db", "--yes"}, code: ExitConflict},
		{class: "plugin error", args: []string{"volume", "expand", "free", "--size", "2GiB"}, code: ExitError,
			before: func() { faults.FailOnce(csi.RPCControllerExpandVolume, codes.Internal) }},
		{class: "plugin timeout", args: []string{"volume", "expand", "free", "--size", "3GiB"}, code: ExitError,
			before: func() { faults.FailAlways(csi.RPCControllerExpandVolume, codes.DeadlineExceeded) }},
		{class: "plugin unreachable", args: []string{"volume", "expand", "free", "--size", "4GiB"}, code: ExitError,
			before: func() { faults.FailAlways(csi.RPCControllerExpandVolume, codes.Unavailable) }},
		{class: "interrupted", args: []string{"volume", "expand", "free", "--size", "5GiB"}, code: ExitError, ctx: canceled},
		// The plugin's own refusals that the CSI spec gives for a volume or snapshot something
		// else holds are conflicts, as volctl's own refusals on those grounds are.
		{class: "conflict: the plugin says the volume is published to another node", args: []string{"volume", "claim", "free", "--alloc", "a2"}, code: ExitConflict,
			before: func() { faults.FailAlways(csi.RPCControllerPublishVolume, codes.FailedPrecondition) }},
		{class: "conflict: the plugin says the volume is published to this node otherwise", args: []string{"volume", "claim", "free", "--alloc", "a2"}, code: ExitConflict,
			before: func() { faults.FailAlways(csi.RPCControllerPublishVolume, codes.AlreadyExists) }},
		{class: "conflict: the plugin says staging exceeds the volume's capabilities", args: []string{"volume", "claim", "free", "--alloc", "a2"}, code: ExitConflict,
			before: func() { faults.FailAlways(csi.RPCNodeStageVolume, codes.FailedPrecondition) }},
		{class: "conflict: the plugin refuses to delete a volume in use", args: []string{"volume", "delete", "free", "--yes"}, code: ExitConflict,
			before: func() { faults.FailAlways(csi.RPCDeleteVolume, codes.FailedPrecondition) }},
		{class: "conflict: the plugin refuses to expand a volume in use", args: []string{"volume", "expand", "free", "--size", "6GiB"}, code: ExitConflict,
			before: func() { faults.FailAlways(csi.RPCControllerExpandVolume, codes.FailedPrecondition) }},
		{class: "conflict: the plugin refuses to delete a snapshot in use", args: []string{"volume", "snapshot", "delete", "mem", "nightly", "--yes"}, code: ExitConflict,
			before: func() { faults.FailAlways(csi.RPCDeleteSnapshot, codes.FailedPrecondition) }},
		{class: "plugin error: the node's max volumes reached", args: []string{"volume", "claim", "free", "--alloc", "a2"}, code: ExitError,
			before: func() { faults.FailAlways(csi.RPCControllerPublishVolume, codes.ResourceExhausted) }},
		{class: "plugin error: NodePublishVolume FAILED_PRECONDITION (a missing staging path too)", args: []string{"volume", "claim", "free", "--alloc", "a2"}, code: ExitError,
			before: func() { faults.FailAlways(csi.RPCNodePublishVolume, codes.FailedPrecondition) }},
		// The promises of README.md, docs/json.md, docs/specs.md and the help texts, each the
		// exit status of its own failure (and no failure 0).
		{class: "README: plugin status of an unhealthy plugin", args: []string{"plugin", "status", "mem"}, code: ExitError,
			before: func() { faults.FailAlways(csi.RPCProbe, codes.FailedPrecondition) }},
		{class: "README: plugin deregister of a plugin a volume uses", args: []string{"plugin", "deregister", "mem"}, code: ExitConflict},
		{class: "json.md: group stop of an unknown group", args: []string{"group", "stop", "nope"}, code: ExitError},
		{class: "json.md: nomad register --json without --dry-run", args: []string{"nomad", "register", "free", "--json"}, code: ExitUsage},
		{class: "json.md: a -t field the result never has", args: []string{"volume", "claim", "free", "--alloc", "a2", "-t", "{{.target}}"}, code: ExitUsage},
		{class: "json.md: release of an alloc holding no claim is a no-op", args: []string{"volume", "release", "free", "--alloc", "a9"}, code: ExitOK},
		{class: "validate: a file that cannot be read", args: []string{"validate", filepath.Join(dir, "missing.hcl")}, code: ExitError},
		{class: "validate: a directory is no spec", args: []string{"validate", dir}, code: ExitUsage},
		{class: "validate: an invalid spec", args: []string{"validate", bad}, code: ExitUsage},
		{class: "events: --since neither a duration nor a time", args: []string{"events", "--since", "soon"}, code: ExitUsage},
		{class: "state dir is a file", args: []string{"--state-dir", notADir, "volume", "status"}, code: ExitError, own: true},
		{class: "state dir under a file", args: []string{"--state-dir", filepath.Join(notADir, "state"), "volume", "status"}, code: ExitError, own: true},
	} {
		if tt.before != nil {
			tt.before()
		}
		ios, in, _, errOut := iostreams.Test()
		if tt.answer != "" {
			ios.SetTTY(true, true, true)
			in.WriteString(tt.answer)
		}
		f := NewFactory(ios)
		if !tt.own {
			f.engine = e
		}
		root := NewRootCmd(f)
		root.SetArgs(tt.args)
		runCtx := ctx
		if tt.ctx != nil {
			runCtx = tt.ctx
		}
		err := root.ExecuteContext(runCtx)
		code := f.Report(err)
		if tt.own {
			f.Close()
		}
		faults.Clear()
		if code != tt.code {
			t.Errorf("%s: volctl %s: exit %d, want %d: %s", tt.class, strings.Join(tt.args, " "), code, tt.code, errOut)
		}
	}
}

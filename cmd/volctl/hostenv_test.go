package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// hostEnv is a state dir and the built-in plugin (with attach, so every RPC of both paths is
// sent) served by the test process, and the volctl binary run against them as separate
// processes: the crash tests kill them, the concurrency test runs many at once.
type hostEnv struct {
	t      *testing.T
	state  string
	socket string
	plugin *hostpath.Plugin
}

// newHostEnv makes a hostEnv of t's own: state dir, plugin and mount root are t's temp dirs, so
// tests on one each run in parallel (t.Parallel), sharing nothing but the machine.
func newHostEnv(t *testing.T) *hostEnv {
	t.Helper()
	hostpathtest.RequireMount(t)
	srv := hostpathtest.Start(t, hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true})
	env := &hostEnv{t: t, state: hostpathtest.MountDir(t), socket: srv.Socket, plugin: srv.Plugin}
	env.ok("plugin", "register", "--id", "hp", "--socket", env.socket)
	return env
}

// volctl is the volctl env runs (shortVolctl).
func (env *hostEnv) volctl() string { return shortVolctl(env.t) }

// run runs volctl with extra environment ("K=V") and returns its output and error.
func (env *hostEnv) run(extraEnv []string, args ...string) (string, error) {
	return env.runBinary(env.volctl(), extraEnv, args...)
}

// runBinary is run with another volctl binary (a path, or a name looked up in $PATH).
func (env *hostEnv) runBinary(bin string, extraEnv []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+env.state, "NO_COLOR=1")
	cmd.Env = append(cmd.Env, extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (env *hostEnv) ok(args ...string) string {
	env.t.Helper()
	out, err := env.run(nil, args...)
	if err != nil {
		env.t.Fatalf("volctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (env *hostEnv) createVolume(id string, mode spec.AccessMode) {
	env.t.Helper()
	env.ok("volume", "create", writeVolumeSpec(env.t, id, mode))
}

// writeVolumeSpec writes a create spec for a 1 MiB file-system volume of the "hp" plugin with
// one capability, and returns its path.
func writeVolumeSpec(tb testing.TB, id string, mode spec.AccessMode) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "volume.hcl")
	src := fmt.Sprintf("id = %q\nname = %q\ntype = \"csi\"\nplugin_id = \"hp\"\ncapacity_min = \"1MiB\"\ncapability {\n  access_mode = %q\n  attachment_mode = \"file-system\"\n}\n", id, id, mode)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// checkInvariants asserts what must hold after a reconcile: the store and the kernel's mount
// table agree (every published claim mounted, read claims read-only, every staged volume
// staged, nothing else mounted under the state dir, no two mounts stacked at one path), no claim is stuck, no volume is claimed
// beyond its access mode, and the plugin has exactly the volumes the store knows (none created
// twice).
func (env *hostEnv) checkInvariants() {
	t := env.t
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, env.state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var (
		claims   []store.Claim
		stagings []store.Staging
		vols     []store.Volume
	)
	if err := st.View(ctx, func(tx *store.Tx) error {
		var err error
		if claims, err = tx.Claims().ListAll(); err != nil {
			return err
		}
		if stagings, err = tx.Stagings().List(); err != nil {
			return err
		}
		vols, err = tx.Volumes().List(store.VolumeFilter{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(env.state))
	if err != nil {
		t.Fatal(err)
	}
	mounted := map[string]*mountinfo.Info{}
	for _, m := range mounts {
		if mounted[m.Mountpoint] != nil {
			// A plugin that mounts without looking first, sent an RPC again: the RPC that undoes
			// it unmounts one, and the release fails on the other at every try.
			t.Errorf("%s holds two mounts or more, stacked: %s and %s", m.Mountpoint, mounted[m.Mountpoint].Source, m.Source)
		}
		mounted[m.Mountpoint] = m
	}
	expected := map[string]bool{}
	perVolume := map[string][]store.Claim{}
	for _, c := range claims {
		if !c.AtRest() {
			t.Errorf("claim %q/%q is stuck: state %s releasing %v needs_reconcile %v (%s)", c.VolumeID, c.Alloc, c.State, c.Releasing, c.NeedsReconcile, c.LastError)
		}
		m := mounted[c.TargetPath]
		switch {
		case m == nil:
			t.Errorf("claim %q/%q is published but %s is not mounted", c.VolumeID, c.Alloc, c.TargetPath)
		case c.Mode == store.ClaimRead && !slices.Contains(strings.Split(m.Options, ","), "ro"):
			t.Errorf("read claim %q/%q is mounted writable at %s (%s)", c.VolumeID, c.Alloc, c.TargetPath, m.Options)
		}
		expected[c.TargetPath] = true
		perVolume[c.VolumeID] = append(perVolume[c.VolumeID], c)
	}
	for _, s := range stagings {
		if s.Staged {
			if mounted[s.StagingPath] == nil {
				t.Errorf("volume %q is staged but %s is not mounted", s.VolumeID, s.StagingPath)
			}
			expected[s.StagingPath] = true
		}
		if len(perVolume[s.VolumeID]) == 0 {
			t.Errorf("volume %q has a staging (%+v) but no claim: leaked", s.VolumeID, s)
		}
	}
	for m := range mounted {
		if !expected[m] {
			t.Errorf("%s is mounted but the store does not account for it: leaked mount", m)
		}
	}
	for _, p := range accessModeViolations(vols, claims) {
		t.Error(p)
	}
	for _, v := range vols {
		if v.State != store.VolumeReady {
			t.Errorf("volume %q left %s", v.ID, v.State)
		}
	}
	listed, err := csitest.VolumeIDs(ctx, env.socket, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(vols) {
		t.Errorf("the plugin has %d volumes, the store %d: a volume was created twice or lost", len(listed), len(vols))
	}
}

// accessModeViolations checks one consistent read of the store against Nomad's access-mode
// rules, written out here independently of the engine's admission: a volume's live claims
// (releasing ones included, since the volume is not free until they are gone) all use the
// volume's current mode, which is one of its capabilities, and there are no more of them, by
// read and write, than that mode admits.
func accessModeViolations(vols []store.Volume, claims []store.Claim) []string {
	var problems []string
	byVolume := map[string][]store.Claim{}
	for _, c := range claims {
		byVolume[c.VolumeID] = append(byVolume[c.VolumeID], c)
	}
	for _, v := range vols {
		cs := byVolume[v.ID]
		delete(byVolume, v.ID)
		if len(cs) == 0 {
			if v.AccessMode != "" {
				problems = append(problems, fmt.Sprintf("volume %q has no live claim but keeps the mode %s", v.ID, v.AccessMode))
			}
			continue
		}
		cur := spec.Capability{AccessMode: v.AccessMode, AttachmentMode: v.AttachmentMode}
		if !slices.Contains(v.Capabilities, cur) {
			problems = append(problems, fmt.Sprintf("volume %q is in use as %s/%s, not one of its capabilities", v.ID, cur.AccessMode, cur.AttachmentMode))
		}
		var readers, writers []string
		for _, c := range cs {
			if c.AccessMode != cur.AccessMode || c.AttachmentMode != cur.AttachmentMode {
				problems = append(problems, fmt.Sprintf("volume %q is in use as %s/%s but alloc %q claims it as %s/%s",
					v.ID, cur.AccessMode, cur.AttachmentMode, c.Alloc, c.AccessMode, c.AttachmentMode))
			}
			if c.Mode == store.ClaimWrite {
				writers = append(writers, c.Alloc)
			} else {
				readers = append(readers, c.Alloc)
			}
		}
		too := func(what string, allocs []string) {
			problems = append(problems, fmt.Sprintf("%s volume %q has %s: %v", cur.AccessMode, v.ID, what, allocs))
		}
		switch cur.AccessMode {
		case spec.SingleNodeWriter:
			if len(cs) > 1 {
				too("more than one claim", append(writers, readers...))
			}
		case spec.SingleNodeReaderOnly:
			if len(cs) > 1 {
				too("more than one claim", append(writers, readers...))
			}
			if len(writers) > 0 {
				too("a write claim", writers)
			}
		case spec.MultiNodeReaderOnly:
			if len(writers) > 0 {
				too("a write claim", writers)
			}
		case spec.MultiNodeSingleWriter:
			if len(writers) > 1 {
				too("more than one writer", writers)
			}
		}
	}
	for id, cs := range byVolume {
		problems = append(problems, fmt.Sprintf("%d live claims on volume %q, which does not exist", len(cs), id))
	}
	slices.Sort(problems)
	return problems
}

package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// fullWriter is a stdout that takes nothing: a file on a full disk (/dev/full), a closed
// descriptor.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) {
	return 0, errors.New("write /dev/stdout: no space left on device")
}

// TestResultUnprintedFailsTheCommand: `TARGET=$(volctl volume claim db --alloc a)` or
// `volctl volume claim ... > target` on a full disk. The claim is made, but the path it
// prints is the command's product: when it cannot be written the command must fail (exit 1),
// saying what was done and the path (on stderr, with the error), never exit 0 with nothing
// printed. The same for the line of every acting command.
func TestResultUnprintedFailsTheCommand(t *testing.T) {
	requireMount(t) // it claims
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	h.createVolume(t, "old", spec.SingleNodeWriter)
	for _, c := range []struct {
		what string
		run  func(ios *iostreams.IOStreams) error
		want string
	}{
		{"volume claim", func(ios *iostreams.IOStreams) error {
			return volumeClaimRun(h.ctx, &VolumeClaimOptions{IO: ios, Engine: h.engine, VolumeID: "db", Alloc: "a1"})
		}, `claim "db" for alloc "a1" published at ` + h.state},
		{"volume release", func(ios *iostreams.IOStreams) error {
			return volumeReleaseRun(h.ctx, &VolumeReleaseOptions{IO: ios, Engine: h.engine, VolumeID: "db", Alloc: "a1"})
		}, `claim "db" for alloc "a1" released`},
		{"volume delete", func(ios *iostreams.IOStreams) error {
			return volumeDeleteRun(h.ctx, &VolumeDeleteOptions{IO: ios, Engine: h.engine, ID: "old", Yes: true,
				Confirm: func(bool, string) error { return nil }})
		}, `volume "old" deleted`},
	} {
		ios, _, _, _ := iostreams.Test()
		ios.Out = fullWriter{}
		err := c.run(ios)
		if err == nil || ExitCode(err) != 1 || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "no space left") {
			t.Errorf("%s with stdout full: %v (exit %d), want exit 1 saying %q was done and that printing failed", c.what, err, ExitCode(err), c.want)
		}
	}
}

// The same for the commands whose work is a registration or files: plugin register, export
// nomad, nomad register and nomad release. Each line they print says what was done; a script
// reading it (or a log on a full disk) must not get exit 0 and nothing.
func TestRegistrationUnprintedFailsTheCommand(t *testing.T) {
	h := nomadHarness(t)
	n := newFakeNomad(t)
	ps, err := h.e.Plugins(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var socket string
	for _, p := range ps {
		if p.ID == "mem" {
			socket = p.NodeSocket
		}
	}
	for _, c := range []struct {
		what string
		run  func(ios *iostreams.IOStreams) error
		want string
	}{
		{"plugin register", func(ios *iostreams.IOStreams) error {
			return pluginRegisterRun(h.ctx, &PluginRegisterOptions{IO: ios, Engine: h.engine, ID: "mem2", Type: "monolith", Socket: socket})
		}, `plugin "mem2" registered`},
		{"export nomad", func(ios *iostreams.IOStreams) error {
			return exportNomadRun(h.ctx, &ExportNomadOptions{IO: ios, Engine: h.engine, Volumes: []string{"db"}, OutDir: t.TempDir(), NoPluginJob: true})
		}, `export nomad: wrote 1 file(s) to `},
		{"nomad register", func(ios *iostreams.IOStreams) error {
			return nomadRegisterRun(h.ctx, &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}})
		}, `volume "db" registered in Nomad at ` + n.srv.URL},
		{"nomad release", func(ios *iostreams.IOStreams) error {
			n.mu.Lock()
			delete(n.vols, "default/db") // deregistered from Nomad: volctl may take it back
			n.mu.Unlock()
			return nomadReleaseRun(h.ctx, &NomadReleaseOptions{IO: ios, Engine: h.engine, Nomad: n.client, Volumes: []string{"db"}})
		}, `volume "db" taken back from Nomad at ` + n.srv.URL},
	} {
		ios, _, _, _ := iostreams.Test()
		ios.Out = fullWriter{}
		err := c.run(ios)
		if err == nil || ExitCode(err) != 1 || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "no space left") {
			t.Errorf("%s with stdout full: %v (exit %d), want exit 1 saying %q was done and that printing failed", c.what, err, ExitCode(err), c.want)
		}
	}
}

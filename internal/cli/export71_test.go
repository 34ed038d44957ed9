package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestNomadRegisterCapabilitiesAdviceWorksInTheOrderWritten: `volctl nomad register` (and
// --dry-run) warns of a volume with a block-device capability beside another, which Nomad
// refuses when its plugin confirms the capabilities it is asked, and said what to do: "`volctl
// volume deregister ID`, then register its external_id (which `volctl volume status ID`
// shows) again with that capability block alone". Followed in the order written, the
// deregister forgot the volume, and the status named next failed ("not found"); the secrets
// (which no command shows) and the plugin's context were gone with the record. Export's note
// for the same volume was mended in round 66; the register's warning still advised the dead
// end. The test now runs each command the warning names, in its order, editing the file as it
// says, and the volume ends registered with the one capability and its secret. Found by
// helper review71.
func TestNomadRegisterCapabilitiesAdviceWorksInTheOrderWritten(t *testing.T) {
	h := hostpathDriverHarness(t)
	const secret = "s3cr3t-held-only-here"
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "both", Name: "both", Type: "csi", PluginID: "hp",
		Capabilities: []spec.Capability{
			{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice},
			{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Secrets: spec.Secrets{"token": secret},
	}); err != nil {
		t.Fatal(err)
	}
	ios, _, _, errOut := iostreams.Test()
	if err := nomadRegisterRun(context.Background(), &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: newFakeNomad(t).client,
		Volumes: []string{"both"}, DryRun: true}); err != nil {
		t.Fatalf("nomad register --dry-run both: %v", err)
	}
	var warning string
	for _, l := range strings.Split(errOut.String(), "\n") {
		if strings.Contains(l, "Nomad may refuse it") {
			warning = l
		}
	}
	if warning == "" {
		t.Fatalf("no capabilities warning:\n%s", errOut.String())
	}
	t.Chdir(t.TempDir()) // the export's default --out, ./nomad, is where the warning names the file
	blockCapability := regexp.MustCompile(`(?s)capability \{[^}]*block-device[^}]*\}\n`)
	var ran []string
	for _, cmd := range shellquotetest.Commands(warning) {
		if !strings.HasPrefix(cmd, "volctl ") {
			continue
		}
		args := append([]string{"volctl"}, shellquotetest.RunArgs(t, cmd)...)
		if strings.HasPrefix(cmd, "volctl volume register") {
			// "keep there only that capability block": the file edited as the warning says.
			file := args[len(args)-1]
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("the file the warning names, %s, before `%s`: %v\nwarning: %s", file, cmd, err, warning)
			}
			if err := os.WriteFile(file, blockCapability.ReplaceAll(b, nil), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if strings.HasPrefix(cmd, "volctl volume deregister") {
			args = append(args, "--yes") // the user at a terminal answers its question yes
		}
		if code, stderr := runOn(h.ctx, h.e, args[1:]...); code != ExitOK {
			t.Fatalf("`%s`, after %q as the warning orders them: exit %d: %s\nwarning: %s", cmd, ran, code, stderr, warning)
		}
		ran = append(ran, cmd)
	}
	if len(ran) < 3 {
		t.Fatalf("the warning names %q; want the export, the deregister and the register\nwarning: %s", ran, warning)
	}
	v, err := h.e.Volume(h.ctx, "both")
	if err != nil {
		t.Fatalf("after the advice, volume both: %v", err)
	}
	if len(v.Capabilities) != 1 || v.Capabilities[0].AttachmentMode != spec.FileSystem {
		t.Errorf("after the advice, volume both has capabilities %+v; want the file-system one alone", v.Capabilities)
	}
	st, err := store.Open(h.ctx, h.state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var held spec.Secrets
	err = st.View(h.ctx, func(tx *store.Tx) error {
		sv, err := tx.Volumes().Get("both")
		held = sv.Secrets
		return err
	})
	if err != nil || held["token"] != secret {
		t.Errorf("after the advice, volume both's secret token is %q (%v); want the one it had", held["token"], err)
	}
}

// TestGroupJobOfVolumesHandedOverGoesToTheirNomadNamespace: a volume of the default namespace
// handed over while NOMAD_NAMESPACE named another ("team": `volctl nomad register` registers it
// there, says so, and the mark records it) is in Nomad's namespace team for good. A group using
// it, exported afterwards, got a job that named no namespace: `nomad job run` put it in whatever
// namespace the shell running it named (the default one, in a new shell), where Nomad has no
// such volume, and the job's allocs were never placed. Found by helper review71.
func TestGroupJobOfVolumesHandedOverGoesToTheirNomadNamespace(t *testing.T) {
	job, stderr := groupJobOfVolumesHandedOverTo(t, "team")
	if !regexp.MustCompile(`(?m)^\s*namespace\s*=\s*"team"`).Match(job) {
		t.Errorf("the job of a group whose volumes Nomad has in namespace team (handed over there) names no namespace: run, it lands in NOMAD_NAMESPACE's (the default when unset), where Nomad has no volume logs[0]\njob:\n%s\nstderr:\n%s", job, stderr)
	}
}

// groupJobOfVolumesHandedOverTo exports the job of a group of two allocs whose volumes,
// logs[0] and logs[1], were handed over to Nomad's namespace ns, and returns it with the
// export's stderr.
func groupJobOfVolumesHandedOverTo(t *testing.T, ns string) (job []byte, stderr string) {
	t.Helper()
	h := newCLIHarness(t)
	file := perAllocGroupFile(t, 2, "logs")
	createSingleWriter(t, h.e, "logs[0]", "logs[1]")
	for _, id := range []string{"logs[0]", "logs[1]"} {
		if _, err := h.e.HandOver(h.ctx, id, engine.HandoverTarget{Address: "http://127.0.0.1:4646", Namespace: ns}, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	var dir string
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) { o.GroupFiles = []string{file}; o.NoPluginJob = true; dir = o.OutDir })
	if err != nil {
		t.Fatalf("export nomad --group-file: %v\n%s", err, stderr)
	}
	job, err = os.ReadFile(filepath.Join(dir, "job-web.nomad.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return job, stderr
}

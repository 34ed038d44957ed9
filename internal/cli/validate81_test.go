package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	hcl1 "github.com/hashicorp/hcl"
	hcl1ast "github.com/hashicorp/hcl/hcl/ast"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// nomadRequiredTopologies is what `nomad volume create` makes of a volume spec's
// topology_request.required: csiDecodeVolume's reading (command/volume_register_csi.go), which
// decodes each topology_request block with HCL1 into
// map[string][]map[string][]map[string][]map[string]string and makes each non-empty segments
// map of the first required block that has one a topology of its own.
func nomadRequiredTopologies(t *testing.T, src string) []map[string]string {
	t.Helper()
	f, err := hcl1.ParseString(src)
	if err != nil {
		t.Fatalf("premise: Nomad's HCL1 parser refuses the spec: %v", err)
	}
	var out []map[string]string
	for _, o := range f.Node.(*hcl1ast.ObjectList).Filter("topology_request").Elem().Items {
		ot, ok := o.Val.(*hcl1ast.ObjectType)
		if !ok {
			break
		}
		decoded := map[string][]map[string][]map[string][]map[string]string{}
		if err := hcl1.DecodeObject(&decoded, ot.List); err != nil {
			t.Fatalf("premise: Nomad's decoding refuses the topology_request: %v", err)
		}
		out = nil
		for _, topo := range decoded["required"] {
			var topos []map[string]string
			for _, segments := range topo["topology"] {
				for _, segment := range segments["segments"] {
					if len(segment) > 0 {
						topos = append(topos, segment)
					}
				}
			}
			if len(topos) > 0 {
				out = topos
				break
			}
		}
	}
	return out
}

// TestValidateDuplicateSegmentsAdviceKeepsNomadsTopologies: a topology with two segments
// blocks, `topology { segments { rack = "R1" } segments { zone = "Z1" } }`, is two topologies
// to Nomad (csiDecodeVolume makes each segments map one: the volume may be in rack R1 or in
// zone Z1). `volctl validate` refuses it with decode.go's generic duplicate-map error
// (decoder.stringMap), "segments is set more than once; merge them into one": followed, the
// advice asks for ONE topology holding both segments, rack R1 and zone Z1 at once, a narrower
// placement than the file meant and than Nomad reads, which a plugin with no such place then
// refuses or satisfies elsewhere. The list form of the same spec (`segments = [{...}, {...}]`)
// already gets the right words (notAMap: "Nomad makes each map of such a list a topology of
// its own ... write a topology for each"). Correct: read it as Nomad does (a topology for
// each segments block), or refuse it saying that Nomad reads each segments block as a
// topology of its own and advising a topology block for each, never a merge.
// Found by helper review81 (validate).
func TestValidateDuplicateSegmentsAdviceKeepsNomadsTopologies(t *testing.T) {
	src := validVolume + `topology_request {
  required {
    topology {
      segments { rack = "R1" }
      segments { zone = "Z1" }
    }
  }
}
`
	nomad := nomadRequiredTopologies(t, src)
	if len(nomad) != 2 {
		t.Fatalf("premise: Nomad reads %d required topologies (%v), want 2", len(nomad), nomad)
	}
	dir := writeSpecs(t, map[string]string{"topo.hcl": src})
	ios, _, out, errOut := iostreams.Test()
	err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{filepath.Join(dir, "topo.hcl")}, ReadFile: os.ReadFile})
	if ExitCode(err) != ExitUsage {
		t.Fatalf("validate of two segments blocks in one topology: exit %d, stdout %q; want it refused, exit %d", ExitCode(err), out, ExitUsage)
	}
	says := errOut.String()
	if strings.Contains(says, "merge them into one") {
		t.Errorf("validate refuses two segments blocks advising to merge them:\n%s\nfollowed, that makes one topology of rack R1 and zone Z1 together, where Nomad reads two topologies, either of which will do (%v)",
			says, nomad)
	}
	if !strings.Contains(says, "topology of its own") || !strings.Contains(says, "topology block for each") {
		t.Errorf("the refusal does not say that Nomad reads each segments block as a topology of its own, nor advise a topology block for each; stdout %q, stderr:\n%s", out, says)
	}
	// The advice followed: a topology block for each, which volctl and Nomad read alike.
	fixed := validVolume + `topology_request {
  required {
    topology {
      segments { rack = "R1" }
    }
    topology {
      segments { zone = "Z1" }
    }
  }
}
`
	if got := nomadRequiredTopologies(t, fixed); len(got) != 2 {
		t.Fatalf("premise: Nomad reads %d topologies of the fixed spec, want 2", len(got))
	}
	v, diags := spec.ParseVolume("fixed.hcl", []byte(fixed), spec.VerbAny)
	if diags.HasErrors() || v.TopologyRequest == nil || len(v.TopologyRequest.Required) != 2 {
		t.Fatalf("the spec with a topology block for each, as advised: %v; want two required topologies, as Nomad reads", diags)
	}
}

// TestValidateSummaryDoesNotPrintASecretThatIsTheVolumesID: Nomad's own JuiceFS demo
// (demo/csi/juicefs-csi-plugin/juicefs-volume.hcl, in the compat corpus) has a secret whose
// value is the volume's ID (`name = "postgresql-database"` in secrets, id
// "postgresql-database"). validate warns "Secret in the volume's names", masks the value in
// that warning's snippet, and says volctl masks every secret value wherever it prints one,
// the ID included; then its summary line on stdout, validSummary (cli/validate.go), prints
// `valid volume "postgresql-database"`: the secret in clear, on the stream a CI job logs. Every
// other command prints that ID [REDACTED] (volume register's line goes through
// redactOutput; EachVolumeShown), and docs/specs.md promises secret values are never printed
// by any command. Correct: the summary line is scrubbed of the spec's own secret values (as
// volume_submit.go scrubs its lines with specSecrets), e.g. `valid volume "[REDACTED]"`.
// Found by helper review81 (validate).
func TestValidateSummaryDoesNotPrintASecretThatIsTheVolumesID(t *testing.T) {
	const secret = "orders-primary-db"
	src := strings.ReplaceAll(validVolume, `"db"`, `"`+secret+`"`) + "secrets {\n  name = \"" + secret + "\"\n}\n"
	dir := writeSpecs(t, map[string]string{"vol.hcl": src})
	path := filepath.Join(dir, "vol.hcl")
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	ios, _, out, errOut := iostreams.Test()
	err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{path}, ReadFile: os.ReadFile})
	if ExitCode(err) != 0 {
		t.Fatalf("premise: validate refuses the spec: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut.String(), "Secret in the volume's names") {
		t.Fatalf("premise: no warning that the secret is part of the volume's ID; stderr:\n%s", errOut)
	}
	if strings.Contains(errOut.String(), secret) {
		t.Fatalf("premise: the warning itself shows the secret:\n%s", errOut)
	}
	if strings.Contains(out.String(), secret) {
		t.Errorf("validate prints the secret value %q in clear on stdout, right after warning that volctl masks it wherever it prints it:\nstdout: %s", secret, out)
	}
}

// TestValidateWarnsOfMountFlagSecretsReadableByOthers: a volume spec whose mount_flags carry a
// credential (cifs's `password=...`, which volctl itself treats as a secret:
// spec.MountFlagSecrets, scrubbed from every output, and "Mount flags may hold credentials, so
// volctl never prints them" in `volctl init volume`'s example) in a file every user of the host
// may read (mode 0644, the default) gets no "Secrets readable by other users" warning: heldSecrets
// (cli/specfiles.go) looks at the secrets block and a plugin's exec env only. The same spec with
// the password under `secrets` is warned of. Correct: a spec whose mount flags hold a secret
// (MountFlagSecrets non-empty) is warned of as one holding a secrets block is, naming the
// chmod that makes it private.
// Found by helper review81 (validate).
func TestValidateWarnsOfMountFlagSecretsReadableByOthers(t *testing.T) {
	src := validVolume + "mount_options {\n  fs_type     = \"cifs\"\n  mount_flags = [\"username=svc\", \"password=Tr0ub4dor-and-3\"]\n}\n"
	inSecrets := validVolume + "secrets {\n  password = \"Tr0ub4dor-and-3\"\n}\n"
	dir := writeSpecs(t, map[string]string{"flags.hcl": src, "secrets.hcl": inSecrets})
	warned := func(name string) (bool, string) { return readableSecretsWarned(t, dir, name) }
	if ok, all := warned("secrets.hcl"); !ok {
		t.Fatalf("premise: the password in a secrets block of a 0644 file is not warned of:\n%s", all)
	}
	if ok, all := warned("flags.hcl"); !ok {
		t.Errorf("a 0644 spec whose mount flags hold password=... is not warned of as readable by other users (the same password in secrets is):\n%s", all)
	}
}

// As TestValidateSummaryDoesNotPrintASecretThatIsTheVolumesID, for the refusal of a second file
// declaring that volume ID: its detail named the ID, the secret, in clear. Mine, beside it.
func TestValidateDuplicateOfAVolumeIDThatIsASecretDoesNotPrintIt(t *testing.T) {
	const secret = "orders-primary-db"
	src := strings.ReplaceAll(validVolume, `"db"`, `"`+secret+`"`) + "secrets {\n  name = \"" + secret + "\"\n}\n"
	dir := writeSpecs(t, map[string]string{"a.hcl": src, "b.hcl": src})
	var files []string
	for _, n := range []string{"a.hcl", "b.hcl"} {
		path := filepath.Join(dir, n)
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	ios, _, out, errOut := iostreams.Test()
	err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: files, ReadFile: os.ReadFile})
	if ExitCode(err) != ExitUsage || !strings.Contains(errOut.String(), "Duplicate") {
		t.Fatalf("premise: validate of two files of one volume ID: exit %d, stderr:\n%s", ExitCode(err), errOut)
	}
	if strings.Contains(out.String()+errOut.String(), secret) {
		t.Errorf("validate shows the secret value %q, the volume's ID:\nstdout: %s\nstderr: %s", secret, out, errOut)
	}
}

// readableSecretsWarned validates file name of dir, made readable by all (0644), and says
// whether it was warned of as holding secrets other users may read, with all it printed.
func readableSecretsWarned(t *testing.T, dir, name string) (bool, string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	ios, _, out, errOut := iostreams.Test()
	err := validateRun(context.Background(), &ValidateOptions{IO: ios, Files: []string{path}, ReadFile: os.ReadFile})
	if ExitCode(err) != 0 {
		t.Fatalf("premise: validate refuses %s: %v\n%s", name, err, errOut)
	}
	return strings.Contains(errOut.String(), "Secrets readable by other users"), out.String() + errOut.String()
}

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/atomicfile"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

func newCmdExport(f *Factory) *cobra.Command {
	return parentCmd("export", "Write what volctl knows in another orchestrator's format", "", newCmdExportNomad(f, nil))
}

// ExportNomadOptions are the inputs of `volctl export nomad`.
type ExportNomadOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)

	Volumes        []string
	Groups         []string
	GroupFiles     []string // group spec files, for groups never run here
	All            bool
	OutDir         string
	IncludeSecrets bool
	Job            nomad.JobOptions
	Plugin         nomad.PluginJobOptions
	NoPluginJob    bool
}

func newCmdExportNomad(f *Factory, runF func(*ExportNomadOptions) error) *cobra.Command {
	opts := &ExportNomadOptions{IO: f.IO, Engine: f.Engine}
	cmd := &cobra.Command{
		Use:   "nomad [VOLUME...] [--group NAME|--group-file FILE]...",
		Short: "Write volumes, groups and volctl's plugin as files for Nomad",
		Long: `Write files for moving to a Nomad cluster, into --out (default ./nomad):

  volume-ID.hcl          per volume, a register spec in Nomad's format: the
                         recorded external_id (a volume volctl created is
                         registered, not created again), capabilities, mount
                         options, parameters, the plugin's context, its
                         accessible topology as topology_request.required,
                         and its capacity
  job-GROUP.nomad.hcl    per group, a job whose group keeps its volume blocks
                         and gets one task per volume_mount (one task "main",
                         mounting nothing, for a group with none: Nomad
                         refuses a group without a task); {index} becomes
                         ${NOMAD_ALLOC_INDEX}; names are written as Nomad takes
                         them (the job ID's spaces and a task's slashes made
                         dashes, the job keeping the group's name as its name)
  plugin-ID.nomad.hcl    for volctl's own hostpath plugin, a system job running
                         volctl plugin serve hostpath as a csi_plugin monolith,
                         with --enable-attach and --max-volumes as the plugin
                         is served (its exec block's args, else what the
                         process on its socket answered), constrained to the
                         Nomad client of this host (--nomad-node), whose root
                         holds the volumes, in the --datacenter given

A file there already is replaced; one that differs from what is written now (a job whose
task you wrote in, edited since an earlier export) is kept as FILE.bak first, and the line
naming the file says so. A group is one run here (--group NAME), or the group of a group spec
file, run here or not (--group-file FILE). A group brings the volumes it uses. A volume whose
create or delete is not finished (volctl reconcile finishes it) is refused, naming why; --all
leaves it out with a note, unless a group exported uses it. With nothing to write, a note says
so and --out is not made. Two files that would hold one Nomad job (a group named plugin-ID
beside that plugin's job) are refused before any file is written. Secret values and mount
flags are written as placeholders unless --include-secrets (the files are then 0600); they are never printed. So is a secret
value a plugin echoed into a volume's context; one it echoed into the volume's external ID or
topology, which a placeholder would make another volume's, refuses the volume without
--include-secrets. An --out another user controls (theirs, writable by them, or reached
through a directory or symlink of theirs) is refused before anything is written. Every volume file
is checked with volctl's own parser for register before it is written. The files write keys in
Unicode normal form C, so a map with two keys that differ only in normalisation (a parameter
"é" precomposed and decomposed), or a group with two such volume names, is refused, naming
both keys, before any file is written.

The task driver defaults to exec; raw_exec, java and mock cannot mount CSI volumes and are
refused. The plugin job runs under raw_exec, so it needs the clients' data_dir to tell the
plugin Nomad's host paths (--nomad-data-dir).

Register the volumes with volctl nomad register, which also stops volctl from claiming,
detaching or deleting them; registered with nomad volume register FILE instead, a volume is
held by both orchestrators at once.`,
		Example: `  volctl export nomad db
  volctl export nomad --group web --out ./cluster
  volctl export nomad --group-file web.hcl
  volctl export nomad --all --driver exec --command /bin/sh --arg -c --arg 'echo hi > /data/x; sleep 3600'`,
		RunE: runOpts(opts, func(args []string) {
			opts.Volumes, opts.Groups = typedIDs(args), typedIDs(opts.Groups)
		}, runF, exportNomadRun),
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.Groups, "group", nil, "export a group (a job) and the volumes it uses; repeatable")
	fl.StringArrayVar(&opts.GroupFiles, "group-file", nil, "export the group of a group spec file (a job), run here or not, and the volumes it uses; repeatable")
	fl.BoolVar(&opts.All, "all", false, "export every volume and group")
	fl.StringVarP(&opts.OutDir, "out", "o", "nomad", "directory to write the files into")
	fl.BoolVar(&opts.IncludeSecrets, "include-secrets", false, "write secret values and mount flags into the files (mode 0600)")
	fl.StringVar(&opts.Job.Driver, "driver", "exec", "task driver of the groups' tasks")
	fl.StringVar(&opts.Job.Command, "command", "", "config.command of the groups' tasks (default /bin/sleep infinity)")
	fl.StringArrayVar(&opts.Job.Args, "arg", nil, "config.args of the groups' tasks; repeatable")
	_ = fl.SetAnnotation("arg", takesEmptyItems, []string{"an empty argument of the task's command"})
	fl.StringVar(&opts.Job.Image, "image", "", "config.image of the groups' tasks: required with --driver docker or podman, refused with exec")
	fl.StringArrayVar(&opts.Job.Datacenters, "datacenter", nil, `datacenters of the jobs; repeatable (default "*")`)
	fl.StringVar(&opts.Plugin.VolctlPath, "volctl-path", "", "path of the volctl binary on the Nomad clients, absolute, or its name alone to look up in their PATH (default: this binary)")
	fl.StringVar(&opts.Plugin.Root, "plugin-root", "", "--root of the hostpath plugin, an absolute path (default: from its registered exec args)")
	fl.StringVar(&opts.Plugin.NodeID, "node-id", "", "--node-id of the hostpath plugin (default: the node its volumes' topology names)")
	fl.StringVar(&opts.Plugin.NomadDataDir, "nomad-data-dir", "/opt/nomad/data", "data_dir of the Nomad clients, for the plugin's stage_publish_base_dir")
	fl.StringVar(&opts.Plugin.NomadNode, "nomad-node", "", "node name of the Nomad client on the host whose --plugin-root holds the volumes: the plugin job runs there only (default: this host's name, a Nomad client's default name)")
	fl.BoolVar(&opts.NoPluginJob, "no-plugin-job", false, "do not write the hostpath plugin's system job")
	return cmd
}

// groupsOfFiles reads the group of each group spec file, as group run does; an invalid one is
// refused with its diagnostics.
func groupsOfFiles(ctx context.Context, ios *iostreams.IOStreams, files []string) ([]spec.Group, error) {
	if len(files) == 0 {
		return nil, nil
	}
	// "-" twice, or one file twice, refused as the spec commands refuse them: the second read
	// of standard input was said empty, blaming the pipe (TestGroupFileStdinGivenTwiceIsNotCalledEmpty).
	if err := checkSpecArgs(files); err != nil {
		return nil, err
	}
	sources, err := readSpecSources(ctx, ios, nil, files)
	if err != nil {
		return nil, unreadSpecs("export nomad", "exported", files, err)
	}
	parser := spec.NewParser()
	var groups []spec.Group
	invalid := 0
	for _, src := range sources {
		g, diags := parser.ParseGroup(src.Name, src.Src)
		if err := writeSpecDiagnostics(ios, parser, diags); err != nil {
			return nil, err
		}
		if diags.HasErrors() {
			invalid++
			continue
		}
		if slices.ContainsFunc(groups, func(o spec.Group) bool { return o.Name == g.Name }) {
			return nil, usageError("export nomad: group %q is in two --group-file files: export one of them", g.Name)
		}
		groups = append(groups, *g)
	}
	if invalid > 0 {
		return nil, invalidSpecs("export nomad", "exported", invalid, len(sources))
	}
	return groups, nil
}

type exportFile struct {
	name string
	what string
	data []byte
	mode os.FileMode
	job  nomadJob // the Nomad job the file holds, none for a volume's
}

// nomadJob is a Nomad job by what makes it one: its namespace ("" for the one the request
// names) and its ID.
type nomadJob struct{ namespace, id string }

// sameJob refuses two files that hold one Nomad job: a group's and a plugin's whose IDs are
// one ("plugin-hp", a group's name and volctl's plugin job's), or two whose names differ only
// in what JobID makes dashes. Run, the second would replace the first in Nomad.
//
// A file that names no namespace is run in the one `nomad job run` is given (NOMAD_NAMESPACE,
// else "default"): one job with any namespace's file of the same ID. Compared as strings, a
// group job naming "default" (its volumes handed over there) and the plugin's job naming none
// passed, the second run replacing the first
// (TestExportRefusesAGroupJobAndThePluginJobOfOneNomadJobInTheDefaultNamespace).
func sameJob(files []exportFile) error {
	type written struct{ namespace, what string }
	seen := map[string][]written{}
	for _, f := range files {
		if f.job.id == "" {
			continue
		}
		for _, o := range seen[f.job.id] {
			if o.namespace != f.job.namespace && o.namespace != "" && f.job.namespace != "" {
				continue // two namespaces named: two jobs
			}
			way := "register one of the plugins under another ID"
			if strings.HasPrefix(o.what, "group") || strings.HasPrefix(f.what, "group") {
				way = "rename the group (its spec's label; --group-file exports it from the file)"
			}
			return fmt.Errorf("export nomad: %s and %s would both be Nomad job %q, and running one would replace the other: %s; nothing was written",
				o.what, f.what, f.job.id, way)
		}
		seen[f.job.id] = append(seen[f.job.id], written{f.job.namespace, f.what})
	}
	return nil
}

func exportNomadRun(ctx context.Context, opts *ExportNomadOptions) error {
	if len(opts.Volumes) == 0 && len(opts.Groups) == 0 && len(opts.GroupFiles) == 0 && !opts.All {
		return usageError("export nomad: name volumes, --group NAME, --group-file FILE, or --all")
	}
	if opts.All && (len(opts.Volumes) > 0 || len(opts.Groups) > 0 || len(opts.GroupFiles) > 0) {
		return usageError("export nomad: --all exports everything; do not name volumes or groups with it")
	}
	if err := nomad.CheckTaskDriver(opts.Job.Driver); err != nil {
		return usageError("export nomad: --driver: %v", err)
	}
	if len(opts.Groups) > 0 || len(opts.GroupFiles) > 0 || opts.All {
		if err := nomad.CheckTaskImage(opts.Job.Driver, opts.Job.Image); err != nil {
			return usageError("export nomad: %v", err)
		}
	}
	if opts.OutDir == "" {
		return usageError("export nomad: --out must name a directory")
	}
	if problem := writtenPathProblem("--out", opts.OutDir); problem != "" {
		return usageError("export nomad: %s", problem)
	}
	if err := checkOutDir(opts.OutDir); err != nil {
		return err
	}
	if d := opts.Plugin.NomadDataDir; d != "" && !filepath.IsAbs(d) {
		// Written into the plugin job's stage_publish_base_dir, a relative one was read
		// from the plugin task's working directory, not Nomad's data_dir, which Nomad
		// holds absolute (TestTextFlagWithADefaultGivenEmptyIsRefused).
		return usageError("export nomad: --nomad-data-dir %q is not an absolute path: give the Nomad clients' data_dir, as their agent config has it (absolute), or leave the flag out for /opt/nomad/data", d)
	}
	if r := opts.Plugin.Root; r != "" && !filepath.IsAbs(r) {
		// Written into the plugin job's args, a relative one is read from the plugin task's
		// working directory, which Nomad makes: the plugin would serve an empty root there,
		// and every volume handed over would be NOT_FOUND to it
		// (TestExportNomadRefusesARelativePluginRoot).
		return usageError("export nomad: --plugin-root %q is not an absolute path: give the directory the plugin serves, absolute, as the Nomad clients see it", r)
	}
	if v := opts.Plugin.VolctlPath; strings.HasPrefix(v, "-") {
		// The next flag taken as the value (`--volctl-path --include-secrets`): the plugin job's
		// command was "--include-secrets", a task that never starts, and the flag meant lost
		// (TestExportVolctlPathThatIsAFlagIsRefused).
		return usageError("export nomad: --volctl-path %q begins with \"-\", a flag taken as its value (was the value left out?): give the absolute path of volctl on the Nomad clients, or its name alone", v)
	}
	if v := opts.Plugin.VolctlPath; strings.Contains(v, "/") && !filepath.IsAbs(v) {
		// The plugin task's command: Nomad looks a name alone up in the PATH, and reads a
		// relative path from the task's working directory, where no volctl is.
		return usageError("export nomad: --volctl-path %q is a relative path, which Nomad reads from the plugin task's working directory: give the absolute path of volctl on the Nomad clients, or its name alone to look it up in their PATH", v)
	}
	if n := opts.Plugin.NodeID; n != "" {
		// Written into the plugin job, it is that plugin's --node-id: one `plugin serve
		// hostpath` refuses made a job whose plugin never started.
		if err := spec.ValidateNodeID("--node-id", n); err != nil {
			return usageError("export nomad: %v", err)
		}
	}
	if opts.Plugin.NomadNode == "" && !opts.NoPluginJob {
		host, err := os.Hostname()
		if err != nil || host == "" {
			return usageError("export nomad: this host's name cannot be read (%v): give the node name of the Nomad client on the host with the plugin's root (--nomad-node NAME, as `nomad node status` lists it), or pass --no-plugin-job", err)
		}
		opts.Plugin.NomadNode = host
	}
	// "datacenters of the jobs": the plugin's job too. Before, only the groups' got them, and
	// the plugin's system job ran in every datacenter (TestExportDatacenterReachesThePluginJob).
	opts.Plugin.Datacenters = opts.Job.Datacenters
	opts.Job.IncludeSecrets = opts.IncludeSecrets
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}

	var groups []spec.Group
	if opts.All {
		groups, err = e.GroupSpecs(ctx)
	} else if len(opts.Groups) > 0 {
		groups, err = e.GroupSpecs(ctx, opts.Groups...)
	}
	if errors.Is(err, engine.ErrNotFound) {
		return fmt.Errorf("export nomad: %w; a group spec never run here is exported with --group-file FILE", err)
	}
	if err != nil {
		return fmt.Errorf("export nomad: %w", err)
	}
	fromFiles, err := groupsOfFiles(ctx, opts.IO, opts.GroupFiles)
	if err != nil {
		return err
	}
	for _, g := range fromFiles {
		if slices.ContainsFunc(groups, func(o spec.Group) bool { return o.Name == g.Name }) {
			// Both would be written as one job file.
			return usageError("export nomad: group %q is named twice (--group, --group-file): export one of them", g.Name)
		}
		groups = append(groups, g)
	}
	volIDs := slices.Clone(opts.Volumes)
	if opts.All {
		all, err := e.Volumes(ctx)
		if err != nil {
			return fmt.Errorf("export nomad: %w", err)
		}
		for _, v := range all {
			volIDs = append(volIDs, v.ID)
		}
	}
	var notes []string
	ofGroups := map[string]bool{} // the volumes the exported groups use
	for _, g := range groups {
		for _, r := range g.Volumes {
			for _, id := range groupVolumeIDs(g, r) {
				// Volume takes an unambiguous prefix: a group's logs beside logs-old (or logs-a
				// and logs-b) is a volume volctl does not know too, not one to stop at.
				info, err := e.Volume(ctx, id)
				var ambiguous *engine.AmbiguousError
				if errors.Is(err, engine.ErrNotFound) || errors.As(err, &ambiguous) || (err == nil && !namedExactly(info.ID, id)) {
					notes = append(notes, fmt.Sprintf("group %q uses volume %q, which volctl does not know: register it in Nomad yourself", g.Name, id))
					continue
				}
				volIDs = append(volIDs, id)
				ofGroups[id] = true
			}
		}
	}
	slices.Sort(volIDs)
	volIDs = slices.Compact(volIDs)

	mode := os.FileMode(0o644)
	if opts.IncludeSecrets {
		mode = 0o600
	}
	var files []exportFile
	var infos []engine.VolumeInfo
	for _, id := range volIDs {
		info, err := e.Volume(ctx, id)
		if err != nil {
			return fmt.Errorf("export nomad: %w", err)
		}
		if !namedExactly(info.ID, id) {
			// Volume resolves prefixes; an export names volumes exactly.
			return fmt.Errorf("export nomad: volume %q not found (did you mean %q?)", id, info.ID)
		}
		if why := notExportable(info); why != "" {
			// A create not finished has no storage ID for Nomad to register (the check of the
			// file written below said "(a volctl bug)"), and a volume being deleted is no
			// volume to hand over. --all leaves it out, saying so, unless a group exported
			// uses it: its job would name a volume Nomad does not have.
			if opts.All && !slices.Contains(opts.Volumes, id) && !ofGroups[id] {
				notes = append(notes, fmt.Sprintf("volume %q is not exported: %s", info.ID, why))
				continue
			}
			return fmt.Errorf("export nomad: volume %q %s", info.ID, why)
		}
		if err := spec.ValidateNamespace(info.Namespace); info.Namespace != "" && err != nil {
			// One an older volctl took (team_a): Nomad refuses the file, and the check of the
			// file written below said "(a volctl bug)".
			return fmt.Errorf("export nomad: volume %q is in namespace %q, which no Nomad namespace can be named (its names are ASCII letters, digits and hyphens), so Nomad can hold no volume in it and no file is written; %s",
				info.ID, info.Namespace, spec.MoveNamespace(info.ID))
		}
		if !opts.IncludeSecrets {
			// The external ID and topology are written as the plugin gave them too, and a
			// placeholder there would name another volume: one holding a secret value is
			// refused rather than written into a file others may read.
			if err := echoedIntoIdentity(ctx, e, info); err != nil {
				return err
			}
		}
		if !opts.IncludeSecrets && len(info.Context) > 0 {
			// The plugin's context is written as it gave it, but a plugin may have echoed a
			// secret into it: without --include-secrets that is a placeholder like the others.
			raw := maps.Clone(info.Context)
			if err := e.RedactValue(ctx, &info.Context); err != nil {
				return fmt.Errorf("export nomad: volume %q: reading the state to keep secrets out of its context: %w", info.ID, err)
			}
			if len(info.Context) < len(raw) {
				// Keys that differ only in the secret they hold would be written as one key.
				return fmt.Errorf("export nomad: volume %q: keys of its context hold a secret value (its plugin echoed it there) and, "+
					"with it written as %s, would be one key, losing values; export it with --include-secrets", info.ID, nomad.SecretPlaceholder)
			}
			if !maps.Equal(raw, info.Context) {
				notes = append(notes, fmt.Sprintf("volume %q: its context holds a secret value (its plugin echoed it there), written as %s; use --include-secrets to write it", info.ID, nomad.SecretPlaceholder))
			}
		}
		if len(info.SameStorage) > 0 {
			// One storage recorded under two IDs here (an older volctl's pair): registered in
			// Nomad both, its claims of the two would ignore each other's, as `nomad register`
			// refuses while the other is held here.
			notes = append(notes, fmt.Sprintf("volume %q: %s records its storage too (the same external ID, through a plugin ID on the same socket): registered in Nomad both, the two volumes' claims would ignore each other's access mode; register one of the two files, or `%s` first",
				info.ID, strings.Join(info.SameStorage, ", "), shellquote.Command("volctl volume deregister", info.ID)))
		}
		infos = append(infos, info)
		data, n, err := nomad.VolumeFile(nomad.RegisterSpec(info), opts.IncludeSecrets)
		if err != nil {
			return fmt.Errorf("export nomad: %w", err)
		}
		notes = append(notes, n...)
		name := "volume-" + info.ID + ".hcl"
		recorded := recordedPlaceholders(info)
		notes = append(notes, placeholderNotes(info.ID, recorded)...)
		if _, diags := spec.ParseVolume(name, data, spec.VerbRegister); diags.HasErrors() {
			if diags = exportErrors(diags, !opts.IncludeSecrets, recorded); diags.HasErrors() {
				return fmt.Errorf("export nomad: volume %q: the exported spec does not validate for register (a volctl bug): %s", info.ID, diags.Error())
			}
		}
		files = append(files, exportFile{name: name, what: fmt.Sprintf("volume %q", info.ID), data: data, mode: mode})
	}
	// A volume handed over is in the namespace Nomad took it into (a default-namespace one, into
	// the namespace NOMAD_NAMESPACE named then), not the request's: its group's job goes there,
	// where before it named none, and, run from another shell, landed where Nomad had no such
	// volume (TestGroupJobOfVolumesHandedOverGoesToTheirNomadNamespace).
	// One handed over into the default namespace is in that one, which the job then names, as
	// it names any other (TestGroupJobOfVolumesHandedOverToTheDefaultNamespaceNamesIt).
	// So is its region, the one its mark records (NOMAD_REGION at the handover): a job that
	// names none runs in the region of the agent it is sent to, where Nomad has no such volume
	// (TestGroupJobOfVolumesHandedOverGoesToTheirNomadRegion).
	nsOf, handed := map[string]string{}, map[string]bool{}
	for _, info := range infos {
		nsOf[info.ID] = info.Namespace
		if h := info.Handover; h != nil && h.Namespace != "" {
			nsOf[info.ID], handed[info.ID] = h.Namespace, true
		}
	}
	for _, g := range groups {
		// A Nomad job claims volumes of its own namespace and region only.
		jo := opts.Job
		spaces, inNomad := map[string]bool{}, false
		var used []engine.VolumeInfo
		for _, r := range g.Volumes {
			// The volumes its allocs use, not every volume named like them: a per_alloc
			// source's "data[archive]" beside the group's data[0] is another volume, whose
			// namespace refused the group as using two (TestGroupNamespaceIsOfItsOwnAllocsVolumes).
			for _, id := range groupVolumeIDs(g, r) {
				if ns, ok := nsOf[id]; ok {
					spaces[ns] = true
					inNomad = inNomad || handed[id]
				}
				if i := slices.IndexFunc(infos, func(v engine.VolumeInfo) bool { return v.ID == id }); i >= 0 {
					used = append(used, infos[i])
				}
			}
		}
		if len(spaces) > 1 {
			return fmt.Errorf("export nomad: group %q uses volumes of %d namespaces; a Nomad job claims volumes of its own namespace only", g.Name, len(spaces))
		}
		for ns := range spaces {
			if ns != spec.DefaultNamespace && ns != "" || inNomad {
				jo.Namespace = ns
			}
		}
		region, err := handoverRegion(used)
		if err != nil {
			return fmt.Errorf("export nomad: group %q %w; a Nomad job claims volumes of its own region only", g.Name, err)
		}
		jo.Region = region
		data, n, err := nomad.GroupJob(g, jo)
		if errors.Is(err, nomad.ErrFlagNotNFC) {
			return withCode(ExitUsage, fmt.Errorf("export nomad: group %q: %w", g.Name, err))
		}
		if err != nil {
			return fmt.Errorf("export nomad: group %q: %w", g.Name, err)
		}
		notes = append(notes, n...)
		files = append(files, exportFile{name: "job-" + g.Name + ".nomad.hcl", what: fmt.Sprintf("group %q", g.Name), data: data, mode: mode,
			job: nomadJob{jo.Namespace, nomad.JobID(g.Name)}})
	}
	if !opts.NoPluginJob {
		pf, pn, err := exportPluginJobs(ctx, e, infos, opts.Plugin)
		if err != nil {
			return fmt.Errorf("export nomad: %w", err)
		}
		files = append(files, pf...)
		notes = append(notes, pn...)
	}
	if err := sameJob(files); err != nil {
		return err
	}

	if len(files) == 0 {
		// --all of a state with nothing to hand over (or only volumes it leaves out): before, it
		// made the directory, wrote nothing and said nothing.
		notes = append(notes, fmt.Sprintf("nothing to export: no volume, group or volctl plugin job to write; %s was not made or changed (`volctl status` lists what this state dir has)", opts.OutDir))
	}
	if len(files) > 0 {
		if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
			return fmt.Errorf("export nomad: output directory: %w", err)
		}
		// Again on what MkdirAll made or found: a symlink planted since the first check.
		if err := checkOutDir(opts.OutDir); err != nil {
			return err
		}
	}
	var printErr error
	for i, f := range files {
		path := filepath.Join(opts.OutDir, f.name)
		kept, err := keepEdited(path, f.data)
		if err != nil {
			if i > 0 {
				return fmt.Errorf("export nomad: %s: %w (the %d file(s) before it are written, whole; it and the %d after it are not)", f.what, err, i, len(files)-i-1)
			}
			return fmt.Errorf("export nomad: %s: %w (no file is written)", f.what, err)
		}
		if err := writeExported(path, f.data, f.mode); err != nil {
			return fmt.Errorf("export nomad: %s: writing %s: %w%s%s", f.what, path, err, putBack(kept, path), noRoomToExport(err, opts.OutDir, i, len(files)))
		}
		line := fmt.Sprintf("Wrote %s to %s\n", f.what, path)
		if kept != "" {
			line = fmt.Sprintf("Wrote %s to %s; the file there differed from this export (edited since?) and is kept as %s\n", f.what, path, kept)
		}
		if printErr == nil {
			printErr = printDone(opts.IO.Out, line, "export nomad: wrote %d file(s) to %s", len(files), opts.OutDir)
		}
	}
	// Notes name plugin data (a plugin's name), which a plugin may have echoed a secret into.
	if err := e.RedactValue(ctx, &notes); err != nil {
		return fmt.Errorf("export nomad: the files are written; reading the state to keep secrets out of the notes: %w", err)
	}
	for _, n := range notes {
		fmt.Fprintf(opts.IO.ErrOut, "Note: %s\n", escapeLines(n))
	}
	return printErr
}

// keepEdited moves the regular file at path aside, to path.bak, when it differs from data, the
// export about to replace it, and returns where it went: a file exported before and edited
// since (a group's job, whose task the user writes in) was replaced without a word, the edits
// lost (TestExportNomadKeepsAFileEditedSinceAnEarlierExport). "" when nothing is there, when it
// is what is written now, or when it is not a regular file (a symlink is replaced, as ever,
// never followed). The file keeps its mode (0600 with secrets). An earlier .bak that holds
// something else is never replaced: the file goes to the first of path.bak.1, path.bak.2, ...
// that is free. Replaced, the user's edits an earlier export had kept as .bak were lost at the
// next export, volctl's own unedited output moved over them, the line saying only "kept as
// FILE.bak" (TestExportNomadKeepsEditsKeptByAnEarlierExport).
func keepEdited(path string, data []byte) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading %s, which this export replaces: %w", path, err)
	}
	if bytes.Equal(old, data) {
		return "", nil
	}
	for i := 0; i < maxKeptCopies; i++ {
		kept := path + ".bak"
		if i > 0 {
			kept = fmt.Sprintf("%s.bak.%d", path, i)
		}
		// Without replacing what is there (another export's at once included): a name taken by
		// the same bytes keeps nothing else, and is replaced.
		err := renameNoReplace(path, kept)
		if errors.Is(err, unix.EEXIST) {
			if there, rerr := os.ReadFile(kept); rerr != nil || !bytes.Equal(there, old) {
				continue
			}
			err = os.Rename(path, kept)
		}
		if err != nil {
			return "", fmt.Errorf("keeping %s, which differs from this export, as %s: %w", path, kept, err)
		}
		return kept, nil
	}
	return "", fmt.Errorf("%s differs from this export, and %s.bak and %s.bak.1 to .%d, where it would be kept, all hold other files: it is left as it is; move them away, then export again",
		path, path, path, maxKeptCopies-1)
}

// renameNoReplace renames old to new unless new exists (EEXIST). Where the file system has no
// such rename (NFS, FUSE without rename2, 9p: EINVAL; an old kernel: ENOSYS), a name found free
// is renamed to: two exports at once there may still meet, which is what the file system
// allows. Without the fallback, an export into a shared directory on NFS that found an edited
// file stopped at it (TestKeepEditedWhereTheFileSystemCannotRenameWithoutReplacing).
func renameNoReplace(old, new string) error {
	err := renameExclusive(old, new)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	return renameIfFree(old, new)
}

// renameExclusive is renameat2 with RENAME_NOREPLACE; tests make it fail as NFS does.
var renameExclusive = func(old, new string) error {
	return unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_NOREPLACE)
}

// renameIfFree is renameNoReplace's fallback: os.Rename when nothing is at new.
func renameIfFree(old, new string) error {
	if _, err := os.Lstat(new); err == nil {
		return &os.LinkError{Op: "rename", Old: old, New: new, Err: unix.EEXIST}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(old, new)
}

// maxKeptCopies bounds the names keepEdited tries: path.bak, then path.bak.1 to .bak.99.
const maxKeptCopies = 100

// writeExported writes an exported file whole (atomicfile); tests make it fail.
var writeExported = atomicfile.Write

// putBack returns the file keepEdited kept to path, after a write that failed to replace it,
// and says so: "" when nothing was kept, else where the file is now.
func putBack(kept, path string) string {
	if kept == "" {
		return ""
	}
	if err := os.Rename(kept, path); err != nil {
		return fmt.Sprintf(" (the file that was there is kept as %s: putting it back failed: %v)", kept, err)
	}
	return " (the file that was there is left as it was)"
}

// checkOutDir refuses an --out another user controls (pathtrust.Replaceable: it, or a directory
// or symlink on the way to it, theirs or writable by them, a sticky /tmp's entries aside):
// volctl, often root, and with --include-secrets writing the volumes' secrets, would write its
// files where they chose (a symlink they planted), or into a directory they may read the files
// from or replace them in.
func checkOutDir(dir string) error {
	pr := pathtrust.Replaceable(dir)
	if pr == nil {
		return nil
	}
	return fmt.Errorf("export nomad: --out %s: %s %s, so another user could choose where the files go or replace them; "+
		"nothing was written: give --out a directory only you (or root) may write, or chown or chmod go-w %s",
		spec.QuoteName(dir), spec.QuoteName(pr.Path), pr.Why, spec.QuoteName(pr.Dir()))
}

// noRoomToExport says what to do when err, writing a file into dir, found its file system full
// (or the user's quota on it used up): "" for any other error. written of total files were
// written before it, each whole (atomicfile), and the failed one left nothing.
func noRoomToExport(err error, dir string, written, total int) string {
	full := "full"
	switch {
	case errors.Is(err, syscall.EDQUOT):
		full = "at this user's disk quota"
	case !errors.Is(err, syscall.ENOSPC):
		return ""
	}
	return fmt.Sprintf(" (the file system holding %s is %s: free space there, or give another directory with --out, then run the export again; %d of the %d files were written before this one, each whole)",
		dir, full, written, total)
}

// echoedIntoIdentity refuses a volume whose external ID or accessible topology holds a secret
// value (its plugin echoed it there), naming the field, never the value.
func echoedIntoIdentity(ctx context.Context, e *engine.Engine, info engine.VolumeInfo) error {
	fields := struct {
		ExternalID string
		Topology   []spec.Topology
	}{info.ExternalID, make([]spec.Topology, len(info.AccessibleTopology))}
	for i, t := range info.AccessibleTopology {
		fields.Topology[i].Segments = maps.Clone(t.Segments)
	}
	if err := e.RedactValue(ctx, &fields); err != nil {
		return fmt.Errorf("export nomad: volume %q: reading the state to keep secrets out of its file: %w", info.ID, err)
	}
	field := ""
	switch {
	case fields.ExternalID != info.ExternalID:
		field = "external ID"
	case !slices.EqualFunc(fields.Topology, info.AccessibleTopology, func(a, b spec.Topology) bool { return maps.Equal(a.Segments, b.Segments) }):
		field = "accessible topology"
	default:
		return nil
	}
	return fmt.Errorf("export nomad: volume %q: its %s holds a secret value (its plugin echoed it there), which a placeholder "+
		"would make another volume's; export it with --include-secrets, which writes it as the plugin gave it (the file is then 0600)", info.ID, field)
}

// echoedIntoNodeID refuses plugin id's job when the node ID it would serve, as the plugin reports
// it or its volumes' topology names it, holds a secret value (the plugin echoed one there): the
// job file is 0644, with --include-secrets too, and held it whole
// (TestPluginJobNodeIDEchoingASecretIsRefused). A --node-id given is the user's own.
func echoedIntoNodeID(ctx context.Context, e *engine.Engine, id, node string) error {
	shown := node
	if err := e.RedactValue(ctx, &shown); err != nil {
		return fmt.Errorf("plugin %q job: reading the state to keep secrets out of it: %w", id, err)
	}
	if shown == node {
		return nil
	}
	return fmt.Errorf("plugin %q job: the node ID the plugin reports (or its volumes' topology names) holds a secret value (the plugin echoed it there), "+
		"which the job file, readable by all, would hold whole: give the node's ID with --node-id, or pass --no-plugin-job", id)
}

// handoverRegion is the Nomad region that vols handed over are in, as their marks record it
// (NOMAD_REGION at `volctl nomad register`): "" when none is marked, or none with a region
// (the agent's own). An error, worded to follow "group NAME" or "plugin NAME", when they name
// two regions.
func handoverRegion(vols []engine.VolumeInfo) (string, error) {
	regions := map[string][]string{}
	for _, v := range vols {
		if h := v.Handover; h != nil && h.Region != "" && !slices.Contains(regions[h.Region], v.ID) {
			regions[h.Region] = append(regions[h.Region], v.ID)
		}
	}
	switch len(regions) {
	case 0:
		return "", nil
	case 1:
		for r := range regions {
			return r, nil
		}
	}
	var where []string
	for _, r := range slices.Sorted(maps.Keys(regions)) {
		where = append(where, fmt.Sprintf("%s in region %s", quotedIDs(regions[r]), shownQ(r)))
	}
	return "", fmt.Errorf("uses volumes handed over to Nomad in %d regions (%s)", len(regions), strings.Join(where, "; "))
}

// exportPluginJobs writes the system job of each hostpath plugin the volumes use.
// hostpathNodes are the nodes volume v's volume file allows its hostpath plugin job on: those
// its required topologies name (nomad.RequiredTopologies; any one of them will do), nil for any
// node (no topology, or one that names no node).
func hostpathNodes(v engine.VolumeInfo) map[string]bool {
	req := nomad.RequiredTopologies(v)
	if len(req) == 0 {
		return nil
	}
	nodes := map[string]bool{}
	for _, t := range req {
		n := t.Segments[hostpath.TopologyKey]
		if n == "" {
			return nil
		}
		nodes[n] = true
	}
	return nodes
}

func exportPluginJobs(ctx context.Context, e *engine.Engine, vols []engine.VolumeInfo, base nomad.PluginJobOptions) (files []exportFile, notes []string, err error) {
	seen := map[string]bool{}
	for _, v := range vols {
		if v.Provider != hostpath.PluginName && !seen[v.PluginID] {
			seen[v.PluginID] = true
			notes = append(notes, fmt.Sprintf("plugin %q (%s) is not volctl's own: run it in Nomad with its own job, as plugin ID %q", v.PluginID, orUnknown(v.Provider), v.PluginID))
		}
	}
	byPlugin := map[string][]engine.VolumeInfo{}
	for _, v := range vols {
		if v.Provider == hostpath.PluginName {
			byPlugin[v.PluginID] = append(byPlugin[v.PluginID], v)
		}
	}
	if len(byPlugin) == 0 {
		return nil, notes, nil
	}
	specs, err := e.PluginSpecs(ctx)
	if err != nil {
		return nil, notes, err
	}
	infos, err := e.Plugins(ctx)
	if err != nil {
		return nil, notes, err
	}
	ids := make([]string, 0, len(byPlugin))
	for id := range byPlugin {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if base.Root != "" && len(ids) > 1 {
		// One --plugin-root for two of volctl's own plugins, each serving its own root: the
		// second's job would serve the first's root under its ID, its own volumes NOT_FOUND
		// there, and the export said nothing (TestExportNomadPluginRootIsNotGivenToTwoHostpathPlugins).
		return nil, notes, usageError("export nomad: --plugin-root %s would be the root of every hostpath plugin's job of this export, and it has %d (%s), each serving its own: "+
			"export each plugin's volumes on their own, each with its --plugin-root (or pass --no-plugin-job)", shellquote.Arg(base.Root), len(ids), quotedIDs(ids))
	}
	var out []exportFile
	for _, id := range ids {
		o := base
		o.PluginID = id
		// Nomad's plugin serves the volumes of its own region: the one their marks record.
		if o.Region, err = handoverRegion(byPlugin[id]); err != nil {
			return nil, notes, fmt.Errorf("plugin %q %w; a plugin's job runs in one region", id, err)
		}
		var args []string
		execd := false
		for _, s := range specs {
			if s.ID == id && s.Exec != nil {
				args, execd = s.Exec.Args, true
			}
		}
		var info *engine.PluginInfo
		for i := range infos {
			if infos[i].ID == id {
				info = &infos[i]
			}
		}
		for _, name := range slices.Sorted(maps.Keys(spec.ServeFlags)) {
			if first, other, twice := spec.FlagTwice(args, name); twice {
				// Serve refuses them: the agent cannot be serving the plugin so, and which value
				// was meant is a guess.
				return nil, notes, fmt.Errorf("plugin %q: its exec block gives %s twice, as %q and %q, which `volctl plugin serve` refuses (it exits at every start): "+
					"give it once in the plugin's spec and register it again (or pass --no-plugin-job)", id, name, first, other)
			}
		}
		if o.Root == "" {
			o.Root = spec.FlagValue(args, "--root")
			if o.Root != "" && !filepath.IsAbs(o.Root) {
				// The agent runs the plugin in its own working directory, which nothing
				// records; written as it is, Nomad's plugin would read it from its task's.
				return nil, notes, fmt.Errorf("plugin %q: its exec block's --root %q is a relative path, which the agent reads from its own working directory: "+
					"give the directory the plugin serves, absolute, with --plugin-root (or pass --no-plugin-job)", id, o.Root)
			}
		}
		if o.NodeID != "" {
			// Given: the volumes' topology must allow it, or Nomad places them on no node the
			// plugin job serves; exported as given, exit 0 and nothing said
			// (TestExportNomadNodeIDOtherThanTheVolumesTopologyIsNotSilent). The topology its
			// volume file requires: a registered volume's is its spec's, which was not looked at
			// (TestExportNomadNodeIDOtherThanARegisteredVolumesTopologyIsNotSilent); any one of its
			// topologies will do, as Nomad places a volume so (before, every one had to name the
			// node: TestExportNomadNodeIDOfOneOfARegisteredVolumesTopologiesIsTaken).
			for _, v := range byPlugin[id] {
				if allowed := hostpathNodes(v); allowed != nil && !allowed[o.NodeID] {
					names := slices.Sorted(maps.Keys(allowed))
					return nil, notes, usageError("plugin %q job: --node-id %q, but volume %q's topology names node %s, which its volume file requires: "+
						"Nomad would place it on no node the plugin job serves; give --node-id %s, or leave that volume out of this export (or pass --no-plugin-job)",
						id, o.NodeID, v.ID, quotedOr(names), shellquote.Arg(names[0]))
				}
			}
		}
		if o.NodeID == "" {
			// The node every volume's topology allows: the plugin's own where it is one of them.
			var common map[string]bool // nil: any node so far
			for _, v := range byPlugin[id] {
				allowed := hostpathNodes(v)
				if allowed == nil {
					continue
				}
				if common == nil {
					common = allowed
					continue
				}
				maps.DeleteFunc(common, func(n string, _ bool) bool { return !allowed[n] })
			}
			switch {
			case common == nil:
				if info != nil {
					o.NodeID = info.NodeID
				}
			case info != nil && common[info.NodeID]:
				o.NodeID = info.NodeID
			case len(common) == 1:
				for n := range common {
					o.NodeID = n
				}
			case len(common) == 0:
				return nil, notes, fmt.Errorf("plugin %q: its volumes' topologies allow no one node together; export them per node with --node-id", id)
			default:
				return nil, notes, usageError("plugin %q: its volumes' topologies allow nodes %s: give the node the plugin job serves with --node-id", id, quotedOr(slices.Sorted(maps.Keys(common))))
			}
			if err := spec.ValidateNodeID("--node-id", o.NodeID); err != nil {
				return nil, notes, fmt.Errorf("plugin %q job: `volctl plugin serve hostpath` would refuse the node its volumes' topology names (or the plugin reports): %v; give the node's ID with --node-id, or pass --no-plugin-job", id, err)
			}
			if err := echoedIntoNodeID(ctx, e, id, o.NodeID); err != nil {
				return nil, notes, err
			}
		}
		o.ExtraArgs = append(o.ExtraArgs, servedAs(args, execd, info)...)
		if o.VolctlPath == "" {
			if exe, err := os.Executable(); err == nil {
				o.VolctlPath = exe
			}
		}
		data, err := nomad.PluginJob(o)
		if errors.Is(err, nomad.ErrFlagNotNFC) {
			return nil, notes, withCode(ExitUsage, err)
		}
		if err != nil {
			return nil, notes, fmt.Errorf("%w (or pass --no-plugin-job)", err)
		}
		out = append(out, exportFile{name: "plugin-" + id + ".nomad.hcl", what: fmt.Sprintf("plugin %q", id), data: data, mode: 0o644,
			job: nomadJob{o.Namespace, nomad.JobID("plugin-" + id)}})
	}
	return out, notes, nil
}

// servedAs gives the flags of `volctl plugin serve hostpath` that change what the plugin
// offers, --enable-attach and --max-volumes, as the plugin is served: from its exec block's
// arguments (execd), which are what the agent runs, else from its fingerprint (info), what the
// process serving its socket answered. Before, a plugin registered by its socket was exported
// without them whatever it offered: Nomad's plugin then attached nothing and took any number
// of volumes on the node (TestExportNomadPluginJobServesAsThePluginWasServed).
func servedAs(args []string, execd bool, info *engine.PluginInfo) []string {
	var out []string
	if execd {
		if boolFlag(args, "--enable-attach") {
			out = append(out, "--enable-attach")
		}
		if n := spec.FlagValue(args, "--max-volumes"); n != "" {
			out = append(out, "--max-volumes", n)
		}
		return out
	}
	if info == nil {
		return nil
	}
	if slices.Contains(info.Capabilities.Controller, "PUBLISH_UNPUBLISH_VOLUME") {
		out = append(out, "--enable-attach")
	}
	if info.MaxVolumes > 0 {
		out = append(out, "--max-volumes", strconv.FormatInt(info.MaxVolumes, 10))
	}
	return out
}

// boolFlag reports whether args set the boolean flag name, as serve's flag parsing reads
// them (spec.FlagValue): --name, or --name=VALUE whose VALUE is true.
func boolFlag(args []string, name string) bool {
	set, _ := strconv.ParseBool(spec.FlagValue(args, name))
	return set
}

func orUnknown(s string) string {
	if s == "" {
		return "driver unknown: never fingerprinted"
	}
	return s
}

// exportErrors are the errors of diags, what volctl reads of a file export nomad wrote, but
// the placeholders it wrote on purpose when placeholders (without --include-secrets): a
// secret value or mount flag of spec.Redacted, which volctl refuses to read as the value
// (spec.PlaceholderSummary) until the file is edited; and, with --include-secrets, those where
// the volume is recorded with the placeholder itself (recorded, recordedPlaceholders): the file
// holds what the volume holds, which export notes (placeholderNotes), and no volctl bug.
func exportErrors(diags hcl.Diagnostics, placeholders bool, recorded map[spec.PlaceholderAt]bool) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		if d.Summary == spec.PlaceholderSummary {
			if at, _ := d.Extra.(spec.PlaceholderAt); placeholders || recorded[at] {
				continue
			}
		}
		out = append(out, d)
	}
	return out
}

// recordedPlaceholders are the secrets and mount flags info is recorded with as spec.Redacted
// itself, named as the decoder's placeholder error names them: what an older volctl recorded
// when it read back an export's placeholders as values.
func recordedPlaceholders(info engine.VolumeInfo) map[spec.PlaceholderAt]bool {
	out := map[spec.PlaceholderAt]bool{}
	for k, v := range info.Secrets {
		if spec.IsPlaceholder(v) {
			out[spec.PlaceholderWhat(k, 0)] = true
		}
	}
	if info.MountOptions != nil {
		for i, f := range info.MountOptions.MountFlags {
			if spec.IsPlaceholder(f) {
				out[spec.PlaceholderWhat("", i)] = true
			}
		}
	}
	return out
}

// placeholderNotes name, for volume id, what it is recorded with as the placeholder
// (recordedPlaceholders) and what to do: its plugin is given that as a credential or a mount
// flag, and volctl reads no file holding it back.
func placeholderNotes(id string, recorded map[spec.PlaceholderAt]bool) []string {
	var notes []string
	for _, at := range slices.Sorted(maps.Keys(recorded)) {
		notes = append(notes, fmt.Sprintf("volume %q: its %s is recorded as %s, the placeholder of an export read back as a value (before volctl refused it): "+
			"its plugin is given that, and volctl reads the file back only once it holds the real value; write it into the volume's spec and run "+
			"`volctl volume register` of it to record it", id, at, spec.Redacted))
	}
	return notes
}

// notExportable says why volume v cannot be written as a volume Nomad registers: its create or
// delete is not finished (its State, engine.VolumeSummary's words). "" when it can.
func notExportable(v engine.VolumeInfo) string {
	switch v.State {
	case "creating":
		return "is being created, or its create was cut short: it has no storage ID (external_id) for Nomad to register yet; `volctl reconcile` (or the same `volctl volume create` again) finishes the create, then export it"
	case "deleting":
		return "is being deleted, or its delete was cut short: there is nothing to hand over; `volctl reconcile` finishes the delete"
	}
	return ""
}

// groupVolumeIDs are the IDs of the volumes group g's request r names: its source, or for a
// per_alloc one the source of each alloc (SOURCE[0] to SOURCE[count-1]), as the engine claims
// them.
func groupVolumeIDs(g spec.Group, r spec.VolumeRequest) []string {
	if !r.PerAlloc {
		return []string{r.Source}
	}
	ids := make([]string, 0, max(g.Count, 1))
	for i := 0; i < max(g.Count, 1); i++ {
		ids = append(ids, spec.AllocName(r.Source, i))
	}
	return ids
}

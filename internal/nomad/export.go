// Package nomad is volctl's bridge to a Nomad cluster: it writes what volctl knows as files Nomad
// accepts unchanged (volume register specs, jobs, the plugin's system job), and talks to Nomad's
// HTTP API through github.com/hashicorp/nomad/api for `volctl nomad register` and `status`.
// Only the nomad and export commands import it.
package nomad

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/text/unicode/norm"

	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

// SecretPlaceholder stands in for a secret value (and a mount flag) in an exported file written
// without --include-secrets.
const SecretPlaceholder = spec.Redacted

// VolumeFile renders a volume as a Nomad register spec (`nomad volume register FILE`), which
// volctl's own parser reads back with the same values. v is the volume as volctl has it; the
// caller puts the plugin's accessible topology in TopologyRequest.Required and the capacity in
// CapacityMin. Without includeSecrets, secret values and mount flags are placeholders, and the
// returned notes say which. A volume with two keys in one map that the file would write as one
// is refused (checkVolumeKeys), and so is one with a string the file would hold changed: the
// writer writes every string in Unicode normal form C, as HCL2 reads strings back, and a value
// or key not in it (a plugin's ID or context can be anything) would reach Nomad as another
// string. `volctl nomad register` sends such a volume through Nomad's API unchanged.
func VolumeFile(v spec.Volume, includeSecrets bool) ([]byte, []string, error) {
	if err := checkVolumeKeys(v); err != nil {
		return nil, nil, err
	}
	b := &hclBody{}
	var notes []string
	// The way to hand it over is volctl's: registered with nomad volume register, it has no
	// handover mark, and volctl would go on claiming, detaching and deleting it. An ID with a
	// control character (none a spec takes) is not written raw into the comment.
	register := shellquote.Command("volctl nomad register", v.ID)
	if strings.ContainsFunc(v.ID, unicode.IsControl) {
		register = "volctl nomad register with the ID above"
	}
	b.comment(fmt.Sprintf("Volume %q, exported by volctl. Hand it over with: %s\n"+
		"(it registers this volume in Nomad and keeps volctl from claiming, detaching or deleting it;\n"+
		"nomad volume register FILE alone leaves volctl free to, the volume held by both at once)",
		v.ID, register))
	set := func(name string, val string) {
		if val != "" {
			b.attr(name, hclStr(val))
		}
	}
	set("id", v.ID)
	if v.Namespace != spec.DefaultNamespace {
		// The default one is left to the request, as in the job file of a group using the
		// volume: Nomad keeps a namespace the file names whatever NOMAD_NAMESPACE says, and
		// would register the volume in the default namespace and run the job in
		// NOMAD_NAMESPACE's, where `volctl nomad register` registers it (namespaceFor).
		set("namespace", v.Namespace)
	}
	set("name", v.Name)
	b.attr("type", hclStr("csi"))
	set("plugin_id", v.PluginID)
	set("external_id", v.ExternalID)
	// A size past the largest Nomad reads (a plugin may answer a capacity of 2^63-1 bytes for
	// storage of no fixed size) is written as that largest: Nomad wraps a larger one to a negative
	// capacity, and the file's own check refused the export as volctl's bug, all of --all's with
	// it (TestExportOfAVolumeAtTheLargestCapacity). capacity_min is a floor the volume still
	// meets; capacity_max a ceiling Nomad cannot hold higher.
	capMin, capMax := min(v.CapacityMin, spec.MaxNomadSize), min(v.CapacityMax, spec.MaxNomadSize)
	if capMin != v.CapacityMin || capMax != v.CapacityMax {
		notes = append(notes, fmt.Sprintf("volume %q: its capacity, %d bytes, is past the largest Nomad reads: written as %d bytes, the largest it does", v.ID, max(v.CapacityMin, v.CapacityMax), int64(spec.MaxNomadSize)))
	}
	if capMin > 0 {
		set("capacity_min", spec.FormatSize(capMin))
	}
	if capMax > 0 && capMax >= capMin {
		set("capacity_max", spec.FormatSize(capMax))
	}
	for _, c := range v.Capabilities {
		b.blank()
		cb := b.block("capability")
		cb.attr("access_mode", hclStr(string(c.AccessMode)))
		cb.attr("attachment_mode", hclStr(string(c.AttachmentMode)))
	}
	if mo := v.MountOptions; mo != nil && (mo.FSType != "" || len(mo.MountFlags) > 0) {
		b.blank()
		if n := writeMountOptions(b, mo, includeSecrets); n > 0 {
			notes = append(notes, fmt.Sprintf("volume %q: %d mount flag(s) written as %s (they may carry credentials; use --include-secrets to write them)", v.ID, n, SecretPlaceholder))
		}
	}
	if tr := v.TopologyRequest; tr != nil && (len(tr.Required) > 0 || len(tr.Preferred) > 0) {
		b.blank()
		tb := b.block("topology_request")
		for _, part := range []struct {
			name  string
			topos []spec.Topology
		}{{"required", tr.Required}, {"preferred", tr.Preferred}} {
			if len(part.topos) == 0 {
				continue
			}
			pb := tb.block(part.name)
			for _, t := range part.topos {
				pb.block("topology").attr("segments", hclStringMap(t.Segments))
			}
		}
	}
	if len(v.Secrets) > 0 {
		b.blank()
		secrets := v.Secrets.Plain()
		if !includeSecrets {
			b.comment(fmt.Sprintf("Secret values are placeholders (%s): replace them, or export with --include-secrets.", SecretPlaceholder))
			secrets = map[string]string{}
			for k := range v.Secrets {
				secrets[k] = SecretPlaceholder
			}
			notes = append(notes, fmt.Sprintf("volume %q: %d secret(s) written as %s (use --include-secrets to write them)", v.ID, len(v.Secrets), SecretPlaceholder))
		}
		b.attr("secrets", hclStringMap(secrets))
	}
	if len(v.Parameters) > 0 {
		b.attr("parameters", hclStringMap(v.Parameters))
	}
	if len(v.Context) > 0 {
		b.comment("The plugin's volume context, which NodeStageVolume and NodePublishVolume need.")
		b.attr("context", hclStringMap(v.Context))
	}
	if p := b.changed(); p != "" {
		return nil, nil, fmt.Errorf("volume %q: %s is not in Unicode normal form C, which an exported file writes every string in: Nomad would get another string; `volctl nomad register` sends the volume through Nomad's API unchanged", v.ID, p)
	}
	out := b.bytesForHCL1()
	if why := CapabilitiesRefused(v.Capabilities); why != "" {
		// Said with the line of the file's first block-device capability, which the user
		// edits to keep the capability the jobs use.
		line := 1 + bytes.Count(out[:bytes.Index(out, []byte(`attachment_mode = "block-device"`))], []byte("\n"))
		// The file is not what `volctl nomad register` (its first line) sends: volctl's record
		// is, so the edit reaches Nomad through the record, registered again with that block
		// alone (as `volctl nomad register`'s own warning says). Before, the note said to edit
		// the file only, which changed nothing the handover sent
		// (TestCapabilitiesNoteOfTheExportSaysHowTheEditReachesTheHandover).
		// A file of placeholders is refused by the register, after the deregister forgot the
		// values it stands for: the export with them comes first
		// (TestCapabilitiesNoteAdviceWorksOnAFileWithPlaceholders).
		// So is a context the caller wrote placeholders into (a value the state keeps secret,
		// which its plugin echoed there): registered, the placeholder was recorded as the
		// context, sent to the plugin at every stage and publish
		// (TestCapabilitiesNoteAdviceKeepsAContextWrittenWithAPlaceholder).
		contextHidden := slices.ContainsFunc(slices.Collect(maps.Values(v.Context)), func(s string) bool { return strings.Contains(s, SecretPlaceholder) })
		first := ""
		if !includeSecrets && (len(v.Secrets) > 0 || v.MountOptions != nil && len(v.MountOptions.MountFlags) > 0 || contextHidden) {
			first = "export it again with --include-secrets (this file's placeholders are refused by a register, and the deregister forgets the values they stand for), "
		}
		notes = append(notes, fmt.Sprintf("volume %q: Nomad may refuse its file: %s; if its plugin does, hand Nomad a volume of the one capability its jobs use: %skeep in the file only that capability block (line %d is the first block-device one), "+
			"then, as `volctl nomad register` sends volctl's record and not the file, `%s` (its storage stays) and `volctl volume register` of the edited file before handing it over",
			v.ID, why, first, line, shellquote.Command("volctl volume deregister", v.ID)))
	}
	return out, notes, nil
}

// checkVolumeKeys refuses a volume with two keys in one of the maps its file holds that the
// file would write as one (sameInNFC), naming each such map and pair.
func checkVolumeKeys(v spec.Volume) error {
	check := func(name string, m map[string]string) error {
		if a, b, ok := sameInNFC(slices.Collect(maps.Keys(m))); ok {
			return fmt.Errorf("volume %q: %s has the keys %s", v.ID, name, nfcClash(a, b, "value"))
		}
		return nil
	}
	errs := []error{check("parameters", v.Parameters), check("secrets", v.Secrets), check("context", v.Context)}
	if tr := v.TopologyRequest; tr != nil {
		for i, t := range tr.Required {
			errs = append(errs, check(fmt.Sprintf("topology_request.required[%d].segments", i), t.Segments))
		}
		for i, t := range tr.Preferred {
			errs = append(errs, check(fmt.Sprintf("topology_request.preferred[%d].segments", i), t.Segments))
		}
	}
	return errors.Join(errs...)
}

// sameInNFC returns two of keys, the first such pair in byte order, that differ but are the
// same in Unicode normal form C. The writer writes every key (and label, and string) in NFC, as
// hclwrite does and as HCL2 reads a quoted string back, so such keys would become one in the
// file and one value would be lost; to volctl, CSI and a plugin they are two keys.
func sameInNFC(keys []string) (a, b string, ok bool) {
	slices.Sort(keys)
	seen := make(map[string]string, len(keys))
	for _, k := range keys {
		nfc := cty.NormalizeString(k)
		if first, dup := seen[nfc]; dup && first != k {
			return first, k, true
		}
		seen[nfc] = k
	}
	return "", "", false
}

// nfcClash words a pair sameInNFC found, escaped so that the difference shows, and what of
// theirs one would lose.
func nfcClash(a, b, what string) string {
	return fmt.Sprintf("%+q and %+q, which differ only in Unicode normalisation: the exported file writes both as %+q (NFC), "+
		"so one %s would be lost; rename one", a, b, cty.NormalizeString(a), what)
}

// writeMountOptions appends a mount_options block and returns how many mount flags it replaced
// with placeholders.
func writeMountOptions(b *hclBody, mo *spec.MountOptions, includeSecrets bool) int {
	mb := b.block("mount_options")
	if mo.FSType != "" {
		mb.attr("fs_type", hclStr(mo.FSType))
	}
	if len(mo.MountFlags) == 0 {
		return 0
	}
	flags := mo.MountFlags.Plain()
	replaced := 0
	if !includeSecrets {
		flags = make([]string, len(flags))
		for i := range flags {
			flags[i] = SecretPlaceholder
		}
		replaced = len(flags)
	}
	mb.attr("mount_flags", hclStrings(flags))
	return replaced
}

// JobOptions say how a group's tasks run in Nomad.
type JobOptions struct {
	Driver      string   // task driver; "exec" when empty
	Command     string   // config.command; "/bin/sleep" when empty
	Args        []string // config.args; ["infinity"] when Command is empty too
	Image       string   // config.image, for container drivers
	Datacenters []string // ["*"] when empty
	Namespace   string
	Region      string
	// IncludeSecrets writes the volume blocks' mount flags; otherwise they are placeholders.
	IncludeSecrets bool
}

// driversWithoutMounts are task drivers that refuse volume_mount of a CSI volume: they have no
// filesystem isolation to mount into (raw_exec, java) or are for tests (mock).
var driversWithoutMounts = []string{"raw_exec", "java", "mock", "mock_driver"}

// CheckTaskDriver refuses a driver that cannot mount CSI volumes into a task.
func CheckTaskDriver(driver string) error {
	if slices.Contains(driversWithoutMounts, driver) {
		return fmt.Errorf("task driver %q cannot mount CSI volumes (Nomad refuses volume_mount for raw_exec, java and mock tasks); use exec, docker or podman", driver)
	}
	return nil
}

// driversWithImages are the task drivers whose task config requires an image: a job without
// one is taken by `nomad job run`, and no task of it ever starts.
var driversWithImages = []string{"docker", "podman"}

// CheckTaskImage refuses a container driver's tasks without an image, and an image for a
// driver that takes none (exec's config has no image: Nomad refuses the job). Before, `export
// nomad --driver docker` wrote tasks with no image, exit 0
// (TestExportNomadContainerDriverWithoutAnImageIsRefused).
func CheckTaskImage(driver, image string) error {
	needs := slices.Contains(driversWithImages, driver)
	switch {
	case needs && image == "":
		return fmt.Errorf("task driver %q runs an image: give it with --image (the task's config.image), as its tasks cannot start without one", driver)
	case !needs && image != "" && (driver == "" || driver == "exec"):
		return fmt.Errorf("task driver %q runs no image (it runs --command on the host, isolated): --image is for docker or podman", orDefault(driver, "exec"))
	}
	return nil
}

// GroupJob renders a group as a Nomad job of the same name: its group keeps the volume blocks
// unchanged and gets one task per volume_mount, mounting the volume at the destination inside
// the task. {index} becomes ${NOMAD_ALLOC_INDEX} and {alloc} the group's alloc name. A group
// with two volume blocks whose names the file would write as one is refused (sameInNFC): the
// job's volumes are a map by name in Nomad.
func GroupJob(g spec.Group, opts JobOptions) ([]byte, []string, error) {
	driver := opts.Driver
	if driver == "" {
		driver = "exec"
	}
	if err := CheckTaskDriver(driver); err != nil {
		return nil, nil, err
	}
	names := make([]string, len(g.Volumes))
	for i, r := range g.Volumes {
		names[i] = r.Name
	}
	if a, b, ok := sameInNFC(names); ok {
		return nil, nil, fmt.Errorf("volume blocks %s", nfcClash(a, b, "block"))
	}
	var notes []string
	root := &hclBody{}
	root.comment(fmt.Sprintf("Group %q, exported by volctl as a Nomad job. Run it with: nomad job run FILE", g.Name))
	root.comment("Register the volumes it uses first (volctl nomad register, or nomad volume register).")
	jb := appendJob(root, g.Name, "service", opts.Datacenters, opts.Namespace, opts.Region)
	if id := JobID(g.Name); id != g.Name {
		notes = append(notes, fmt.Sprintf("group %q: written as Nomad job %q, named %q (Nomad refuses a job ID with a space)", g.Name, id, g.Name))
	}
	gb := jb.block("group", g.Name)
	count := g.Count
	if count < 1 {
		count = 1
	}
	gb.attr("count", hclInt(int64(count)))
	for _, r := range g.Volumes {
		gb.blank()
		vb := gb.block("volume", r.Name)
		vb.attr("type", hclStr(orDefault(r.Type, "csi")))
		vb.attr("source", hclStr(r.Source))
		vb.attr("per_alloc", hclBoolean(r.PerAlloc))
		vb.attr("read_only", hclBoolean(r.ReadOnly))
		vb.attr("access_mode", hclStr(string(r.AccessMode)))
		vb.attr("attachment_mode", hclStr(string(r.AttachmentMode)))
		if mo := r.MountOptions; mo != nil && (mo.FSType != "" || len(mo.MountFlags) > 0) {
			if n := writeMountOptions(vb, mo, opts.IncludeSecrets); n > 0 {
				notes = append(notes, fmt.Sprintf("group %q volume %q: %d mount flag(s) written as %s (use --include-secrets to write them)", g.Name, r.Name, n, SecretPlaceholder))
			}
		}
	}
	// A task is named after the volume it mounts, as Nomad takes a task's name (taskName); a
	// name a task has already, or Nomad's reserved "alloc", is numbered, past any number that
	// names a task already or another mounted volume (Nomad refuses two tasks of one name in
	// a group).
	bases := map[string]bool{}
	for _, m := range g.Mounts {
		bases[taskName(m.Volume)] = true
	}
	taken, next := map[string]bool{}, map[string]int{}
	for _, m := range g.Mounts {
		gb.blank()
		base := taskName(m.Volume)
		name := base
		if taken[name] || name == reservedTaskName {
			n := max(next[base], 2)
			for taken[fmt.Sprintf("%s-%d", base, n)] || bases[fmt.Sprintf("%s-%d", base, n)] {
				n++
			}
			name = fmt.Sprintf("%s-%d", base, n)
			next[base] = n + 1
		}
		taken[name] = true
		tb := appendTask(gb, name, driver, opts)
		mb := tb.block("volume_mount")
		mb.attr("volume", hclStr(m.Volume))
		mb.attr("destination", hclStr(TaskDestination(g.Name, m.Destination)))
		mb.attr("read_only", hclBoolean(m.ReadOnly))
		mb.attr("propagation_mode", hclStr(orDefault(m.PropagationMode, spec.PropagationPrivate)))
	}
	if len(g.Mounts) == 0 {
		// A group whose allocs claim its volumes and mount them nowhere (volctl takes it): one
		// task mounting nothing, as Nomad claims a group's CSI volumes per alloc whatever its
		// tasks mount. Before, the group had no task, and Nomad refuses every such job
		// ("Missing tasks for task group": TestExportNomadGroupWithoutVolumeMountsHasATask).
		gb.blank()
		appendTask(gb, noMountTaskName, driver, opts)
		if len(g.Volumes) > 0 {
			notes = append(notes, fmt.Sprintf("group %q has no volume_mount: written with one task, %q, that mounts nothing (Nomad claims the group's volumes for each alloc all the same)", g.Name, noMountTaskName))
		}
	}
	flags := []flagValue{{"--command", opts.Command}, {"--image", opts.Image}, {"--driver", opts.Driver}, {"--namespace", opts.Namespace}, {"--region", opts.Region}}
	for _, a := range opts.Args {
		flags = append(flags, flagValue{"--arg", a})
	}
	for _, dc := range opts.Datacenters {
		flags = append(flags, flagValue{"--datacenter", dc})
	}
	if err := writtenAsGiven(fmt.Sprintf("group %q job", g.Name), nil, flags); err != nil {
		return nil, nil, err
	}
	return root.bytes(), notes, nil
}

// noMountTaskName is the task of a group job whose group mounts no volume.
const noMountTaskName = "main"

// appendTask writes a task named name to group block gb, running opts' command (or image) with
// driver, and returns it for its volume_mount.
func appendTask(gb *hclBody, name, driver string, opts JobOptions) *hclBody {
	tb := gb.block("task", name)
	tb.attr("driver", hclStr(driver))
	cb := tb.block("config")
	if opts.Image != "" {
		cb.attr("image", hclStr(opts.Image))
	}
	command, args := opts.Command, opts.Args
	if command == "" && opts.Image == "" {
		command = "/bin/sleep"
		if len(args) == 0 {
			args = []string{"infinity"}
		}
	}
	if command != "" {
		cb.attr("command", hclStr(command))
	}
	if len(args) > 0 {
		cb.attr("args", hclStrings(args))
	}
	return tb
}

// reservedTaskName is the task name Nomad refuses: a task's directory beside the alloc's
// own, "alloc" (Task.Validate).
const reservedTaskName = "alloc"

// taskName is the name of a task that mounts volume: the volume's name, its slashes made
// dashes, since Nomad refuses a task name with "/" or "\" (Task.Validate: it names a
// directory). volctl takes "\" in a volume block's name; before, its task was written so, and
// `nomad job run` refused the job (TestGroupJobTaskNamesAreNamesNomadTakes).
//
// The name is in NFC, as the writer writes every label: two names that differ only in their
// Unicode form ("data\\é", whose slash makes "data-é", beside "data-é" written decomposed) are
// one task name in the file, and numbered as one. Before, they were compared as written, and
// the file held two tasks "data-é", which Nomad refuses (TestTaskNamesStayUniqueAsTheFileWritesThem).
func taskName(volume string) string {
	return norm.NFC.String(strings.NewReplacer("/", "-", `\`, "-").Replace(volume))
}

// JobID is the ID of the Nomad job volctl writes as name: the name, its spaces made dashes,
// since Nomad refuses a job ID with a space (Job.Validate), which volctl takes in a group's
// name and a plugin's ID; the job keeps the name itself as its name (appendJob). Before, the
// file held `job "my web"`, and `nomad job run` refused it
// (TestJobIDsAreIDsNomadTakes).
func JobID(name string) string {
	return strings.ReplaceAll(name, " ", "-")
}

// TaskDestination turns a volume_mount destination with volctl's placeholders into Nomad's
// runtime interpolation: {index} is ${NOMAD_ALLOC_INDEX}, {alloc} the alloc's name as volctl
// spells it, GROUP[${NOMAD_ALLOC_INDEX}].
func TaskDestination(group, dest string) string {
	dest = strings.ReplaceAll(dest, spec.PlaceholderIndex, "${NOMAD_ALLOC_INDEX}")
	return strings.ReplaceAll(dest, spec.PlaceholderAlloc, group+"[${NOMAD_ALLOC_INDEX}]")
}

// PluginJobOptions describe the system job that runs volctl's hostpath plugin under Nomad.
type PluginJobOptions struct {
	PluginID    string   // the CSI plugin ID volumes name (plugin_id)
	VolctlPath  string   // the volctl binary on the clients
	Root        string   // --root of the plugin: where the volumes' directories are
	NodeID      string   // --node-id: the node the volumes' topology names
	ExtraArgs   []string // e.g. --enable-attach, --max-volumes N
	Driver      string   // "raw_exec" when empty
	Datacenters []string
	Namespace   string
	Region      string
	// NomadNode is the name of the Nomad client (its node name, ${node.unique.name}) whose
	// host has the volumes' directories under Root: the job is constrained to it. Without
	// it the system job ran on every client, each reporting NodeID's topology over its own
	// empty root, so Nomad placed allocs, and sent controller RPCs, where the volumes are not
	// (TestExportedPluginJobRunsOnlyOnTheVolumesHost). Empty: no constraint (a caller's own).
	NomadNode string
	// NomadDataDir is the clients' data_dir. raw_exec tasks see the host's filesystem, so the
	// paths Nomad gives the plugin must be the host's: stage_publish_base_dir is set to
	// DATA_DIR/client/csi/monolith/PLUGIN_ID, where Nomad keeps that plugin's mounts.
	NomadDataDir string
}

// PluginJob renders the system job that runs `volctl plugin serve hostpath` as a csi_plugin
// monolith on the Nomad client NomadNode, the host of the volumes' directories. It passes no
// --socket: Nomad sets CSI_ENDPOINT.
func PluginJob(o PluginJobOptions) ([]byte, error) {
	driver := orDefault(o.Driver, "raw_exec")
	switch {
	case o.PluginID == "":
		return nil, fmt.Errorf("plugin job: no plugin ID")
	case o.VolctlPath == "":
		return nil, fmt.Errorf("plugin %q job: no path to the volctl binary on the clients (--volctl-path)", o.PluginID)
	case o.Root == "":
		return nil, fmt.Errorf("plugin %q job: no --root for the plugin (--plugin-root)", o.PluginID)
	case o.NodeID == "":
		return nil, fmt.Errorf("plugin %q job: no --node-id for the plugin (--node-id)", o.PluginID)
	case driver == "raw_exec" && o.NomadDataDir == "":
		return nil, fmt.Errorf("plugin %q job: raw_exec needs the Nomad clients' data_dir (--nomad-data-dir) to set stage_publish_base_dir", o.PluginID)
	}
	if err := spec.ValidateNodeID("--node-id", o.NodeID); err != nil {
		// The job would run a plugin that refuses to start, Nomad restarting it for ever.
		return nil, fmt.Errorf("plugin %q job: %w, which `volctl plugin serve hostpath` refuses", o.PluginID, err)
	}
	root := &hclBody{}
	root.comment(fmt.Sprintf("volctl's hostpath CSI plugin as plugin %q, exported by volctl. Run it with: nomad job run FILE", o.PluginID))
	root.comment("It serves the volumes under --root on the node named by --node-id, as their topology says.")
	jb := appendJob(root, "plugin-"+o.PluginID, "system", o.Datacenters, o.Namespace, o.Region)
	if o.NomadNode != "" {
		jb.comment("Only on the Nomad client of the host whose --root holds the volumes (export's --nomad-node).")
		cb := jb.block("constraint")
		cb.attr("attribute", hclStr("${node.unique.name}"))
		cb.attr("value", hclStr(o.NomadNode))
		jb.blank()
	}
	gb := jb.block("group", "plugin")
	tb := gb.block("task", "plugin")
	tb.attr("driver", hclStr(driver))
	cb := tb.block("config")
	cb.attr("command", hclStr(o.VolctlPath))
	args := []string{"plugin", "serve", "hostpath", "--root", o.Root, "--node-id", o.NodeID}
	cb.attr("args", hclStrings(append(args, o.ExtraArgs...)))
	pb := tb.block("csi_plugin")
	pb.attr("id", hclStr(o.PluginID))
	pb.attr("type", hclStr("monolith"))
	pb.attr("mount_dir", hclStr("/csi"))
	if driver == "raw_exec" {
		pb.attr("stage_publish_base_dir", hclStr(strings.TrimRight(o.NomadDataDir, "/")+"/client/csi/monolith/"+o.PluginID))
	}
	rb := tb.block("resources")
	rb.attr("cpu", hclInt(100))
	rb.attr("memory", hclInt(64))
	flags := []flagValue{{"--plugin-root", o.Root}, {"--volctl-path", o.VolctlPath}, {"--node-id", o.NodeID},
		{"--nomad-node", o.NomadNode}, {"--nomad-data-dir", o.NomadDataDir}, {"--driver", o.Driver}}
	for _, dc := range o.Datacenters {
		flags = append(flags, flagValue{"--datacenter", dc})
	}
	if err := writtenAsGiven(fmt.Sprintf("plugin %q job", o.PluginID), root, flags); err != nil {
		return nil, err
	}
	return root.bytes(), nil
}

// flagValue is a command-line flag and the value given for it, which a job file writes.
type flagValue struct{ flag, value string }

// writtenAsGiven refuses a job file (what: "plugin "hp" job") when a flag's value of flags, or
// with root set a string anywhere in root, would be written other than given (not in Unicode
// normal form C: hclBody.changed), naming the flag or where in the file it is. A --plugin-root
// given decomposed (a directory named by macOS tools) went to Nomad as the composed path,
// another directory, the plugin serving none of the volumes, "Wrote plugin" and exit 0
// (TestExportNomadPluginRootNotInNFCIsNotWrittenAsAnotherPath); VolumeFile refused it already.
// A group's own names (its volume blocks' labels) are written composed, the same throughout
// the file: only its flags name things outside it.
func writtenAsGiven(what string, root *hclBody, flags []flagValue) error {
	for _, f := range flags {
		if cty.NormalizeString(f.value) != f.value {
			// The user's flag: a usage error, refused before anything is written.
			return fmt.Errorf("%s: %s %s is %w, which an exported file writes every string in: Nomad would read another string (a path: another path, which may not exist); give it in that form",
				what, f.flag, strconv.Quote(f.value), ErrFlagNotNFC)
		}
	}
	if root == nil {
		return nil
	}
	if p := root.changed(); p != "" {
		return fmt.Errorf("%s: %s is not in Unicode normal form C, which an exported file writes every string in: Nomad would read another string (a path: another path, which may not exist); give it in that form", what, p)
	}
	return nil
}

// ErrFlagNotNFC is matched by the refusal of a flag's value that a job file would write other
// than given (writtenAsGiven): the command's usage, exit 2, as a relative --plugin-root is
// (TestExportNomadFlagNotInNFCIsAUsageError).
var ErrFlagNotNFC = errors.New("not in Unicode normal form C")

// appendJob appends a job block of type typ, its ID JobID(name) and, where that is not name
// itself, its name name, with its placement (datacenters, every one when dcs is empty;
// namespace and region when set) and returns its body, ready for the group.
func appendJob(root *hclBody, name, typ string, dcs []string, namespace, region string) *hclBody {
	jb := root.block("job", JobID(name))
	if JobID(name) != name {
		jb.attr("name", hclStr(name))
	}
	if len(dcs) == 0 {
		dcs = []string{"*"}
	}
	jb.attr("datacenters", hclStrings(dcs))
	if namespace != "" {
		jb.attr("namespace", hclStr(namespace))
	}
	if region != "" {
		jb.attr("region", hclStr(region))
	}
	jb.attr("type", hclStr(typ))
	jb.blank()
	return jb
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

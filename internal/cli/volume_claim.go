package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// VolumeClaimOptions are the inputs of `volctl volume claim`.
type VolumeClaimOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)

	VolumeID       string
	Alloc          string
	ReadOnly       bool
	AccessMode     string
	AttachmentMode string
	FSType         string
	MountFlags     []string
	Exporter       exportFlags
}

func newCmdVolumeClaim(f *Factory, runF func(*VolumeClaimOptions) error) *cobra.Command {
	opts := &VolumeClaimOptions{IO: f.IO, Engine: f.Engine}
	cmd := &cobra.Command{
		Use:   "claim VOLUME --alloc ALLOC",
		Short: "Claim a volume for an alloc and publish it; prints the target path",
		Long: `Claim a volume for an alloc (a name of your choosing, such as web-0): admit the claim under the
volume's access mode, then ControllerPublishVolume, NodeStageVolume and NodePublishVolume as the
plugin's capabilities ask, and print the target path where the volume is mounted.

Admission follows Nomad: single-node-writer allows one claim; single-node-reader-only and
multi-node-reader-only allow readers only (--read-only); multi-node-single-writer allows one
writer and any readers; multi-node-multi-writer allows any. A claim refused because another
alloc holds the volume names the holder and exits 4; so does one whose plugin's Probe, sent
before the claim is admitted, says it is not ready or fails (volctl plugin status shows its
health; a release, and a claim again of a claim held, need no probe): a Probe answered
UNAVAILABLE by the plugin itself (its storage backend out of reach) is such a failure, and so
is one the plugin holds past the short timeout (a hung or stopped process). A plugin that
cannot be reached at all (its socket missing, nothing listening on it, its process gone
before it answered) is not judged so: the claim is admitted, and the RPC that cannot reach the
plugin leaves it for volctl reconcile, exit 1, as any retryable failure. Without --access-mode and
--attachment-mode the volume's current mode is used, or its first capability that fits (a
file-system one first when --fs-type or --mount-flag is given).
--fs-type replaces the volume's fs type; --mount-flag (repeatable) replaces its mount flags (a
write claim given "ro" is warned of: it gets a mount it cannot write, as the volume's writer).
The claims of a volume share its staging (a plugin that stages mounts the file system once): a
claim asking for another fs type than a claim holding the volume exits 4 naming that claim.

Claiming again for an alloc that holds the same claim prints the same target path; one
asking for another mode, or for an --fs-type or --mount-flag the claim was not published
with, exits 4 (release it first). A read
claim found mounted read-write (an older volctl published it so) exits 4 instead, saying how
to get it read-only, and is left mounted. So does one the plugin refuses as the volume held
elsewhere (ControllerPublishVolume FAILED_PRECONDITION or ALREADY_EXISTS, NodeStageVolume
FAILED_PRECONDITION), rolled back. A claim
that fails with a final error is rolled back; one that fails with a retryable error is left
for volctl reconcile, and the command exits 1. A claim interrupted (Ctrl-C) is left where it
got to, since the plugin may still be working on the RPC cut off: volctl reconcile finishes
publishing it, and volctl volume release undoes it. On a terminal, stderr shows the step the
claim is in. Mounting needs root.`,
		Example: `  volctl volume claim db --alloc web-0
  volctl volume claim db --alloc report-1 --read-only --access-mode multi-node-single-writer
  TARGET=$(volctl volume claim db --alloc web-0 -t '{{.target_path}}')`,
		Args: lastAsFlag(1, "--alloc"),
		RunE: runOpts(opts, idArg(&opts.VolumeID), runF, volumeClaimRun),
	}
	fl := cmd.Flags()
	idVar(fl, &opts.Alloc, "alloc", "the alloc claiming the volume (required)")
	requiredFlag(cmd, "alloc", claimAllocRequired)
	fl.BoolVar(&opts.ReadOnly, "read-only", false, "claim for reading only")
	fl.StringVar(&opts.AccessMode, "access-mode", "", "access mode: "+joinModes(spec.AccessModes))
	fl.StringVar(&opts.AttachmentMode, "attachment-mode", "", "attachment mode: "+joinModes(spec.AttachmentModes))
	fl.StringVar(&opts.FSType, "fs-type", "", "filesystem type, replacing the volume's")
	fl.StringArrayVar(&opts.MountFlags, "mount-flag", nil, "a mount flag, replacing the volume's (repeatable)")
	addActingExportFlags[engine.ClaimInfo](cmd, &opts.Exporter, opts.IO)
	return cmd
}

func joinModes[T ~string](modes []T) string {
	parts := make([]string, len(modes))
	for i, m := range modes {
		parts[i] = string(m)
	}
	return strings.Join(parts, ", ")
}

const claimAllocRequired = "volume claim: --alloc is required: the name of the alloc claiming the volume, e.g. --alloc web-0"

// request checks the flags and builds the engine's claim request.
func (o *VolumeClaimOptions) request() (engine.ClaimRequest, error) {
	req := engine.ClaimRequest{VolumeID: o.VolumeID, Alloc: o.Alloc, ReadOnly: o.ReadOnly}
	if o.Alloc == "" {
		return req, usageError("%s", claimAllocRequired)
	}
	if err := spec.ValidateNewID("alloc", o.Alloc); err != nil {
		return req, usageError("volume claim: --alloc: %v", err)
	}
	if o.AccessMode != "" {
		req.AccessMode = spec.AccessMode(o.AccessMode)
		if !req.AccessMode.Valid() {
			return req, usageError("volume claim: --access-mode %q is not an access mode; valid modes: %s%s", o.AccessMode, joinModes(spec.AccessModes), didYouMean(spec.Suggest(o.AccessMode, spec.AccessModes)))
		}
	}
	if o.AttachmentMode != "" {
		req.AttachmentMode = spec.AttachmentMode(o.AttachmentMode)
		if !req.AttachmentMode.Valid() {
			return req, usageError("volume claim: --attachment-mode %q is not an attachment mode; valid modes: %s%s", o.AttachmentMode, joinModes(spec.AttachmentModes), didYouMean(spec.Suggest(o.AttachmentMode, spec.AttachmentModes)))
		}
	}
	// A value that begins with "-" is the next flag taken for it (`--fs-type "$FS"
	// --read-only` with $FS unset): no file system type nor mount flag begins so, and the claim
	// was made for writing, the fs type "--read-only" sent to the plugin
	// (TestClaimFlagValueThatIsAFlagIsRefused).
	for _, f := range append([]struct{ flag, v string }{{"--fs-type", o.FSType}}, flagValues("--mount-flag", o.MountFlags)...) {
		if strings.HasPrefix(f.v, "-") {
			// Its first word alone: a mount flag may hold a password (`-o ...,password=`
			// pasted from mount(8)), which nothing else prints
			// (TestClaimMountFlagRefusalShowsNoPasswordItHolds).
			first, _, _ := strings.Cut(f.v, " ")
			first, _, _ = strings.Cut(first, ",")
			first, _, _ = strings.Cut(first, "=")
			return req, usageError("volume claim: %s %q... begins with \"-\", a flag taken as its value (was the value left out?): no file system type or mount flag begins so (mount(8)'s -o is not written: give each option as a --mount-flag of its own)", f.flag, first)
		}
	}
	if o.FSType != "" || len(o.MountFlags) > 0 {
		if req.AttachmentMode == spec.BlockDevice {
			return req, usageError("volume claim: --fs-type and --mount-flag do not apply to a block-device claim")
		}
		for _, fl := range o.MountFlags {
			if strings.TrimSpace(fl) == "" {
				return req, usageError("volume claim: --mount-flag must not be empty")
			}
		}
		req.MountOptions = &spec.MountOptions{FSType: o.FSType, MountFlags: spec.MountFlags(o.MountFlags)}
	}
	return req, nil
}

// flagValues pairs each of a repeatable flag's values with the flag's name.
func flagValues(flag string, vs []string) []struct{ flag, v string } {
	out := make([]struct{ flag, v string }, len(vs))
	for i, v := range vs {
		out[i].flag, out[i].v = flag, v
	}
	return out
}

func volumeClaimRun(ctx context.Context, opts *VolumeClaimOptions) error {
	req, err := opts.request()
	if err != nil {
		return err
	}
	if err := checkTemplateFields[engine.ClaimInfo](&opts.Exporter); err != nil {
		return err
	}
	if !req.ReadOnly && spec.ReadOnlyFlag(opts.MountFlags) >= 0 {
		// As a spec's mount_flags with "ro" on a volume claims may write is warned of
		// (validate's "Read-only mount flag"): the flag is the user's to give, for a writer's
		// slot held with a mount nothing writes through (a backup fencing writers out), but
		// most often a slip for --read-only.
		fmt.Fprintln(opts.IO.ErrOut, "Warning: --mount-flag ro mounts the volume read-only, though this claim is for writing: the alloc gets a mount it cannot write, "+
			"and holds the volume as its writer all the same; claim with --read-only where reading is meant")
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	pctx, done := startProgress(ctx, opts.IO, opts.Exporter.Enabled())
	cl, err := e.Claim(pctx, req)
	done()
	if err != nil {
		return err
	}
	if opts.Exporter.Enabled() {
		err = afterDone(opts.Exporter.Write(ctx, opts.IO.Out, cl), "claim %q for alloc %q published at %s", cl.VolumeID, cl.Alloc, cl.TargetPath)
	} else {
		err = printDone(opts.IO.Out, cl.TargetPath+"\n", "claim %q for alloc %q published at %s", cl.VolumeID, cl.Alloc, cl.TargetPath)
	}
	if err != nil {
		// Its result unprinted, the claim stands: say how to get its path, or give it back.
		return withNext(err, claimKeptNext(cl))
	}
	return nil
}

package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// ValidateOptions are the inputs of `volctl validate`.
type ValidateOptions struct {
	IO     *iostreams.IOStreams
	Verb   spec.Verb
	Files  []string // "-" is standard input
	Export exportFlags

	// ReadFile reads a spec file (readSpecFile; tests may replace it).
	ReadFile func(string) ([]byte, error)
}

func newCmdValidate(f *Factory, runF func(*ValidateOptions) error) *cobra.Command {
	opts := &ValidateOptions{IO: f.IO, ReadFile: readSpecFile}
	var verb string
	cmd := &cobra.Command{
		Use:   "validate [--for register|create] FILE... | -",
		Short: "Validate volume, plugin and group specs",
		Long: `Validate spec files without touching any state: volume specs (Nomad's format, HCL or
JSON), plugin specs and group specs. The kind is told from the file: plugin blocks make a
plugin spec, a group block a group spec, anything else a volume spec.

Every problem in a file is reported at once, each with its file, line and column, up to 100
a file (--json: 1000 over all the files): then one more counts those not shown and points at
the first of them. Warnings
(an old spelling of an access mode, say) are shown but do not make a spec invalid. A volume or
plugin ID declared in two of the files is an error too: volume create and register and plugin
register refuse such files together.

--for checks a volume spec for one verb: register needs external_id and refuses the
create-only fields (snapshot_id, clone_id, topology_request.preferred); create needs name and
refuses external_id and context. Without --for only the rules common to both apply.

Exit status: 0 when every file is valid, 2 when any is invalid or no spec at all (binary,
UTF-16, over 1 MiB, a directory), 1 when a file cannot be read (missing, not permitted) or
when it is interrupted (Ctrl-C stops it between two diagnostics; with --json or -t nothing
is printed).`,
		Example: `  volctl validate volume.hcl
  volctl validate --for create volume.hcl plugin.hcl group.hcl
  cat volume.hcl | volctl validate -
  volctl validate --json volume.hcl`,
		Args: minimumArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch verb {
			case "":
				opts.Verb = spec.VerbAny
			case "register", "create":
				opts.Verb = spec.Verb(verb)
			default:
				return usageError("--for must be register or create, not %q", verb)
			}
			if err := checkSpecArgs(args); err != nil {
				return err
			}
			opts.Files = args
			if runF != nil {
				return runF(opts)
			}
			return validateRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&verb, "for", "", "check volume specs for one `verb`: register or create (default: the rules common to both)")
	addReadExportFlags[[]spec.JSONDiagnostic](cmd, &opts.Export, opts.IO)
	return cmd
}

// validateRun validates each file in turn. Without --json or -t, diagnostics go to stderr and
// a line per valid file to stdout; with them, one JSON array of every diagnostic goes to
// stdout (see docs/json.md).
func validateRun(ctx context.Context, opts *ValidateOptions) error {
	ios := opts.IO
	width, color := diagnosticStyle(ios)
	var all spec.DiagnosticList // bounded over all the files: the array is held until written
	invalid, unreadable := false, false
	seen, halves := declarations{}, map[string]spec.Plugin{}
	// The secrets of every file read so far: a second file's duplicate of a volume ID equal to
	// the first file's secret named it in clear (TestValidateJSONDuplicateDoesNotPrintTheFirstFilesSecret).
	var secrets, summaries []string
	for _, name := range opts.Files {
		if ctx.Err() != nil {
			return interrupted(ctx)
		}
		s, err := readSpecSource(ctx, ios, opts.ReadFile, name)
		if err != nil && ctx.Err() != nil {
			// Not a file that cannot be read: the read gave up, and says so.
			return fmt.Errorf("validate %s: %w", spec.QuoteName(s.Name), err)
		}
		if err != nil {
			fmt.Fprintf(ios.ErrOut, "Error: %s\n", escapeLines(fmt.Sprintf("validate %s: %v", spec.QuoteName(s.Name), err)))
			if ExitCode(err) == ExitUsage {
				invalid = true // read, or found, to be no spec at all (readSpecBytes): exit 2, as an invalid one
				if opts.Export.Enabled() {
					// In the array as any invalid file's errors are: before, `[]`, the array of
					// files all valid, beside exit 2 (TestValidateJSONListsAFileThatIsNoSpec).
					all.Add(s.Name, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Not a spec file", Detail: err.Error()}})
				}
			} else {
				unreadable = true
			}
			continue
		}
		// A parser of its own: a parser keeps each file it parsed, for the snippets, and
		// validate may be given any number of them.
		p := spec.NewParser()
		f, diags := p.Parse(s.Name, s.Src, opts.Verb)
		if f != nil {
			secrets = append(secrets, fileSecrets(f)...)
			diags = append(diags, exposedSecrets(s, heldSecrets(f.Volume, f.Plugins, f.Group))...)
			if d := duplicates(seen, halves, f, s.Name); len(d) > 0 {
				scrub := csi.Scrubber(secrets) // the ID it names, as the summary line
				for _, x := range d {
					x.Detail = scrub(x.Detail)
				}
				diags, f = append(diags, d...), nil
			}
		}
		if diags.HasErrors() {
			invalid = true
		}
		if opts.Export.Enabled() {
			all.Add(s.Name, diags)
			continue
		}
		dw := p.DiagnosticWriter(ios.ErrOut, width, color)
		for _, d := range spec.Shown(diags) {
			// Each is written whole; Ctrl-C stops the list between two of them.
			if ctx.Err() != nil {
				return interrupted(ctx)
			}
			if err := dw.WriteDiagnostic(d); err != nil {
				return err
			}
		}
		if f != nil {
			// Scrubbed of the file's own secrets, as every other command's output is: a volume
			// whose ID is one of its secret values (Nomad's JuiceFS demo) was printed in clear,
			// after the warning that volctl masks it (TestValidateSummaryDoesNotPrintASecretThatIsTheVolumesID).
			summaries = append(summaries, validSummary(s.Name, f, opts.Verb, len(diags)))
		}
	}
	// The valid files' lines, printed once every file is read: scrubbed then of every file's
	// secrets, a later file's too (a later file's secret that is an earlier file's volume ID
	// was printed in clear: TestValidateTextDoesNotPrintALaterFilesSecretAsAnEarlierFilesVolumeID).
	scrub := csi.Scrubber(secrets)
	for _, line := range summaries {
		fmt.Fprintln(ios.Out, scrub(line))
	}
	if opts.Export.Enabled() {
		if ctx.Err() != nil {
			return interrupted(ctx) // not the array of what was read so far
		}
		// Held until now, the array is scrubbed of every file's secrets, a later file's too.
		list, scrub := all.List(), csi.Scrubber(secrets)
		for i := range list {
			list[i].Summary, list[i].Detail = scrub(list[i].Summary), scrub(list[i].Detail)
		}
		if err := opts.Export.Write(ctx, ios.Out, list); err != nil {
			return err
		}
	}
	switch {
	case unreadable:
		return silentExit(ExitError)
	case invalid:
		return silentExit(ExitUsage)
	}
	return nil
}

// interrupted is validate's error once Ctrl-C (SIGINT, SIGTERM: the command's context) has
// ended it: exit status 1, as for any interrupted command, not 2 (no file was found invalid).
func interrupted(ctx context.Context) error {
	return fmt.Errorf("validate: interrupted before it ended: %w", context.Cause(ctx))
}

// duplicates is an error for each volume or plugin ID of f that an earlier file declared. A
// split plugin's controller half in one file and its node half in another are one plugin, as
// plugin register joins them (halves: each half seen alone, by ID); a pair that does not join
// says why, as plugin register does. Before, validate refused such a pair as one ID declared
// twice, advising another ID for a half (TestSplitPluginHalvesInTwoFilesAreOnePlugin).
func duplicates(seen declarations, halves map[string]spec.Plugin, f *spec.File, file string) hcl.Diagnostics {
	var out hcl.Diagnostics
	switch f.Kind {
	case spec.KindPlugin:
		for _, p := range f.Plugins {
			first, dup := seen.add("plugin", p.ID, file)
			other, half := halves[p.ID]
			switch {
			case !dup:
				if spec.IsSplitHalf(p.Type) {
					halves[p.ID] = *p
				}
			case half && spec.IsSplitHalf(p.Type) && p.Type != other.Type:
				delete(halves, p.ID) // joined: a third block of the ID is a duplicate
				if _, problem := spec.JoinSplit(other, *p); problem != "" {
					out = append(out, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Split plugin halves do not join",
						Detail: fmt.Sprintf("%s (%s and %s)", problem, first, file)})
				}
			default:
				out = append(out, duplicateIn("plugin", p.ID, first, file))
			}
		}
	case spec.KindVolume:
		if first, dup := seen.add("volume", f.Volume.ID, file); dup {
			out = append(out, duplicateIn("volume", f.Volume.ID, first, file))
		}
	}
	return out
}

// validSummary is the line printed for a valid file: `volume.hcl: valid volume "db"`.
func validSummary(name string, f *spec.File, verb spec.Verb, warnings int) string {
	var what string
	switch f.Kind {
	case spec.KindPlugin:
		ids := make([]string, len(f.Plugins))
		for i, p := range f.Plugins {
			ids[i] = fmt.Sprintf("%q", p.ID)
		}
		what = "plugin " + strings.Join(ids, ", ")
		if len(ids) > 1 {
			what = "plugins " + strings.Join(ids, ", ")
		}
	case spec.KindGroup:
		what = fmt.Sprintf("group %q", f.Group.Name)
	default:
		what = fmt.Sprintf("volume %q", f.Volume.ID)
		if verb != spec.VerbAny {
			what += fmt.Sprintf(" (for %s)", verb)
		}
	}
	line := fmt.Sprintf("%s: valid %s", display.Escape(name), what) // a file's name is anyone's
	switch {
	case warnings == 1:
		line += ", 1 warning"
	case warnings > 1:
		line += fmt.Sprintf(", %d warnings", warnings)
	}
	return line
}

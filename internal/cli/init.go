package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

// InitOptions are the inputs of `volctl init`.
type InitOptions struct {
	IO   *iostreams.IOStreams
	Kind spec.Kind
	File string // "-" is standard output
}

func newCmdInit(f *Factory, runF func(*InitOptions) error) *cobra.Command {
	opts := &InitOptions{IO: f.IO}
	kinds := make([]string, len(spec.Kinds))
	for i, k := range spec.Kinds {
		kinds[i] = string(k)
	}
	cmd := &cobra.Command{
		Use:   "init [volume|plugin|group] [FILE]",
		Short: "Write a commented example spec",
		Long: `Write a commented example spec of a kind (volume by default) to FILE, or to volume.hcl,
plugin.hcl or group.hcl in the current directory. The example validates as written; edit it
from there. A volume spec is named after its file: web.hcl holds volume "web" (volume.hcl,
the default, holds volume "data"). An existing file is never overwritten. With FILE "-" the
example goes to standard output. The example is HCL with comments: a FILE named .json is
refused (volctl and Nomad would read it as HCL, but other tools take a .json file for JSON).`,
		Example: `  volctl init
  volctl init plugin
  volctl init group web.hcl
  volctl init volume - | less`,
		Args:      maximumArgs(2),
		ValidArgs: kinds,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Kind = spec.KindVolume
			if len(args) > 0 {
				kind := spec.Kind(args[0])
				if !isKind(kind) {
					if len(args) == 1 && (args[0] == "-" || strings.ContainsAny(args[0], "./")) {
						return usageError("%q is not a kind (%s); to write a volume spec there: %s", args[0], strings.Join(kinds, ", "), shellquote.Command("volctl init volume", args[0]))
					}
					return usageError("unknown kind %q: want %s%s", args[0], strings.Join(kinds, ", "), didYouMean(spec.Suggest(args[0], spec.Kinds)))
				}
				opts.Kind = kind
			}
			opts.File = string(opts.Kind) + ".hcl"
			if len(args) == 2 {
				opts.File = args[1]
			}
			// The example is HCL with comments. volctl and Nomad read a .json file that starts
			// as HCL as HCL (spec.isJSON), but other tools take a .json file for JSON; the
			// refusal said volctl would read it as JSON, no longer true
			// (TestInitJSONNameRefusalDoesNotSayItWouldBeReadAsJSON).
			if ext := filepath.Ext(opts.File); strings.EqualFold(ext, ".json") {
				return usageError("init: the example is HCL with comments, not JSON, and %s is named as JSON (volctl and Nomad would read it as HCL, but other tools would not): give a .hcl name (%s)",
					opts.File, shellquote.Command("volctl init "+string(opts.Kind), strings.TrimSuffix(opts.File, ext)+".hcl"))
			}
			if runF != nil {
				return runF(opts)
			}
			return initRun(opts)
		},
	}
	return cmd
}

func isKind(k spec.Kind) bool {
	for _, v := range spec.Kinds {
		if k == v {
			return true
		}
	}
	return false
}

// initRun writes the example. It creates the file exclusively, so an existing one, even one
// appearing meanwhile, is left alone.
func initRun(opts *InitOptions) error {
	src, err := spec.ExampleFor(opts.Kind, opts.File)
	if err != nil {
		return err
	}
	if opts.File == "-" {
		_, err := opts.IO.Out.Write(src)
		return err
	}
	fh, err := os.OpenFile(opts.File, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	// A directory's name as tab completion writes it, "specs/", fails with EISDIR, not EEXIST,
	// and got the bare error (TestInitIntoAnExistingDirectoryWithATrailingSlashAdvisesAFileInIt).
	if fi, serr := os.Stat(opts.File); (errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.EISDIR)) && serr == nil && fi.IsDir() {
		// Not a file that exists: "remove it" of the user's directory of specs was advice
		// `rm -rf` follows (TestInitIntoAnExistingDirectoryDoesNotAdviseRemovingIt).
		return withCode(ExitError, fmt.Errorf("init: %s is a directory; give a file to write the example to, in it for one: `%s`",
			opts.File, shellquote.Command("volctl init", string(opts.Kind), filepath.Join(opts.File, string(opts.Kind)+".hcl"))))
	}
	if errors.Is(err, fs.ErrExist) {
		return withCode(ExitError, fmt.Errorf("init: %s already exists; not overwriting it (remove it, or give another file: volctl init %s FILE)", opts.File, opts.Kind))
	}
	if errors.Is(err, syscall.EISDIR) {
		// "nodir/": a directory's name, of a directory that is not there.
		return withCode(ExitError, fmt.Errorf("init: %s ends in \"/\", a directory's name, and no such directory exists; give a file to write the example to (`%s`)",
			opts.File, shellquote.Command("volctl init", string(opts.Kind), strings.TrimRight(opts.File, "/")+".hcl")))
	}
	if err != nil {
		return fmt.Errorf("init %s: %w", opts.Kind, err)
	}
	if _, err := fh.Write(src); err != nil {
		fh.Close()
		os.Remove(opts.File)
		return fmt.Errorf("init %s: write %s: %w", opts.Kind, opts.File, err)
	}
	if err := fh.Close(); err != nil {
		os.Remove(opts.File)
		return fmt.Errorf("init %s: write %s: %w", opts.Kind, opts.File, err)
	}
	fmt.Fprintf(opts.IO.ErrOut, "Example %s spec written to %s\n", opts.Kind, opts.File)
	return nil
}

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

// specStdinName is how standard input ("-") is named in diagnostics and messages; the spec
// package knows the name, to write "-" when it shows a command to run on the file.
const specStdinName = spec.StdinName

// specSource is one spec file named on the command line, read into memory.
type specSource struct {
	Name string // as shown in diagnostics: the path, or <stdin>
	Src  []byte
	info fs.FileInfo // the file's, after it was read; nil for standard input
}

// checkSpecArgs refuses "-" given more than once: standard input can be read only once; and
// one file given twice, by one name or two (./db.hcl, a symlink, a hard link): its volume
// was said to be "declared in both" and to need "its own ID", which no edit of the file
// could give it (TestSpecFileGivenTwiceIsNamed). A file that cannot be stat'ed is left to the
// read, which names what is wrong with it.
func checkSpecArgs(args []string) error {
	n := 0
	seen := make([]fs.FileInfo, len(args))
	for i, a := range args {
		if a == "-" {
			if n++; n > 1 {
				return usageError("standard input (-) can be given only once")
			}
			continue
		}
		fi, err := os.Stat(a)
		if err != nil {
			continue
		}
		for j, prev := range seen[:i] {
			if prev != nil && os.SameFile(prev, fi) {
				as := "by that name both times"
				if a != args[j] {
					as = "also as " + spec.QuoteName(a)
				}
				return usageError("spec file %s is given twice (%s): give it once", spec.QuoteName(args[j]), as)
			}
		}
		seen[i] = fi
	}
	return nil
}

// readSpecSources reads every named file ("-" is ios.In) before anything is parsed, so that a
// command acting on several files knows all of them are readable first. readFile is
// readSpecFile unless a test replaces it.
func readSpecSources(ctx context.Context, ios *iostreams.IOStreams, readFile func(string) ([]byte, error), names []string) ([]specSource, error) {
	out := make([]specSource, 0, len(names))
	var errs []error
	total := 0
	for i, name := range names {
		s, err := readSpecSource(ctx, ios, readFile, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", spec.QuoteName(s.Name), err))
			continue
		}
		if total += len(s.Src); total > maxSpecFilesSize {
			// The rest are not read: the command does nothing with any.
			errs = append(errs, usageError("the %d spec files hold more than %d MiB together (passed at %s, file %d), more than volctl reads in one command: give them in several commands",
				len(names), maxSpecFilesSize>>20, spec.QuoteName(s.Name), i+1))
			break
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// unreadSpecs is command's error for spec files readSpecSources could not all read: with
// several files, it says that none was acted on, the readable ones neither (a volume that
// fails later does not stop the others, and a reader must not take this for that).
func unreadSpecs(command, done string, files []string, err error) error {
	if len(files) > 1 && !errors.Is(err, errSpecReadInterrupted) {
		return fmt.Errorf("%s: %w; nothing was %s", command, err, done)
	}
	return fmt.Errorf("%s: %w", command, err)
}

// readSpecSource reads one named file, "-" being standard input (ios.In); readFile is
// readSpecFile when nil. The source is named even when reading fails, and the error is then the
// bare cause, for the caller to say which file in its own words.
func readSpecSource(ctx context.Context, ios *iostreams.IOStreams, readFile func(string) ([]byte, error), name string) (specSource, error) {
	if readFile == nil {
		readFile = readSpecFile
	}
	s := specSource{Name: name}
	if name == "-" {
		s.Name = specStdinName
		if ios.IsStdinTTY() && ios.IsStderrTTY() {
			// "-" typed at a terminal: volctl waits for the spec with the cursor on an empty
			// line, which reads as a hang to whoever meant a file (TestStdinAtATerminalSaysItIsRead).
			fmt.Fprintln(ios.ErrOut, stdinAtTerminal)
		}
	}
	src, err := readInterruptibly(ctx, func() ([]byte, error) {
		if name == "-" {
			b, err := readSpecBytes(ios.In)
			if errors.Is(err, syscall.EISDIR) {
				// Standard input a directory (`- < specs/`) is refused as the path is, a usage
				// error: it was exit 1, a runtime error (TestStdinThatIsADirectoryIsAUsageError).
				err = usageError("is a directory")
			}
			return b, err
		}
		return readFile(name)
	})
	s.Src = src
	if err == nil {
		err = checkSpecText(s.Src)
	}
	if err == nil && name != "-" {
		s.info, _ = os.Stat(name) // for exposedSecrets; a file gone since is not warned of
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the caller names the file
	}
	return s, err
}

// stdinAtTerminal is what a command reading a spec from standard input says first when that is a
// terminal: how to end the spec and how to give up.
const stdinAtTerminal = "Reading the spec from standard input: type or paste it, then press Ctrl-D on a line of its own (Ctrl-C gives up; give a file's path instead of - to read a file)"

// errSpecReadInterrupted is a spec read given up on when the command's context ends: main
// cancels it at SIGINT or SIGTERM.
var errSpecReadInterrupted = errors.New("interrupted while waiting for it to be written (standard input, or a named pipe); nothing was done")

// readInterruptibly runs read, which may block for good (standard input nobody closes, a named
// pipe nobody writes), and gives up on it when ctx ends (Ctrl-C, SIGTERM: main's
// signal.NotifyContext); the abandoned read ends with the process.
func readInterruptibly(ctx context.Context, read func() ([]byte, error)) ([]byte, error) {
	type result struct {
		src []byte
		err error
	}
	done := make(chan result, 1)
	crash.Go(func() {
		src, err := read()
		done <- result{src, err}
	})
	select {
	case r := <-done:
		return r.src, r.err
	case <-ctx.Done():
		return nil, errSpecReadInterrupted
	}
}

// maxSpecSize bounds what is read as one spec file: Nomad's specs are a few KiB, and reading
// /dev/zero or a stray disk image must end with an error, not with the memory exhausted.
const maxSpecSize = 1 << 20

// readSpecFile reads a regular file of at most maxSpecSize bytes.
func readSpecFile(name string) ([]byte, error) {
	f, err := openReadable(name, "a spec file")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if err := notReadable(fi, "a spec file"); err != nil {
		return nil, err
	}
	return readSpecBytes(f)
}

// openReadable opens name to be read whole (what, "a spec file"). A Unix socket cannot be
// opened (ENXIO, "no such device or address", which reads as a path missing): it is named as
// what it is, a usage error as notReadable's.
func openReadable(name, what string) (*os.File, error) {
	f, err := os.Open(name)
	if errors.Is(err, syscall.ENXIO) {
		if fi, serr := os.Stat(name); serr == nil && fi.Mode().Type()&fs.ModeSocket != 0 {
			return nil, usageError("is a socket, not %s", what)
		}
	}
	return f, err
}

// notReadable refuses, as a usage error, a file opened to be read whole that is no file of
// text (what, "a spec file"): a directory, a device (/dev/zero is endless, /dev/null empty) or
// a socket. A regular file and a pipe (standard input, a named pipe, the shell's <(...)) pass.
func notReadable(fi fs.FileInfo, what string) error {
	switch t := fi.Mode().Type(); {
	case fi.IsDir():
		return usageError("is a directory")
	case t&fs.ModeDevice != 0:
		return usageError("is a device, not %s", what)
	case t&fs.ModeSocket != 0:
		return usageError("is a socket, not %s", what)
	}
	return nil
}

// maxSpecFilesSize bounds what one command reads of its spec files together: each is
// bounded (maxSpecSize), but `volctl register specs/*` over a directory of logs read every one
// and held it, and the parser a copy: 300 files of 1 MiB took 1.7 GB and five minutes to be
// refused. 32 MiB is thousands of Nomad specs, which are a few KiB each.
const maxSpecFilesSize = 32 << 20

// readSpecBytes reads r to its end, refusing more than maxSpecSize bytes.
//
// What is refused here and in readSpecFile and checkSpecText for what the file is (too large,
// not text, not UTF-8 text, a directory, a device, a socket) is a usage error, exit 2, as an
// invalid spec is: a file read whole and found to be no spec was exit 1, a runtime error a
// CI script retries, while an invalid byte in it was exit 2 (TestAFileThatIsNoSpecIsAUsageError).
// A file missing or unreadable stays a runtime error.
func readSpecBytes(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSpecSize+1))
	if err == nil && len(b) > maxSpecSize {
		err = usageError("larger than %d KiB: not a spec file", maxSpecSize>>10)
	}
	return b, err
}

// checkSpecText refuses content that is not text (a NUL byte), which would otherwise be
// parsed into thousands of diagnostics, each echoing binary to the terminal. Text in UTF-16 or
// UTF-32 (Windows editors and PowerShell's `>` write UTF-16) has NULs between its ASCII
// characters: it is named as such, with what to do, rather than as binary; a NUL elsewhere is
// placed by line and column, as a diagnostic is.
func checkSpecText(src []byte) error {
	i := bytes.IndexByte(src, 0)
	if i < 0 {
		return nil
	}
	if enc := wideEncoding(src); enc != "" {
		return usageError("encoded as %s, which neither Nomad nor volctl reads: save it as UTF-8 (iconv -f %s -t UTF-8 converts it)", enc, strings.Fields(enc)[0])
	}
	line := 1 + bytes.Count(src[:i], []byte("\n"))
	col := 1 + utf8.RuneCount(src[bytes.LastIndexByte(src[:i], '\n')+1:i])
	return usageError("not a text file (a NUL byte at line %d, column %d, byte offset %d)", line, col, i)
}

// wideEncoding names the UTF-16 or UTF-32 encoding src is in, told by its byte order mark or,
// without one, by a NUL beside its first character (ASCII, as a spec's first character is);
// "" for anything else.
func wideEncoding(src []byte) string {
	switch {
	case bytes.HasPrefix(src, []byte{0xff, 0xfe, 0, 0}):
		return "UTF-32 (little-endian, byte order mark FF FE 00 00)"
	case bytes.HasPrefix(src, []byte{0, 0, 0xfe, 0xff}):
		return "UTF-32 (big-endian, byte order mark 00 00 FE FF)"
	case bytes.HasPrefix(src, []byte{0xff, 0xfe}):
		return "UTF-16 (little-endian, byte order mark FF FE)"
	case bytes.HasPrefix(src, []byte{0xfe, 0xff}):
		return "UTF-16 (big-endian, byte order mark FE FF)"
	case wideText(src, 0):
		return "UTF-16 (little-endian, no byte order mark)"
	case wideText(src, 1):
		return "UTF-16 (big-endian, no byte order mark)"
	}
	return ""
}

// wideText reports whether src reads as UTF-16 text without a byte order mark, its low bytes
// at lo (0: little-endian, 1: big-endian): its first character ASCII, and none of its first 32
// a NUL (0000, which no text holds), most of them with a zero high byte (ASCII and Latin-1, as
// a spec's names are). Told by the first two bytes alone, a tar archive of a file with a one-letter name
// ("a" and NULs), or any binary starting with a NUL and a byte under 0x80, was named
// UTF-16, with iconv to convert it (TestSpecTextRefusalSaysWhereAndWhy).
func wideText(src []byte, lo int) bool {
	n := min(len(src)/2, 32)
	if n == 0 || src[lo] == 0 || src[lo] >= 0x80 || src[1-lo] != 0 {
		return false
	}
	narrow := 0
	for i := range n {
		low, high := src[2*i+lo], src[2*i+1-lo]
		if low == 0 && high == 0 {
			return false
		}
		if high == 0 {
			narrow++
		}
	}
	return 4*narrow >= 3*n
}

// exposedSecrets is a warning for a spec file that holds secrets (held: a volume's secrets, a
// plugin's exec env; see heldSecrets) and that users other than its owner may read
// (othersMayRead; a umask of 002 gives a user's files to their private group, not to others). A spec written under the usual umask 022 is 0644,
// its secrets anyone's on the host, and nothing said so. Warned of, not refused: the secrets
// were exposed before volctl read them, and a command refused would not take them back.
func exposedSecrets(s specSource, held string) hcl.Diagnostics {
	if held == "" || s.info == nil {
		return nil
	}
	if !othersMayRead(s.info) {
		return nil
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagWarning,
		Summary:  "Secrets readable by other users",
		Detail: fmt.Sprintf("%s holds %s, and users other than its owner may read it (mode %#o): the secrets are theirs too. Make it private: %s",
			s.Name, held, uint32(s.info.Mode().Perm()), shellquote.Command("chmod 600", s.Name)),
	}}
}

// othersMayRead says whether users other than a file's owner may read it: by its other bits,
// or its group's when the group is neither root's nor this user's own.
func othersMayRead(fi fs.FileInfo) bool {
	mode := fi.Mode().Perm()
	st, ok := fi.Sys().(*syscall.Stat_t)
	return mode&0o004 != 0 || mode&0o040 != 0 && ok && st.Gid != 0 && int(st.Gid) != os.Getegid()
}

// heldSecrets says where a spec holds secrets, for exposedSecrets: "a secrets block", "mount
// flags holding a secret" (a password=, which volctl masks as a secret: a 0644 file gave it to
// every user unwarned, TestValidateWarnsOfMountFlagSecretsReadableByOthers), "a plugin's exec
// env", or "" for none.
func heldSecrets(v *spec.Volume, plugins []*spec.Plugin, g *spec.Group) string {
	if v != nil && len(v.Secrets) > 0 {
		return "a secrets block"
	}
	if v != nil && len(mountFlagSecrets(v.MountOptions)) > 0 {
		return "mount flags holding a secret"
	}
	if g != nil && slices.ContainsFunc(g.Volumes, func(r spec.VolumeRequest) bool { return len(mountFlagSecrets(r.MountOptions)) > 0 }) {
		return "mount flags holding a secret" // a group's volume's (TestValidateWarnsOfGroupMountFlagSecretsReadableByOthers)
	}
	for _, p := range plugins {
		if p.Exec != nil && len(p.Exec.Env) > 0 {
			return "a plugin's exec env"
		}
	}
	return ""
}

// diagnosticStyle is how diagnostics are rendered on stderr: wrapped at the terminal's width
// and coloured only when stderr is a terminal that allows colour.
func diagnosticStyle(ios *iostreams.IOStreams) (width uint, color bool) {
	if ios.IsStderrTTY() {
		width = uint(ios.TerminalWidth())
	}
	return width, ios.StderrColorEnabled()
}

// writeSpecDiagnostics renders diagnostics (errors and warnings) on stderr with their source
// snippets, as `volctl validate` does.
func writeSpecDiagnostics(ios *iostreams.IOStreams, p *spec.Parser, diags hcl.Diagnostics) error {
	if len(diags) == 0 {
		return nil
	}
	width, color := diagnosticStyle(ios)
	return p.WriteDiagnostics(ios.ErrOut, diags, width, color)
}

// invalidSpecs is the error of a command that refused to act because files were invalid: the
// diagnostics are on stderr already, this says what it means (exit 2). command reads like
// "volume register", done like "registered".
func invalidSpecs(command, done string, invalid, total int) error {
	what := "the spec is invalid"
	if total > 1 {
		what = fmt.Sprintf("%d of %d spec files are invalid", invalid, total)
	}
	return withCode(ExitUsage, fmt.Errorf("%s: %s; nothing was %s", command, what, done))
}

// declarations remembers which file declared each volume and plugin ID among the files of one
// command, so an ID in two files is refused as one declared twice in a file is: which of the
// two a command would act on (or keep) would depend on the order of its arguments.
type declarations map[string]string // "volume a" -> the file that declared it

// add records that file declares the ID; for an ID another file declared, it returns that
// file's name instead.
func (d declarations) add(what, id, file string) (first string, dup bool) {
	key := what + " " + id
	if first, dup = d[key]; dup {
		return first, true
	}
	d[key] = file
	return "", false
}

// duplicateIn is validate's error for an ID declared in two files: volume create and register
// and plugin register refuse such files together.
func duplicateIn(what, id, first, file string) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Duplicate " + what + " ID",
		Detail: fmt.Sprintf("The %s %q is declared in both %s and %s; volctl refuses the two files together. Give each %s its own ID.",
			what, id, first, file, what),
	}
}

// mountFlagSecrets are the secret values mount options m's flags hold (spec.MountFlagSecrets).
func mountFlagSecrets(m *spec.MountOptions) []string {
	if m == nil {
		return nil
	}
	var out []string
	for _, flag := range m.MountFlags {
		out = append(out, spec.MountFlagSecrets(flag)...)
	}
	return out
}

// fileSecrets are the secret values spec file f holds: a volume's secrets and its mount flags'
// secrets, a group's volumes' mount flags' secrets, the plugins' exec env values.
func fileSecrets(f *spec.File) []string {
	var out []string
	if f.Volume != nil {
		out = append(out, slices.Collect(maps.Values(f.Volume.Secrets.Plain()))...)
		out = append(out, mountFlagSecrets(f.Volume.MountOptions)...)
	}
	if f.Group != nil {
		for _, v := range f.Group.Volumes {
			out = append(out, mountFlagSecrets(v.MountOptions)...)
		}
	}
	for _, p := range f.Plugins {
		if p.Exec != nil {
			out = append(out, slices.Collect(maps.Values(p.Exec.Env.Plain()))...)
		}
	}
	return out
}

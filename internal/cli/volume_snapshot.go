package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

func newCmdVolumeSnapshot(f *Factory) *cobra.Command {
	return parentCmd("snapshot", "Create, list and delete volume snapshots", `Snapshots through the volume's plugin: create needs its CREATE_DELETE_SNAPSHOT controller
capability, list asks the plugin when it has LIST_SNAPSHOTS (and otherwise shows volctl's own
records, saying so). A volume spec with snapshot_id = "<snapshot ID>" creates a volume from one.`,
		newCmdVolumeSnapshotCreate(f, nil), newCmdVolumeSnapshotList(f, nil), newCmdVolumeSnapshotDelete(f, nil),
		newCmdVolumeSnapshotDeregister(f, nil))
}

// SnapshotCreateOptions are the inputs of `volctl volume snapshot create`.
type SnapshotCreateOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)

	VolumeID   string
	Name       string // the CSI name; empty derives one from the volume and the time
	Parameters []string
	Exporter   exportFlags
}

func newCmdVolumeSnapshotCreate(f *Factory, runF func(*SnapshotCreateOptions) error) *cobra.Command {
	opts := &SnapshotCreateOptions{IO: f.IO, Engine: f.Engine}
	cmd := &cobra.Command{
		Use:   "create VOLUME [NAME]",
		Short: "Snapshot a volume",
		Long: `Snapshot a volume through its plugin (CreateSnapshot) and record the snapshot.

NAME is the snapshot's CSI name, which plugins use to make CreateSnapshot idempotent: creating
again with the same NAME returns the same snapshot, and the command says it exists already:
nothing new is taken (a new snapshot needs a new NAME). A snapshot the plugin held under NAME
that volctl had no record of (forgotten, or made through another state dir) is recorded, and
the command says so, with the age the plugin gives it. Without NAME, volctl derives one from the
volume, a nonce and the current second (shaped as <the volume's CSI name>-<unix time>, the
name's hash another each time): retries within one command never make a second snapshot,
while two commands make two, even within one second. Pass NAME when a script must be
safe to re-run. NAME is at most 128 bytes (the CSI spec's limit) and holds no control character,
nor one that shows as nothing or as another (a zero width space, a bidi override, letters of
two scripts), as a volume's ID may not. --parameter KEY=VALUE (repeatable) is passed to the plugin as is.

volctl records the snapshot (name, volume, plugin) before asking the plugin, so a create cut
short (a crash, a plugin that stopped answering) leaves a snapshot listed as pending: volctl
reconcile finishes it, and volctl volume snapshot delete PLUGIN NAME removes it.

Prints the snapshot's ID, which a volume spec's snapshot_id and volctl volume snapshot delete
take. Exits 2 when the plugin cannot snapshot (no CREATE_DELETE_SNAPSHOT).`,
		Example: `  volctl volume snapshot create db
  volctl volume snapshot create db db-before-upgrade --parameter type=full --json`,
		Args: rangeArgs(1, 2),
		RunE: runOpts(opts, func(args []string) {
			opts.VolumeID = typedID(args[0])
			if len(args) == 2 {
				opts.Name = args[1]
			}
		}, runF, snapshotCreateRun),
	}
	cmd.Flags().StringArrayVar(&opts.Parameters, "parameter", nil, "a parameter for the plugin, KEY=VALUE (repeatable)")
	addActingExportFlags[snapshotCreated](cmd, &opts.Exporter, opts.IO)
	return cmd
}

func snapshotCreateRun(ctx context.Context, opts *SnapshotCreateOptions) error {
	params, err := parseParameters(opts.Parameters)
	if err != nil {
		return err
	}
	if opts.Name != "" {
		// The name is sent to the plugin and names the snapshot while it is pending: held to
		// the CSI spec's limits and to what reads as itself, as a volume's name and ID are.
		if err := spec.ValidateNewName("snapshot NAME", opts.Name); err != nil {
			return usageError("snapshot create: %v", err)
		}
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	pctx, done := startProgress(ctx, opts.IO, opts.Exporter.Enabled())
	s, outcome, err := e.CreateSnapshotOutcome(pctx, opts.VolumeID, opts.Name, params)
	done()
	if err != nil {
		return err
	}
	if err := redactOutput(ctx, e, nil, &s); err != nil {
		return fmt.Errorf("snapshot create: %w", err)
	}
	did, verb, more := "created", "created", ""
	word := "created" // --json's outcome: snapshotCreated
	now := time.Now()
	switch {
	case outcome == engine.Unchanged:
		word = "exists"
		// The plugin answered with the snapshot this NAME made before: a nightly script that
		// passes one fixed NAME was told "created" each night of the first night's snapshot.
		did, verb, more = "exists already: nothing new was taken (another NAME takes a new snapshot)", "exists already",
			": nothing new was taken; another NAME takes a new snapshot"
		if params != nil && !maps.Equal(params, s.Parameters) {
			more += " (this one keeps the parameters it was taken with, not --parameter's)"
		}
	case outcome == engine.Adopted:
		// Not recorded, but dated by the plugin before the request: it held a snapshot under
		// the NAME, which volctl forgot (snapshot deregister) or never knew (another state
		// dir), and answered with it.
		more = fmt.Sprintf(": the plugin answered with a snapshot it held under this NAME, which it dates %s ago, before this create", age(now, s.CreatedAt))
		did, verb, word = "recorded"+more, "recorded", "recorded"
	}
	if opts.Exporter.Enabled() {
		return afterDone(opts.Exporter.Write(ctx, opts.IO.Out, snapshotCreated{s, word}), "snapshot %q (ID %q) of volume %q %s", s.Name, s.ID, s.SourceVolumeID, did)
	}
	line := fmt.Sprintf("Snapshot %s of volume %q %s (name %q, %s", shownQ(s.ID), s.SourceVolumeID, verb, s.Name, sizeOrUnknown(s.SizeBytes))
	if outcome == engine.Unchanged && !s.CreatedAt.IsZero() {
		line += ", taken " + age(now, s.CreatedAt) + " ago"
	}
	if !s.ReadyToUse {
		line += ", not ready to use yet"
	}
	line += ")" + more
	// Unprinted, it exited 0 (a reader gone) or 1 saying only that stdout failed (a full disk):
	// TestActingCommandsSayWhatTheyDidWhenTheirResultIsLost.
	return printDone(opts.IO.Out, line+"\n", "snapshot %q (ID %q) of volume %q %s", s.Name, s.ID, s.SourceVolumeID, did)
}

// snapshotCreated is `snapshot create --json`'s object: the snapshot, as `snapshot list` shows
// it, and what the create did, as the text says it: "created", "exists" (the NAME's snapshot,
// taken before: nothing new was taken) or "recorded" (one the plugin held under the NAME, which
// volctl had no record of). Before, a script could not tell a new snapshot from last night's
// (TestSnapshotCreateJSONSaysWhetherItTookANewSnapshot).
type snapshotCreated struct {
	engine.SnapshotInfo
	Outcome string `json:"outcome"`
}

// parseParameters reads KEY=VALUE flags into a map; nil when there are none.
func parseParameters(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError("--parameter %q: want KEY=VALUE", kv)
		}
		if _, dup := out[k]; dup {
			return nil, usageError("--parameter %q: %s is given twice", kv, k)
		}
		out[k] = v
	}
	return out, nil
}

// secretFlags are --secret KEY=VALUE and --secret-file KEY=FILE, each repeatable. A value on
// the command line can be read by every user of the host (/proc/PID/cmdline) and stays in the
// shell's history; --secret-file reads it from a file (or standard input, "-") instead.
type secretFlags struct {
	Values []string // --secret KEY=VALUE
	Files  []string // --secret-file KEY=FILE
}

// add registers both flags on cmd.
func (sf *secretFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&sf.Values, "secret", nil,
		"a secret for the plugin, KEY=VALUE (repeatable; the value is on the command line: see --secret-file)")
	cmd.Flags().StringArrayVar(&sf.Files, "secret-file", nil,
		"a secret for the plugin whose value is FILE's content (one final newline dropped), KEY=FILE; - is standard input, read at a terminal without echo (repeatable)")
}

// parse reads the flags; nil when there are none. An error names the key and the file, never a
// value. A file other users may read is warned of on errOut: the secret was theirs already.
func (sf *secretFlags) parse(ctx context.Context, stdin io.Reader, errOut io.Writer) (spec.Secrets, error) {
	if len(sf.Values)+len(sf.Files) == 0 {
		return nil, nil
	}
	out := make(spec.Secrets, len(sf.Values)+len(sf.Files))
	// A value that is the placeholder export writes in place of a secret is refused, and
	// another tool's spelling of one warned of, as a spec's secret is (spec.IsPlaceholder,
	// spec.PlaceholderSpelling), naming the key, never the value: before, --secret
	// token='[REDACTED]' copied from an export was given to the plugin as the credential.
	put := func(flag, k, v string) error {
		if _, dup := out[k]; dup {
			return usageError("%s: %s is given twice", flag, k)
		}
		switch {
		case spec.IsPlaceholder(v):
			return usageError("%s %s: the value is %s, the placeholder volctl export nomad writes in place of a secret without --include-secrets: "+
				"it is not the secret, and the plugin would be given it as one; give the real value", flag, escapeLines(k), spec.Redacted)
		case spec.PlaceholderSpelling(v):
			fmt.Fprintf(errOut, "Warning: %s %s: the value reads as a placeholder that output writes in place of a hidden value, not as one: "+
				"if it was copied from such output, it is not the secret, and the plugin would be given it as one; if it is the real value, it is taken as written\n",
				flag, escapeLines(k))
		}
		out[k] = v
		return nil
	}
	for _, kv := range sf.Values {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError("--secret: want KEY=VALUE (got one without a key or \"=\")")
		}
		if err := put("--secret", k, v); err != nil {
			return nil, err
		}
	}
	stdinRead := false
	for _, kf := range sf.Files {
		k, file, ok := strings.Cut(kf, "=")
		if !ok || k == "" || file == "" {
			return nil, usageError("--secret-file %q: want KEY=FILE", kf)
		}
		if file == "-" {
			if stdinRead {
				return nil, usageError("--secret-file %s=-: standard input is read for one secret only", k)
			}
			stdinRead = true
		}
		// A named pipe nobody writes, or a standard input nobody closes, blocks the read: it
		// gives up when ctx ends (Ctrl-C, SIGTERM), which nothing else here looks at.
		var fi fs.FileInfo
		var tty *os.File
		b, err := readInterruptibly(ctx, func() (b []byte, err error) {
			if file == "-" {
				if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
					tty = f
					return nil, nil
				}
				return io.ReadAll(io.LimitReader(stdin, maxSecretFile+1))
			}
			b, fi, tty, err = readLimited(file, maxSecretFile+1)
			return b, err
		})
		if err == nil && tty != nil {
			b, err = readTyped(ctx, tty, k, errOut)
			if file != "-" {
				tty.Close()
			}
		}
		if err == nil && fi != nil && othersMayRead(fi) {
			fmt.Fprintf(errOut, "Warning: --secret-file %s: %s may be read by users other than its owner (mode %#o): the secret is theirs too; make it private: %s\n",
				escapeLines(k), escapeLines(file), uint32(fi.Mode().Perm()), escapeLines(shellquote.Command("chmod 600", file)))
		}
		var pe *fs.PathError
		switch {
		case errors.Is(err, errSpecReadInterrupted):
			return nil, fmt.Errorf("--secret-file %s=%s: %w", k, file, err)
		case errors.As(err, &pe):
			return nil, usageError("--secret-file %s=%s: %v", k, file, pe.Err)
		case err != nil:
			return nil, usageError("--secret-file %s=%s: %v", k, file, err)
		case len(b) > maxSecretFile:
			return nil, usageError("--secret-file %s=%s: more than %d bytes: not a secret", k, file, maxSecretFile)
		}
		v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if v == "" && tty != nil {
			return nil, usageError("--secret-file %s=%s: nothing was typed: it is not sent as the secret; "+
				"type the value, or give `--secret %s=` for a secret meant to be empty", escapeLines(k), escapeLines(file), escapeLines(k))
		}
		if v == "" {
			// A process substitution whose command failed (`<(vault read ...)`) or a file not
			// written yet reads empty: it was sent as the secret, the plugin's refusal, if any,
			// naming no cause (TestEmptySecretFileIsRefused). An empty value meant is --secret's.
			return nil, usageError("--secret-file %s=%s: the file is empty (a command that was to write it failed?): it is not sent as the secret; "+
				"give the value in it, or `--secret %s=` for a secret meant to be empty", escapeLines(k), escapeLines(file), escapeLines(k))
		}
		if err := put("--secret-file", k, v); err != nil {
			return nil, err
		}
	}
	for _, v := range out {
		noteSecrets(v)
	}
	return out, nil
}

// maxSecretFile bounds what --secret-file reads: a secret, not a file given by mistake.
const maxSecretFile = 64 << 10

// readLimited reads at most n bytes of the file at path, and says what file it read. A
// terminal (/dev/tty, or /dev/stdin at one) is not read: it is returned open, for readTyped to
// read the secret typed there; any other device, a directory or a socket is refused, naming
// what it is.
func readLimited(path string, n int64) (b []byte, fi fs.FileInfo, tty *os.File, err error) {
	f, err := openReadable(path, "a file")
	if err != nil {
		return nil, nil, nil, err
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	if err := notReadable(fi, "a file"); err != nil {
		if term.IsTerminal(int(f.Fd())) {
			// No FileInfo: a terminal's mode (/dev/tty is 0666) is no file others may read,
			// and the warning advised `chmod 600 /dev/tty`
			// (TestNamedTerminalIsNotWarnedAsAFileOthersRead).
			return nil, nil, f, nil
		}
		f.Close()
		return nil, nil, nil, err
	}
	defer f.Close()
	b, err = io.ReadAll(io.LimitReader(f, n))
	return b, fi, nil, err
}

// readTyped reads one secret typed at the terminal tty: it says on errOut what it waits for,
// and turns the terminal's echo off while it reads one line, so that the secret is neither
// shown on the screen nor kept in its scrollback. Before, `--secret-file token=-` at a
// terminal waited without a word for an end of input (^D) and showed what was typed
// (TestSecretTypedAtATerminalIsAskedForAndNotShown). The read gives up when ctx ends, the
// terminal's echo given back first: the goroutine still reading would otherwise leave it off
// in the user's shell.
func readTyped(ctx context.Context, tty *os.File, key string, errOut io.Writer) ([]byte, error) {
	fd := int(tty.Fd())
	was, err := term.GetState(fd)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(errOut, "Secret %s (typed, not shown; Enter ends it): ", escapeLines(key))
	b, err := readInterruptibly(ctx, func() ([]byte, error) { return term.ReadPassword(fd) })
	if errors.Is(err, errSpecReadInterrupted) {
		_ = term.Restore(fd, was)
	}
	fmt.Fprintln(errOut)
	if err == nil && len(b) >= maxTypedLine {
		// The terminal's line discipline keeps no more of a line and drops the rest, saying
		// nothing: the secret read is cut short (TestSecretTypedLongerThanTheTerminalLineIsRefused).
		return nil, fmt.Errorf("%d bytes were typed, as many as a terminal keeps of one line, and any more were dropped: a secret that long is cut short; give it in a file instead", len(b))
	}
	return b, err
}

// maxTypedLine is what Linux's terminal keeps of one line read in canonical mode (its 4096-byte
// buffer, less the line's end).
const maxTypedLine = 4095

func sizeOrUnknown(n int64) string {
	if n <= 0 {
		return "size unknown"
	}
	return bytesIEC(n)
}

// SnapshotListOptions are the inputs of `volctl volume snapshot list`.
type SnapshotListOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)
	Now    func() time.Time

	PluginID string
	Secrets  secretFlags
	Exporter exportFlags
}

func newCmdVolumeSnapshotList(f *Factory, runF func(*SnapshotListOptions) error) *cobra.Command {
	opts := &SnapshotListOptions{IO: f.IO, Engine: f.Engine, Now: time.Now}
	cmd := &cobra.Command{
		Use:     "list [--plugin ID]",
		Aliases: []string{"ls"},
		Short:   "List snapshots",
		Long: `List the snapshots of every registered plugin, or of one with --plugin.

A plugin with LIST_SNAPSHOTS is asked (ListSnapshots), and its answer is merged with volctl's
records of the snapshots it created, which add their name and source volume. A snapshot
volctl created that the plugin no longer lists shows as missing. For a plugin without
LIST_SNAPSHOTS, or one that cannot be reached, or whose listing does not end (it gives a
next_token twice, or runs past 10,000 pages, 2 minutes or 64 MiB of snapshots), volctl's records are shown, none
marked missing, and a warning on stderr (and in the JSON's warnings) says so. Snapshots whose creation was cut short show as
pending, without an ID (volctl reconcile finishes them); one whose delete was cut short shows as
deleting (a restore from it is refused until the delete run again or volctl reconcile finishes
it). A snapshot volctl recorded through
another plugin ID registered on the same socket (one plugin process) is listed under both
IDs; under the other, its name says which ID records it ("recorded_by" in the JSON): delete it
through that ID. A snapshot the plugin lists with an ID (or a source volume ID) past 4 KiB is
not shown, and a warning says how many were left out.

--secret KEY=VALUE (repeatable) is sent with ListSnapshots, as nomad volume snapshot list
-secret does; --secret-file KEY=FILE reads the value from FILE (- for standard input; at a terminal, typed without being shown) and keeps
it off the command line, which every user of the host can read. Without it, volctl sends the secrets the plugin's volumes were registered or
created with, when they all carry the same ones; when they differ, it sends none and warns.`,
		Example: `  volctl volume snapshot list
  volctl volume snapshot list --plugin hostpath --json
  volctl volume snapshot list -t '{{range .snapshots}}{{.id}} {{.source_external_id}}{{"\n"}}{{end}}'`,
		Args: lastAsFlag(0, "--plugin"),
		RunE: runOpts(opts, nil, runF, snapshotListRun),
	}
	idVar(cmd.Flags(), &opts.PluginID, "plugin", "list only this plugin's snapshots")
	opts.Secrets.add(cmd)
	addReadExportFlags[engine.SnapshotList](cmd, &opts.Exporter, opts.IO)
	return cmd
}

func snapshotListRun(ctx context.Context, opts *SnapshotListOptions) error {
	secrets, err := opts.Secrets.parse(ctx, opts.IO.In, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	list, err := e.ListSnapshots(ctx, opts.PluginID, secrets)
	if err != nil {
		return err
	}
	// The secrets given here are not in the state: scrub them too.
	if err := redactOutput(ctx, e, slices.Collect(maps.Values(secrets)), &list); err != nil {
		return fmt.Errorf("snapshot list: %w", err)
	}
	for _, w := range list.Warnings {
		fmt.Fprintf(opts.IO.ErrOut, "Warning: %s\n", escapeLines(w))
	}
	if opts.Exporter.Enabled() {
		return opts.Exporter.Write(ctx, opts.IO.Out, list)
	}
	if len(list.Snapshots) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "No snapshots (volctl volume snapshot create).")
		return nil
	}
	return writeSnapshotTable(opts.IO.Out, list.Snapshots, opts.Now())
}

func writeSnapshotTable(out io.Writer, snaps []engine.SnapshotInfo, now time.Time) error {
	t := newTable(out, "PLUGIN", "SNAPSHOT ID", "VOLUME", "NAME", "SIZE", "READY", "CREATED")
	for _, s := range snaps {
		source := s.SourceVolumeID
		switch {
		case source == "" && s.SourceExternalID != "":
			source = "(" + s.SourceExternalID + ")" // a volume volctl does not know, by its external ID
		case s.SourceGone:
			source += " (gone)" // deleted or deregistered since: no volume of volctl's now
		}
		ready, id, name := strconv.FormatBool(s.ReadyToUse), s.ID, s.Name
		if s.RecordedBy != "" {
			// Another plugin ID on the plugin's socket records it, and deletes it.
			name = strings.TrimSpace(s.Name + " (recorded by " + s.RecordedBy + ")")
		}
		switch {
		case s.Deleting:
			ready = "deleting" // its delete unfinished: a restore from it is refused
		case s.Missing:
			ready = "missing"
		case s.Pending:
			ready, id = "pending", "-"
		}
		t.row(s.PluginID, id, source, name, bytesIEC(s.SizeBytes), ready, age(now, s.CreatedAt))
	}
	return t.render()
}

// SnapshotDeleteOptions are the inputs of `volctl volume snapshot delete`.
type SnapshotDeleteOptions struct {
	IO      *iostreams.IOStreams
	Engine  func(context.Context) (*engine.Engine, error)
	Confirm func(yes bool, action string) error
	Stored  func(context.Context) (*engine.Engine, error) // for the look before the question (confirmedOnPlugin); nil: none

	PluginID   string
	SnapshotID string
	Secrets    secretFlags
	Yes        bool
	ByID       bool // --id: SnapshotID is an ID, never a NAME
}

func newCmdVolumeSnapshotDelete(f *Factory, runF func(*SnapshotDeleteOptions) error) *cobra.Command {
	opts := &SnapshotDeleteOptions{IO: f.IO, Engine: f.Engine, Confirm: f.confirm, Stored: f.storedEngine}
	cmd := &cobra.Command{
		Use:   "delete PLUGIN SNAPSHOT_ID|NAME",
		Short: "Delete a snapshot",
		Long: `Delete a snapshot through its plugin (DeleteSnapshot) and forget volctl's record of it.

A snapshot the plugin does not know counts as deleted. One volctl records nothing of, by that
ID or NAME, is asked of a plugin that lists snapshots first: for one it does not have (a
mistyped name, most often, which the plugin answers OK for as for any ID) the command says "not
found, nothing deleted", exit 0, naming the recorded snapshots likely meant; where the plugin
cannot be asked, a warning says its OK proves nothing. A plugin with LIST_SNAPSHOTS that
answers OK is asked for the snapshot (ListSnapshots): while it still lists it (deleting it in
the background), volctl keeps its record and the command fails saying so; run it again later,
with the snapshot ID the error names (a pending snapshot's NAME no longer finds it). A plugin
that keeps listing it for good leaves it recorded: volctl volume snapshot deregister forgets
the record and leaves the snapshot to the storage provider's tools.
If that listing fails, or takes more than 30 s or 1,000 pages, the record is forgotten and a
warning says it could not be checked.
A snapshot listed as pending (its
creation was cut short) is named by its NAME: volctl asks the plugin for it again under that
name, the only way to learn its ID, and deletes it. A word that is one recorded snapshot's ID
and another's NAME (or a pending one's) is refused, naming both, nothing deleted: --id takes it
as the ID only.

--secret KEY=VALUE (repeatable) is sent with DeleteSnapshot, as nomad volume snapshot delete
-secret does; --secret-file KEY=FILE reads the value from FILE (- for standard input; at a terminal, typed without being shown) and keeps
it off the command line, which every user of the host can read. Without it, volctl sends the source volume's secrets, or, once the volume is
deregistered, those the snapshot was made with. A snapshot whose plugin was deregistered is
deleted through the plugin's socket as it was when the snapshot was made.

Exits 2 when the plugin cannot delete snapshots (no CREATE_DELETE_SNAPSHOT), and 4 when it
refuses with FAILED_PRECONDITION (the snapshot in use). It asks first on a
terminal (through a plugin not registered, it says so without asking) and needs --yes otherwise.`,
		Example: `  volctl volume snapshot delete hostpath snap-5f2c0e9a1b7d4c3e8f6a2b1c --yes
  volctl volume snapshot delete ebs snap-0a1b2c --secret-file token=/run/secrets/ebs-token --yes`,
		Args: exactArgs(2),
		RunE: runOpts(opts, func(args []string) {
			// The snapshot ID is the plugin's, compared as bytes: only the plugin ID is volctl's.
			opts.PluginID, opts.SnapshotID = typedID(args[0]), args[1]
		}, runF, snapshotDeleteRun),
	}
	addYesFlag(cmd, &opts.Yes, "off a terminal")
	addSnapshotIDFlag(cmd, &opts.ByID)
	opts.Secrets.add(cmd)
	return cmd
}

// addSnapshotIDFlag adds --id, which takes the SNAPSHOT_ID|NAME argument as an ID only.
func addSnapshotIDFlag(cmd *cobra.Command, byID *bool) {
	cmd.Flags().BoolVar(byID, "id", false, "take the second argument as a snapshot ID only, never a NAME (for an ID that is another snapshot's NAME)")
}

func snapshotDeleteRun(ctx context.Context, opts *SnapshotDeleteOptions) error {
	secrets, err := opts.Secrets.parse(ctx, opts.IO.In, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	action := fmt.Sprintf("Delete snapshot %q of plugin %q", opts.SnapshotID, opts.PluginID)
	e, err := confirmedOnPlugin(ctx, opts.IO, opts.Confirm, opts.Yes, action, opts.Engine, opts.Stored,
		fmt.Sprintf("delete snapshot %q of plugin %q", opts.SnapshotID, opts.PluginID), opts.PluginID)
	if err != nil {
		return err
	}
	pctx, done := startProgress(ctx, opts.IO, false)
	deleteSnapshot := e.DeleteSnapshotNoted
	if opts.ByID {
		deleteSnapshot = e.DeleteSnapshotByIDNoted
	}
	res, err := deleteSnapshot(pctx, opts.PluginID, opts.SnapshotID, secrets)
	done()
	if err != nil {
		return err
	}
	meant := " (`volctl volume snapshot list` lists the snapshots)"
	if len(res.Near) > 0 {
		// The IDs volctl records are the plugin's, which a plugin may have echoed a secret
		// into: shown as `snapshot list` shows them, scrubbed (before, whole:
		// TestSnapshotDeleteNamesNearIDsScrubbed).
		redact, err := e.Redactor(context.WithoutCancel(ctx), slices.Collect(maps.Values(secrets))...)
		if err != nil {
			return fmt.Errorf("reading the state to keep secrets out of what the delete says: %w", err)
		}
		meant = "; did you mean " + redact(quotedOr(res.Near)) + "?" + meant
	}
	switch {
	case res.Absent:
		// Nothing to delete, as a release of a claim that is not there: exit 0, saying so.
		return printDone(opts.IO.Out, fmt.Sprintf("Snapshot %q of plugin %q not found, nothing deleted: the plugin has no snapshot by that ID, and volctl records none by that ID or name (deleted already, or never made)%s\n",
			opts.SnapshotID, opts.PluginID, meant),
			"snapshot %q of plugin %q not found, nothing deleted", opts.SnapshotID, opts.PluginID)
	case res.Unchecked:
		fmt.Fprintf(opts.IO.ErrOut, "Warning: volctl records no snapshot %q of plugin %q by that ID or name, and could not ask the plugin whether it has one: "+
			"it answered DeleteSnapshot OK, as a plugin answers for a snapshot it never had too%s\n", opts.SnapshotID, opts.PluginID, meant)
	}
	return printDone(opts.IO.Out, fmt.Sprintf("Snapshot %q of plugin %q deleted\n", opts.SnapshotID, opts.PluginID),
		"snapshot %q of plugin %q deleted", opts.SnapshotID, opts.PluginID)
}

// quotedOr is IDs quoted, joined for "did you mean ...?": "a", "a" or "b", "a", "b" or "c".
func quotedOr(ids []string) string {
	if len(ids) == 1 {
		return quotedIDs(ids)
	}
	return quotedIDs(ids[:len(ids)-1]) + " or " + quotedIDs(ids[len(ids)-1:])
}

// SnapshotDeregisterOptions are the inputs of `volctl volume snapshot deregister`.
type SnapshotDeregisterOptions struct {
	IO      *iostreams.IOStreams
	Engine  func(context.Context) (*engine.Engine, error)
	Confirm func(yes bool, action string) error
	Stored  func(context.Context) (*engine.Engine, error) // for the look before the question (confirmedOnPlugin); nil: none

	PluginID   string
	SnapshotID string
	Yes        bool
	ByID       bool // --id: SnapshotID is an ID, never a NAME
}

func newCmdVolumeSnapshotDeregister(f *Factory, runF func(*SnapshotDeregisterOptions) error) *cobra.Command {
	opts := &SnapshotDeregisterOptions{IO: f.IO, Engine: f.Engine, Confirm: f.confirm, Stored: f.storedEngine}
	cmd := &cobra.Command{
		Use:   "deregister PLUGIN SNAPSHOT_ID|NAME",
		Short: "Forget a snapshot without touching its storage",
		Long: `Forget volctl's record of a snapshot: nothing is sent to the plugin, and the snapshot, if the
plugin has it, stays where it is (volctl volume snapshot delete deletes it too).

It is the way out for a snapshot the plugin keeps listing after answering DeleteSnapshot OK,
which volctl volume snapshot delete keeps recorded, failing each time. A recorded snapshot is
named by its ID or its NAME (volctl volume snapshot list shows both); a word that is one
recorded snapshot's ID and another's NAME is refused, naming both, and --id takes it as the ID
only. A snapshot listed as
pending (its creation was cut short) is named by its NAME: volctl forgets that it was being
created, and reconcile no longer finishes it, though the plugin may have made it. A delete of
the snapshot that was cut short (killed, or its answer never came), which reconcile would
finish, is forgotten too, also for a snapshot volctl does not record: restores from it are
no longer refused. While reconcile (or the agent) is sending that delete, the deregister waits
for it to end, then reports what it left.

A warning on stderr and the event log (snapshot-deregister) say the snapshot is forgotten, not
deleted, naming it: delete it with the storage provider's tools if it is not wanted. volctl
volume snapshot list shows it still, as the plugin's, while the plugin lists it. A snapshot
volctl has no record of, nor a delete of, exits 1; one deleted or deregistered here before (by
another volctl at the same moment, say) is said to be, with when, from the event log.

It asks first on a terminal (through a plugin not registered, it says so without asking) and
needs --yes otherwise.`,
		Example: `  volctl volume snapshot deregister hostpath snap-5f2c0e9a1b7d4c3e8f6a2b1c --yes`,
		Args:    exactArgs(2),
		RunE: runOpts(opts, func(args []string) {
			// The snapshot ID is the plugin's, compared as bytes: only the plugin ID is volctl's.
			opts.PluginID, opts.SnapshotID = typedID(args[0]), args[1]
		}, runF, snapshotDeregisterRun),
	}
	addYesFlag(cmd, &opts.Yes, "off a terminal")
	addSnapshotIDFlag(cmd, &opts.ByID)
	return cmd
}

func snapshotDeregisterRun(ctx context.Context, opts *SnapshotDeregisterOptions) error {
	action := fmt.Sprintf("Deregister snapshot %q of plugin %q (forget it; the plugin's snapshot, if any, is not deleted)", opts.SnapshotID, opts.PluginID)
	e, err := confirmedOnPlugin(ctx, opts.IO, opts.Confirm, opts.Yes, action, opts.Engine, opts.Stored,
		fmt.Sprintf("deregister snapshot %q of plugin %q", opts.SnapshotID, opts.PluginID), opts.PluginID)
	if err != nil {
		return err
	}
	deregister := e.DeregisterSnapshot
	if opts.ByID {
		deregister = e.DeregisterSnapshotByID
	}
	warnings, err := deregister(ctx, opts.PluginID, opts.SnapshotID)
	if len(warnings) > 0 {
		// They name the recorded ID, the plugin's, looked up from the name given: scrubbed,
		// as plugin and volume deregister scrub theirs (TestSnapshotDeregisterWarnsScrubbed).
		redact, rerr := e.Redactor(context.WithoutCancel(ctx))
		if rerr != nil {
			return fmt.Errorf("reading the state to keep secrets out of what the deregistration says: %w", rerr)
		}
		for _, w := range warnings {
			fmt.Fprintf(opts.IO.ErrOut, "Warning: %s\n", escapeLines(redact(w)))
		}
	}
	if err != nil {
		return err
	}
	return printDone(opts.IO.Out, fmt.Sprintf("Snapshot %q of plugin %q deregistered\n", opts.SnapshotID, opts.PluginID),
		"snapshot %q of plugin %q deregistered", opts.SnapshotID, opts.PluginID)
}

package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

func TestSnapshotAndExpandFlags(t *testing.T) {
	tests := []struct {
		name    string
		run     func() (any, error)
		want    any
		wantErr string
	}{
		{name: "create with name and parameters", run: func() (any, error) {
			o, err := parseOptions(t, newCmdVolumeSnapshotCreate, "db", "nightly", "--parameter", "a=1", "--parameter", "b=x=y", "--json")
			return [4]any{o.VolumeID, o.Name, o.Parameters, o.Exporter.JSON}, err
		}, want: [4]any{"db", "nightly", []string{"a=1", "b=x=y"}, true}},
		{name: "create needs a volume", run: func() (any, error) {
			return parseOptions(t, newCmdVolumeSnapshotCreate)
		}, wantErr: "accepts between 1 and 2 arg"},
		{name: "list by plugin", run: func() (any, error) {
			o, err := parseOptions(t, newCmdVolumeSnapshotList, "--plugin", "hp", "-t", "{{.}}")
			return [2]string{o.PluginID, o.Exporter.Template}, err
		}, want: [2]string{"hp", "{{.}}"}},
		{name: "delete takes plugin and ID", run: func() (any, error) {
			o, err := parseOptions(t, newCmdVolumeSnapshotDelete, "hp", "snap-1", "--yes")
			return [3]any{o.PluginID, o.SnapshotID, o.Yes}, err
		}, want: [3]any{"hp", "snap-1", true}},
		{name: "list and delete take secrets", run: func() (any, error) {
			l, err := parseOptions(t, newCmdVolumeSnapshotList, "--secret", "token=a=b", "--secret", "user=x")
			if err != nil {
				return nil, err
			}
			d, err := parseOptions(t, newCmdVolumeSnapshotDelete, "hp", "snap-1", "--secret", "token=c", "--secret-file", "user=/f", "--yes")
			return [3][]string{l.Secrets.Values, d.Secrets.Values, d.Secrets.Files}, err
		}, want: [3][]string{{"token=a=b", "user=x"}, {"token=c"}, {"user=/f"}}},
		{name: "delete needs both", run: func() (any, error) {
			return parseOptions(t, newCmdVolumeSnapshotDelete, "hp")
		}, wantErr: "accepts 2 arg"},
		{name: "expand", run: func() (any, error) {
			o, err := parseOptions(t, newCmdVolumeExpand, "db", "--size", "2GiB", "--limit", "4GiB")
			return [3]string{o.ID, o.Size, o.Limit}, err
		}, want: [3]string{"db", "2GiB", "4GiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.run()
			if expectErr(t, err, tt.wantErr, ExitUsage) {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("options = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseParameters(t *testing.T) {
	tests := []struct {
		in      []string
		want    map[string]string
		wantErr string
	}{
		{in: nil, want: nil},
		{in: []string{"a=1", "b=", "c=x=y"}, want: map[string]string{"a": "1", "b": "", "c": "x=y"}},
		{in: []string{"novalue"}, wantErr: `--parameter "novalue": want KEY=VALUE`},
		{in: []string{"=v"}, wantErr: `--parameter "=v": want KEY=VALUE`},
		{in: []string{"a=1", "a=2"}, wantErr: `--parameter "a=2": a is given twice`},
	}
	for _, tt := range tests {
		got, err := parseParameters(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr || ExitCode(err) != ExitUsage {
				t.Errorf("%q: err = %v, want %q exit 2", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// Sizes are checked before the engine is opened.
func TestVolumeExpandRunUsage(t *testing.T) {
	tests := []struct{ size, limit, wantErr string }{
		{"", "", "volume expand: --size is required"},
		{"big", "", `volume expand: --size: size "big" does not start with a number`},
		{"1GiB", "lots", `volume expand: --limit: size "lots" does not start with a number`},
	}
	for _, tt := range tests {
		ios, _, _, _ := iostreams.Test()
		opts := &VolumeExpandOptions{IO: ios, ID: "db", Size: tt.size, Limit: tt.limit,
			Engine: func(context.Context) (*engine.Engine, error) { t.Fatal("engine opened"); return nil, nil }}
		err := volumeExpandRun(context.Background(), opts)
		if err == nil || err.Error() != tt.wantErr || ExitCode(err) != ExitUsage {
			t.Errorf("size %q limit %q: err = %v, want %q exit 2", tt.size, tt.limit, err, tt.wantErr)
		}
	}
}

func TestWriteSnapshotTable(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	err := writeSnapshotTable(&buf, []engine.SnapshotInfo{
		{PluginID: "hp", ID: "snap-1", Name: "nightly", SourceVolumeID: "db", SizeBytes: 1 << 20, ReadyToUse: true, CreatedAt: now.Add(-2 * time.Hour)},
		{PluginID: "hp", ID: "snap-2", SourceExternalID: "vol-9", ReadyToUse: false},
		{PluginID: "hp", ID: "snap-3", Name: "old", SourceVolumeID: "db", Missing: true, Recorded: true},
		{PluginID: "hp2", ID: "snap-1", Name: "nightly", SourceVolumeID: "db", SizeBytes: 1 << 20, ReadyToUse: true, RecordedBy: "hp"},
		{PluginID: "hp2", ID: "snap-4", Name: "weekly", SourceVolumeID: "logs", SizeBytes: 1 << 20, ReadyToUse: true, SourceGone: true},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := `PLUGIN  SNAPSHOT ID  VOLUME       NAME                      SIZE     READY    CREATED
hp      snap-1       db           nightly                   1.0 MiB  true     2h
hp      snap-2       (vol-9)      <none>                    <none>   false    <none>
hp      snap-3       db           old                       <none>   missing  <none>
hp2     snap-1       db           nightly (recorded by hp)  1.0 MiB  true     <none>
hp2     snap-4       logs (gone)  weekly                    1.0 MiB  true     <none>
`
	if buf.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestParseSecrets(t *testing.T) {
	parse := func(values []string) (spec.Secrets, error) {
		sf := secretFlags{Values: values}
		return sf.parse(context.Background(), strings.NewReader(""), io.Discard)
	}
	got, err := parse([]string{"token=a=b", "empty="})
	if err != nil || got.Plain()["token"] != "a=b" || len(got) != 2 {
		t.Fatalf("parseSecrets = %v, %v", got.Plain(), err)
	}
	if got, err := parse(nil); got != nil || err != nil {
		t.Errorf("parseSecrets(nil) = %v, %v", got, err)
	}
	for _, bad := range [][]string{{"novalue"}, {"=x"}, {"k=1", "k=hunter2"}} {
		_, err := parse(bad)
		if expectErr(t, err, "--secret", ExitUsage); err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("parseSecrets(%q) error leaks the value: %v", bad, err)
		}
	}
}

// --secret-file KEY=FILE keeps a secret off the command line, where every user of the host can
// read it in /proc/PID/cmdline: the value is the file's content, one final newline dropped; -
// is standard input, for one secret. No error quotes a value.
func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tok, multi := write("tok", "hunter2\n"), write("multi", "line1\nline2\r\n")
	sf := secretFlags{Values: []string{"user=x"}, Files: []string{"token=" + tok, "cert=" + multi, "pin=-"}}
	got, err := sf.parse(context.Background(), strings.NewReader("1234\n"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"user": "x", "token": "hunter2", "cert": "line1\nline2", "pin": "1234"}
	if !reflect.DeepEqual(got.Plain(), want) {
		t.Errorf("secrets = %q, want %q", got.Plain(), want)
	}
	big := write("big", strings.Repeat("hunter2", maxSecretFile))
	for _, bad := range []secretFlags{
		{Files: []string{"token"}},
		{Files: []string{"=" + tok}},
		{Files: []string{"token="}},
		{Files: []string{"token=" + filepath.Join(dir, "none")}},
		{Files: []string{"token=" + big}},
		{Values: []string{"token=x"}, Files: []string{"token=" + tok}},
		{Files: []string{"a=-", "b=-"}},
	} {
		_, err := bad.parse(context.Background(), strings.NewReader("hunter2"), io.Discard)
		if expectErr(t, err, "--secret", ExitUsage); err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%+v: the error leaks the value: %v", bad, err)
		}
	}
}

// TestSecretFileReadableByOthersIsWarnedOf: --secret-file keeps a secret out of every user's
// sight on the command line; a file they may read (0644, as written under umask 022) gave it
// to them anyway, and nothing said so. A warning names the key, the file and the chmod.
func TestSecretFileReadableByOthersIsWarnedOf(t *testing.T) {
	dir := t.TempDir()
	open, private := filepath.Join(dir, "open"), filepath.Join(dir, "private")
	for p, mode := range map[string]os.FileMode{open: 0o644, private: 0o600} {
		if err := os.WriteFile(p, []byte("hunter2\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	var errOut strings.Builder
	sf := secretFlags{Files: []string{"token=" + open, "pin=" + private}}
	if _, err := sf.parse(context.Background(), strings.NewReader(""), &errOut); err != nil {
		t.Fatal(err)
	}
	got := errOut.String()
	if !strings.Contains(got, "Warning: --secret-file token: "+open+" may be read by users other than its owner (mode 0644)") ||
		!strings.Contains(got, "chmod 600 "+open) || strings.Contains(got, private) || strings.Contains(got, "hunter2") {
		t.Errorf("stderr = %q, want one warning naming token, %s and the chmod, and no secret", got, open)
	}
}

// TestSnapshotNameReadsAsItself: a snapshot's NAME is typed, sent to the plugin as a CSI name
// and names the snapshot while it is pending. One holding an escape sequence, a newline, a zero
// width space ("pre" and "pre\u200b" read alike in the list), a bidi override, a Cyrillic letter
// among Latin ones, other bytes than UTF-8 or more than the CSI spec's 128 bytes is refused as
// the usage error it is, before anything is recorded or sent; volume names and IDs already were.
func TestSnapshotNameReadsAsItself(t *testing.T) {
	ctx := context.Background()
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	_, e, eng := serveMem(t, mem)
	createSingleWriter(t, e, "db")
	for _, tt := range []struct{ name, want string }{
		{"pre\u200b", "U+200B"},
		{"\x1b]0;pwned\a", "control character U+001B"},
		{"before\nupgrade", "control character U+000A"},
		{"nightly\u202eevil", "U+202E"},
		{"nightlу", "mixes the Latin letter"},
		{"\xff\xfe", "not valid UTF-8"},
		{strings.Repeat("x", 129), "129 bytes long; the CSI spec limits a name to 128"},
		{" ", "must not be blank"},
	} {
		ios, _, out, _ := iostreams.Test()
		err := snapshotCreateRun(ctx, &SnapshotCreateOptions{IO: ios, Engine: eng, VolumeID: "db", Name: tt.name})
		if err == nil || !strings.Contains(err.Error(), tt.want) || ExitCode(err) != ExitUsage {
			t.Errorf("snapshot create db %q: err = %v (exit %d), want %q (exit %d)", tt.name, err, ExitCode(err), tt.want, ExitUsage)
		}
		if out.Len() > 0 {
			t.Errorf("snapshot create db %q printed %q", tt.name, out)
		}
	}
	if snaps, err := e.RecordedSnapshots(ctx, "mem"); err != nil || len(snaps) != 0 {
		names := make([]string, len(snaps))
		for i, s := range snaps {
			names[i] = s.Name
		}
		t.Errorf("refused names left snapshots recorded (%v): %q", err, names)
	}
	// What reads as itself is taken: a slash, non-Latin letters of one script, 128 bytes.
	for _, name := range []string{"db/before-upgrade", "数据库-备份", strings.Repeat("x", 128)} {
		ios, _, _, _ := iostreams.Test()
		if err := snapshotCreateRun(ctx, &SnapshotCreateOptions{IO: ios, Engine: eng, VolumeID: "db", Name: name}); err != nil {
			t.Errorf("snapshot create db %q: %v", name, err)
		}
	}
}

package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestCompletionShowsNoControlCharacters plays a snapshot whose ID carries an escape sequence
// and a spec whose volume name holds a carriage return and a bidi override (the CSI string
// rules let \t, \n and \r through, and no rule refuses bidi formatting). Shells show
// completions' descriptions as they get them (zsh's and fish's menus) and insert the value in
// the command line: a description is shown escaped, as a table cell is, and a value a terminal
// would act on, which could not be typed as offered anyway, is not offered. The snapshot is
// recorded as an older volctl recorded a plugin's CreateSnapshot answer with such an ID (volctl
// refuses one now: TestCreateAnsweredWithAnIDHoldingAControlCharacterIsRefused).
func TestCompletionShowsNoControlCharacters(t *testing.T) {
	ctx := context.Background()
	_, e, _ := serveMem(t, csitest.NewMemPlugin(csitest.DefaultMemConfig()))
	state := e.StateDir()
	db, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "a\rb\u202ec", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateSnapshot(ctx, "db", "good", nil); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(ctx, func(tx *store.Tx) error {
		return tx.Snapshots().Put(&store.Snapshot{PluginID: "mem", SnapshotID: "snap" + hostileText, Name: "evil",
			SourceVolumeID: "db", SourceExternalID: db.ExternalID, ReadyToUse: true})
	})
	if cerr := st.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	for _, tt := range []struct {
		args []string
		want string // a line that must be offered
	}{
		{[]string{"volume", "claim", ""}, "db\ta\\rb\\u202ec, plugin mem\n"},
		{[]string{"volume", "snapshot", "delete", "mem", ""}, "good\tsnapshot good of db\n"},
	} {
		args := tt.args
		ios, _, out, _ := iostreams.Test()
		f := NewFactory(ios)
		f.completionTimeout = time.Hour
		root := NewRootCmd(f)
		root.SetArgs(append([]string{"__complete", "--state-dir", state}, args...))
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		got := out.String()
		if i := strings.IndexFunc(got, func(r rune) bool {
			return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f || spec.IsBidiControl(r)
		}); i >= 0 {
			t.Errorf("__complete %q prints %q raw to the shell:\n%q", args, got[i], got)
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("__complete %q does not offer %q:\n%q", args, tt.want, got)
		}
	}
}

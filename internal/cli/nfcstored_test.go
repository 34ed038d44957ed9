package cli

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// storedIDs reads a table's IDs as the database holds them, bypassing volctl.
func storedIDs(t *testing.T, state, query string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(state, store.FileName)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestIDsStoredDecomposedAreNamedInNFC: a volctl from before the command line read IDs in NFC
// stored them as typed, so a volume, a plugin registered with --id and a group whose name came
// in decomposed (e U+0301, as macOS's input sends "é") are stored so, and their target and
// staging paths derive from those bytes. The command line now reads the same typing as U+00E9:
// every command must still reach them by name, not answer "not found" (or, for a release, "no
// such claim" while the claim stays published), and must not rename them.
func TestIDsStoredDecomposedAreNamedInNFC(t *testing.T) {
	requireMount(t) // it claims
	const pre, dec = "caf\u00e9", "cafe\u0301"
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	mem := csitest.NewMountingMemPlugin(t, cfg)
	socket, _ := csitest.Serve(t, csitest.WithServer(mem))
	state := filepath.Join(t.TempDir(), "state")
	e := openEngine(t, state)
	// What an older volctl did with the typed IDs: passed them to the engine as they came.
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: dec, Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: dec, Name: dec, Type: "csi", PluginID: dec,
		Capabilities: []spec.Capability{{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.RunGroup(ctx, spec.Group{Name: dec, Count: 1, Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi",
		Source: dec, AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`SELECT id FROM plugins`, `SELECT id FROM volumes`, `SELECT name FROM groups`} {
		if ids := storedIDs(t, state, q); len(ids) != 1 || ids[0] != dec {
			t.Fatalf("%s: %+q, want the seed %+q", q, ids, dec)
		}
	}

	run := func(args ...string) (string, error) {
		t.Helper()
		ios, _, out, errOut := iostreams.Test()
		f := NewFactory(ios)
		f.engine = e
		err := runCmd(t, NewRootCmd(f), args...)
		return out.String() + errOut.String(), err
	}
	// Each command, typed as the terminal sends it (decomposed) and as NFC: both read as pre.
	for _, typed := range []string{dec, pre} {
		for _, c := range []struct {
			args []string
			want string // in the output
		}{
			{[]string{"volume", "status", typed, "--json"}, `"id": "` + dec},
			{[]string{"status", typed, "--json"}, dec},
			{[]string{"plugin", "status", typed, "--json"}, `"id": "` + dec},
			{[]string{"group", "status", typed, "--json"}, dec},
			{[]string{"volume", "claim", typed, "--alloc", "web-0", "--json"}, dec},
			{[]string{"volume", "release", typed, "--alloc", "web-0"}, ""},
			{[]string{"volume", "snapshot", "create", typed, "snap-" + typed, "--json"}, ""},
			{[]string{"volume", "snapshot", "list", "--plugin", typed, "--json"}, "snap-"},
			{[]string{"volume", "snapshot", "delete", typed, "snap-" + typed, "--yes"}, ""},
			{[]string{"events", "--volume", typed, "--plugin", typed, "--json"}, dec},
		} {
			out, err := run(c.args...)
			if err != nil || !strings.Contains(out, c.want) {
				t.Errorf("volctl %+q: %v\n%s\nwant it to reach what is stored as %+q", c.args, err, out, dec)
			}
		}
		// Export reaches them, and refuses them for what they are: Nomad would get other IDs.
		args := []string{"export", "nomad", typed, "--group", typed, "--out", t.TempDir()}
		if out, err := run(args...); err == nil || !strings.Contains(err.Error(), "not in Unicode normal form C") {
			t.Errorf("volctl %+q: %v\n%s\nwant it refused as not in NFC", args, err, out)
		}
	}
	if claims, err := e.Claims(ctx); err != nil || len(claims) != 1 || claims[0].Alloc != dec+"[0]" {
		t.Errorf("after claim and release by name, claims: %+v %v, want only the group's", claims, err)
	}
	for _, args := range [][]string{
		{"group", "stop", pre},
		{"volume", "detach", pre, "--yes"},
		{"volume", "delete", pre, "--yes"},
		{"plugin", "deregister", pre, "--yes"},
	} {
		if out, err := run(args...); err != nil {
			t.Errorf("volctl %+q: %v\n%s", args, err, out)
		}
	}
	var left []string
	for _, q := range []string{`SELECT id FROM plugins`, `SELECT id FROM volumes`} {
		left = append(left, storedIDs(t, state, q)...)
	}
	if g, err := e.Groups(ctx, pre); err != nil || len(g) != 1 || g[0].State != "stopped" || len(g[0].Allocs) != 0 {
		t.Errorf("group %+q after group stop by name: %+v %v, want it stopped", dec, g, err)
	}
	if len(left) != 0 {
		t.Errorf("after volume delete and plugin deregister by name, still stored: %+q", left)
	}
}

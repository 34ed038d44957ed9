package nomad

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/volctl/volctl/internal/spec"
)

// Nomad has volume db's storage (its plugin and external ID) registered already, as volume db
// in another namespace and as another volume in db's own, by `nomad volume register` of the
// file volctl export nomad wrote, or by someone else: Nomad's access-mode rules hold per
// volume, so a registration of db here too gives Nomad two volumes of one storage, whose
// allocs it lets write it at once. Before, HandOver read only db in its own namespace and
// registered it. Now nothing is sent, the mark goes, and the error names both sides; volumes
// of another plugin or external ID, and db itself, are no twins.
func TestNomadRegisterRefusesAVolumeWhoseStorageNomadHasAsAnother(t *testing.T) {
	var puts atomic.Int32
	var listQuery atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "9")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/volumes":
			listQuery.Store(r.URL.RawQuery)
			json.NewEncoder(w).Encode([]api.CSIVolumeListStub{
				{ID: "db", Namespace: "default", PluginID: "hp", ExternalID: "ext-1"}, // db itself
				{ID: "db", PluginID: "hp", ExternalID: "ext-1"},                       // so too, as an older Nomad names none
				{ID: "db", Namespace: "team", PluginID: "hp", ExternalID: "ext-1"},
				{ID: "db-copy", Namespace: "default", PluginID: "hp", ExternalID: "ext-1"},
				{ID: "other", Namespace: "default", PluginID: "hp", ExternalID: "ext-2"},
				{ID: "db", Namespace: "prod", PluginID: "nfs", ExternalID: "ext-1"},
			})
		case r.Method == http.MethodGet:
			http.Error(w, "volume not found", http.StatusNotFound)
		default:
			puts.Add(1)
			w.Write([]byte(`{}`))
		}
	}))
	c, v := dbOfStorageExt1(t, srv)
	done, err := c.HandOver(context.Background(), v, true, nil)
	if !errors.Is(err, ErrSameStorage) || !done.Undo || done.OK {
		t.Fatalf("HandOver with Nomad holding its storage as other volumes: %+v, %v; want ErrSameStorage, nothing sent, the mark taken back", done, err)
	}
	if n := puts.Load(); n != 0 {
		t.Errorf("%d registration(s) sent", n)
	}
	for _, want := range []string{`volume "db" in namespace team`, `volume "db-copy" in namespace default`, `external ID "ext-1"`, `plugin "hp"`,
		"nomad volume deregister -namespace default db-copy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error: %v\nwant it to say %q", err, want)
		}
	}
	twins, terr := c.Twins(context.Background(), v, "default")
	if want := []Twin{{"db-copy", "default"}, {"db", "team"}}; terr != nil || !slices.Equal(twins, want) {
		t.Errorf("Twins: %v, %v; want %v (db of the default namespace, named so or not, is no twin of itself)", twins, terr, want)
	}
	if n := strings.Count(err.Error(), `volume "db" in namespace default`); n != 1 {
		t.Errorf("error: %v\nnames volume db of the default namespace %d times, want once (where it would be registered): it is no twin of itself", err, n)
	}
	for _, not := range []string{`"other"`, "prod"} {
		if strings.Contains(err.Error(), not) {
			t.Errorf("error: %v\nnames %s, which is no twin", err, not)
		}
	}
	if q, _ := listQuery.Load().(string); !strings.Contains(q, "namespace=%2A") && !strings.Contains(q, "namespace=*") || strings.Contains(q, "plugin_id") {
		t.Errorf("list asked with %q: want every namespace's (namespace=*), not filtered by plugin_id, which Nomad answers with none in namespace *", q)
	}
}

// A token that may list volumes in no namespace: Nomad refuses the list (403). The
// registration goes on, as before, and what volctl could not check is said.
func TestNomadRegisterSaysWhenItCouldNotListVolumes(t *testing.T) {
	registered := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "3")
		switch {
		case r.URL.Path == "/v1/volumes":
			http.Error(w, "Permission denied", http.StatusForbidden)
		case r.Method == http.MethodPut:
			registered = true
			w.Write([]byte(`{}`))
		case registered:
			w.Write([]byte(`{"ID":"db","Namespace":"default","PluginID":"hp","ExternalID":"ext-1"}`))
		default:
			http.Error(w, "volume not found", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.HandOver(context.Background(), spec.Volume{ID: "db", PluginID: "hp", ExternalID: "ext-1", Namespace: "default"}, true, nil)
	if err != nil || !done.OK {
		t.Fatalf("HandOver, the list refused: %+v, %v; want it registered", done, err)
	}
	if !strings.Contains(done.Unchecked, "could not check") || !strings.Contains(done.Unchecked, "csi-list-volume") {
		t.Errorf("Unchecked: %q\nwant it to say what volctl could not check, and the capability", done.Unchecked)
	}
}

// What answers at NOMAD_ADDR (a proxy, a gateway) lists a volume whose ID and namespace quote
// the request's X-Nomad-Token. The volumes' names were hidden through c.shown, but the
// deregister command the error suggests was built from Nomad's ID and namespace as given and
// printed the token (review26d). Every part of the error is shown through c.shown now.
func TestNomadSameStorageErrorNeverPrintsTheToken(t *testing.T) {
	const token = "0b9bd8e6-52d4-4d1c-b4a2-6e9cb0dd0f0e"
	t.Setenv("NOMAD_TOKEN", token)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "9")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/volumes":
			tok := r.Header.Get("X-Nomad-Token")
			json.NewEncoder(w).Encode([]api.CSIVolumeListStub{
				{ID: "copy-" + tok, Namespace: "team-" + tok, PluginID: "hp", ExternalID: "ext-1"},
			})
		case r.Method == http.MethodGet:
			http.Error(w, "volume not found", http.StatusNotFound)
		default:
			t.Errorf("%s %s sent", r.Method, r.URL.Path)
		}
	}))
	c, v := dbOfStorageExt1(t, srv)
	_, err := c.HandOver(context.Background(), v, true, nil)
	if !errors.Is(err, ErrSameStorage) {
		t.Fatalf("HandOver: %v; want ErrSameStorage", err)
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("error prints NOMAD_TOKEN: %v", err)
	}
	if !strings.Contains(err.Error(), "nomad volume deregister") {
		t.Errorf("error: %v\nwant it to still say what to run", err)
	}
}

// dbOfStorageExt1 is a client of the Nomad srv answers for (closed when the test ends) and
// volume db of plugin hp, external ID ext-1, in the default namespace.
func dbOfStorageExt1(t *testing.T, srv *httptest.Server) (*Client, spec.Volume) {
	t.Helper()
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c, spec.Volume{ID: "db", PluginID: "hp", ExternalID: "ext-1", Namespace: "default",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
}

// Nomad's volumes are listed once per client (a command), and a volume the client registered
// after the list is a twin of a later volume of the same storage: the list, taken before,
// does not have it, and Nomad would hold the storage twice.
func TestTwinsListsOnceAndKnowsWhatTheClientRegistered(t *testing.T) {
	var lists atomic.Int32
	var registered atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "9")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/volumes":
			lists.Add(1)
			w.Write([]byte(`[]`))
		case r.Method == http.MethodPut:
			if registered.Swap(true) {
				t.Errorf("a second registration was sent: %s", r.URL.Path)
			}
			w.Write([]byte(`{}`))
		case r.Method == http.MethodGet && r.URL.Path == "/v1/volume/csi/db" && registered.Load():
			w.Write([]byte(`{"ID":"db","Namespace":"default","PluginID":"hp","ExternalID":"ext-1",` +
				`"RequestedCapabilities":[{"AccessMode":"single-node-writer","AttachmentMode":"file-system"}]}`))
		default:
			http.Error(w, "volume not found", http.StatusNotFound)
		}
	}))
	c, v := dbOfStorageExt1(t, srv)
	if _, err := c.HandOver(context.Background(), v, true, nil); err != nil {
		t.Fatalf("HandOver db: %v", err)
	}
	again := v
	again.ID = "db-again"
	done, err := c.HandOver(context.Background(), again, true, nil)
	if !errors.Is(err, ErrSameStorage) || !done.Undo || !strings.Contains(err.Error(), `volume "db" in namespace default`) {
		t.Errorf("HandOver of db-again, db's storage, after db: %+v, %v; want ErrSameStorage naming db", done, err)
	}
	if n := lists.Load(); n != 1 {
		t.Errorf("Nomad's volumes listed %d times for two volumes of one client, want once", n)
	}
}

// A list Nomad failed once (a 500 while a server restarted) is asked again by the next volume
// of the command: kept, it failed every later volume of a `register --all` with the first one's
// error though Nomad answered again. A 403 is kept (TestNomadRegisterAllListsNomadsVolumesOnce's
// kind): the token would be refused again.
func TestTwinsListFailedOnceIsAskedAgain(t *testing.T) {
	var lists atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "9")
		if r.Method == http.MethodGet && r.URL.Path == "/v1/volumes" {
			if lists.Add(1) == 1 {
				http.Error(w, "rpc error: EOF", http.StatusInternalServerError)
				return
			}
			w.Write([]byte(`[]`))
			return
		}
		http.Error(w, "volume not found", http.StatusNotFound)
	}))
	c, v := dbOfStorageExt1(t, srv)
	if _, err := c.Twins(context.Background(), v, "default"); err == nil {
		t.Fatal("Twins with the list failed: nil error")
	}
	second := v
	second.ID, second.ExternalID = "v2", "ext-2"
	if twins, err := c.Twins(context.Background(), second, "default"); err != nil || len(twins) != 0 {
		t.Errorf("second volume's twins, Nomad answering the list again (asked %d times): %v, %v; want none, no error", lists.Load(), twins, err)
	}
}

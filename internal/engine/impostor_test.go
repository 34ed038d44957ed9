package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// impostorUID is the user another user's plugin runs as in these tests: nobody.
const impostorUID = 65534

// serveImpostor serves, on socket, a plugin of the same driver listening as impostorUID, as a
// user who bound the socket's name while the plugin was down would. It returns the RPCs that
// reached it.
func serveImpostor(t *testing.T, socket string) (reached func() []string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("listening as another user needs root")
	}
	var mu sync.Mutex
	var got []string
	record := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		mu.Lock()
		got = append(got, filepath.Base(info.FullMethod))
		mu.Unlock()
		return handler(ctx, req)
	}
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(cfg)), csitest.WithInterceptor(record), csitest.AsUser(impostorUID))
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// A plugin restarts while volctl holds its connection (an operation between two RPCs, or the
// agent between two of its commands): gRPC dials the socket's name again by itself, and another
// user who bound that name meanwhile (its directory, as /tmp, lets them while nothing listens)
// is what it reaches. The connection checked when the plugin was fingerprinted is gone; the one
// the next RPC goes over, with the volume's secrets, must be checked too. It is refused before
// anything is sent, naming the socket, the listener's user and what to do.
func TestPluginReplacedUnderAHeldConnectionGetsNoRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if err := os.Chmod(filepath.Dir(h.socket), 0o777|os.ModeSticky); err != nil { // as /tmp
		t.Fatal(err)
	}
	c, err := h.e.connect(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	defer h.e.done(c)
	h.stopServe()
	reached := serveImpostor(t, h.socket)

	err = stageOverHeld(h, c)
	if got := reached(); len(got) > 0 {
		t.Fatalf("uid %d's listener on %s was sent %v over the connection held to the plugin (err %v)", impostorUID, h.socket, got, err)
	}
	if err == nil {
		t.Fatal("NodeStageVolume through a socket another user serves succeeded")
	}
	for _, want := range []string{"socket " + h.socket, "uid 65534", "stop that process"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q: %v", want, err)
		}
	}
	if !errors.Is(err, ErrConflict) {
		t.Errorf("the refusal is not a conflict, as checkServers' at a fresh fingerprint is: %v", err)
	}
}

// A plugin's socket directory sits in a directory every user may write (/tmp, sticky), and is
// gone while the plugin is down (its own cleanup, a reboot's empty /tmp). Another user makes
// the directory again, theirs, and binds the socket's name in it. Owning the directory is what
// lets a plugin that runs as its own user through (serverRefused); but any user could have made
// this one: the impostor is refused alike, before any RPC, and the refusal says where such a
// plugin's directory must be. So too where the registered socket's directory is root's symlink
// to that one: where anyone could make it is where it resolves.
func TestSocketDirectoryMadeByAnotherUserIsNoLicence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		throughLink bool
		levels      []string // the directories another user makes, the socket's last
	}{
		{"direct", false, []string{"hp"}},
		{"through a symlink", true, []string{"hp"}},
		// Their own directory in /tmp, and the socket's in it: the socket's parent is theirs,
		// and not others' to write, but they could make it as anyone could.
		{"two levels down", false, []string{"x", "hp"}},
	} {
		throughLink := tc.throughLink
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			shared := filepath.Join(t.TempDir(), "shared")
			if err := os.Mkdir(shared, 0o777|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil { // as /tmp, past the umask
				t.Fatal(err)
			}
			dir := filepath.Join(append([]string{shared}, tc.levels...)...)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			registered := filepath.Join(dir, "csi.sock")
			if throughLink { // root's /run/csi -> /tmp/hp, say
				link := filepath.Join(t.TempDir(), "csi")
				if err := os.Symlink(dir, link); err != nil {
					t.Fatal(err)
				}
				registered = filepath.Join(link, "csi.sock")
			}
			socket := filepath.Join(dir, "csi.sock")
			cfg := csitest.DefaultMemConfig()
			cfg.NodeID = "node-1"
			stop := csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(cfg)))
			h.registerPlugin("hp", registered)
			stop()
			top := filepath.Join(shared, tc.levels[0])
			if err := os.RemoveAll(top); err != nil {
				t.Fatal(err)
			}

			// Another user makes the directories again and serves the same driver in them.
			for made := shared; len(made) < len(dir); {
				made = filepath.Join(made, tc.levels[strings.Count(made[len(shared):], "/")])
				if err := os.Mkdir(made, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Chown(made, impostorUID, impostorUID); err != nil {
					t.Fatal(err)
				}
			}
			reached := serveImpostor(t, socket)

			sv := volume("data")
			sv.PluginID = "hp"
			_, err := h.e.CreateVolume(h.ctx, sv)
			if got := reached(); len(got) > 0 {
				t.Fatalf("uid %d's listener on %s, in a directory it made in %s, was sent %v (err %v)", impostorUID, registered, shared, got, err)
			}
			if err == nil {
				t.Fatal("volume create through a socket another user serves, in a directory they made, succeeded")
			}
			for _, want := range []string{"socket " + registered, "uid 65534", "if that process is not the plugin, stop it", "which other users may write", "/run"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal lacks %q: %v", want, err)
				}
			}
		})
	}
}

// A plugin's socket directory is a user's of its own (nobody's, say, chowned for some plugin
// that runs as nobody), in one only root may write: owning it is the licence serverRefused
// grants a plugin that runs as that user. This plugin was registered served by root. It
// restarts, and meanwhile any process of nobody's (every daemon that runs as nobody) binds the
// name. The user that served the socket when the plugin was fingerprinted is kept with the
// fingerprint, and a listener of another (neither root nor volctl's own) is refused before any
// RPC, by the fresh fingerprint's check and by the check of the connection held, naming both
// users and what to do; registering the plugin again accepts the new user.
func TestServerOfAnotherUserThanTheFingerprintsIsRefused(t *testing.T) {
	t.Parallel()
	serverOfAnotherUserIsRefused(t, func(dir string) string { return filepath.Join(dir, "csi.sock") })
}

// serverOfAnotherUserIsRefused is TestServerOfAnotherUserThanTheFingerprintsIsRefused with the
// plugin registered on spell(dir), its socket's path as the user wrote it.
func serverOfAnotherUserIsRefused(t *testing.T, spell func(dir string) string) {
	h, socket, registered, stop := rootServesInNobodysDirectorySpelled(t, spell)
	held, err := h.e.connect(h.ctx, "hp")
	if err != nil {
		t.Fatal(err)
	}
	defer h.e.done(held)
	stop()
	wantRefusal := impostorRefused(t, socket)

	// The connection held: gRPC dials the name again by itself.
	wantRefusal("NodeStageVolume over the connection held", stageOverHeld(h, held))

	// A new process: the socket file is new, the plugin fingerprinted afresh.
	h.open(Config{})
	sv := volume("data")
	sv.PluginID = "hp"
	_, err = h.e.CreateVolume(h.ctx, sv)
	wantRefusal("volume create", err)

	// The operator's way out, when the plugin runs as nobody on purpose.
	h.registerPlugin("hp", registered)
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatalf("volume create after the plugin was registered again on %s, served by uid %d: %v", registered, impostorUID, err)
	}
}

// A probe found another driver behind the plugin's socket file and forgot the file's identity
// stored with the fingerprint (forgetFingerprintSockets), so that no connection reuses it: who
// served the socket is kept, and nobody's process serving it next is refused as above.
func TestServerKeptThroughAStaleFingerprint(t *testing.T) {
	t.Parallel()
	h, socket, stop := rootServesInNobodysDirectory(t)
	c, err := h.e.connect(h.ctx, "hp")
	if err != nil {
		t.Fatal(err)
	}
	h.e.staleFingerprint(h.ctx, c)
	h.e.done(c)
	stop()
	wantRefusal := impostorRefused(t, socket)
	h.open(Config{})
	sv := volume("data")
	sv.PluginID = "hp"
	_, err = h.e.CreateVolume(h.ctx, sv)
	wantRefusal("volume create after the fingerprint was found stale", err)
}

// The same, with the plugin registered on its socket's path not written clean, as a template's
// ${dir}/csi.sock writes it when dir ends in "/": the client dials the path cleaned, and the
// user who served it when the plugin was fingerprinted must be found under that spelling too.
// It was not: the check of the connection held found no user recorded for the cleaned path, and
// let nobody's listener be sent NodeStageVolume and its secret.
func TestServerOfAnotherUserThanTheFingerprintsIsRefusedHoweverThePathIsSpelled(t *testing.T) {
	t.Parallel()
	for name, spell := range map[string]func(dir string) string{
		"double slash":  func(dir string) string { return dir + "//csi.sock" },
		"dot":           func(dir string) string { return dir + "/./csi.sock" },
		"dot dot":       func(dir string) string { return dir + "/../hp/csi.sock" },
		"trailing dirs": func(dir string) string { return dir + "///./csi.sock" },
	} {
		t.Run(name, func(t *testing.T) { serverOfAnotherUserIsRefused(t, spell) })
	}
}

// rootServesInNobodysDirectory registers plugin hp, served by root on a socket in a directory
// nobody (impostorUID) owns, in one only root may write; stop stops root's plugin.
func rootServesInNobodysDirectory(t *testing.T) (h *harness, socket string, stop func()) {
	t.Helper()
	h, socket, _, stop = rootServesInNobodysDirectorySpelled(t, func(dir string) string { return filepath.Join(dir, "csi.sock") })
	return h, socket, stop
}

// rootServesInNobodysDirectorySpelled is rootServesInNobodysDirectory with the plugin registered
// on spell(dir), its socket's path as the user wrote it (registered); socket is that path clean.
func rootServesInNobodysDirectorySpelled(t *testing.T, spell func(dir string) string) (h *harness, socket, registered string, stop func()) {
	t.Helper()
	h = newHarness(t, nil)
	dir := filepath.Join(t.TempDir(), "hp") // in root's, 0700
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, impostorUID, impostorUID); err != nil {
		t.Fatal(err)
	}
	socket = filepath.Join(dir, "csi.sock")
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	stop = csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	registered = spell(dir)
	h.registerPlugin("hp", registered)
	return h, socket, registered, stop
}

// impostorRefused serves nobody's plugin on socket (serveImpostor) and returns what checks that
// an operation's err (what names it) is the refusal of nobody's listener, nothing sent to it.
func impostorRefused(t *testing.T, socket string) func(what string, err error) {
	t.Helper()
	reached := serveImpostor(t, socket)
	return func(what string, err error) {
		t.Helper()
		if got := reached(); len(got) > 0 {
			t.Fatalf("%s: uid %d's listener on %s, where root served when plugin hp was fingerprinted, was sent %v (err %v)", what, impostorUID, socket, got, err)
		}
		if err == nil {
			t.Fatalf("%s through a socket uid %d serves, root's when fingerprinted, succeeded", what, impostorUID)
		}
		for _, want := range []string{"socket " + socket, "uid 0", "uid 65534", "stop it", "volctl plugin register"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the refusal lacks %q: %v", what, want, err)
			}
		}
		if !errors.Is(err, ErrConflict) {
			t.Errorf("%s: the refusal is not a conflict: %v", what, err)
		}
	}
}

// stageOverHeld sends NodeStageVolume, with a secret, over c, a connection held while its plugin
// stopped. The first RPC may go over the connection the plugin's stop broke (UNAVAILABLE: EOF,
// or a reset when the plugin closed it with bytes unread), as an RPC in flight when the plugin
// stopped would; volctl retries it, and gRPC dials again.
func stageOverHeld(h *harness, c *conn) (err error) {
	for range 5 {
		err = c.client.NodeStageVolume(h.ctx, csi.NodeStageVolumeRequest{
			VolumeID:    "vol-1",
			StagingPath: filepath.Join(h.dir, "staging"),
			Capability:  csi.VolumeCapability{Capability: capab(spec.SingleNodeWriter)},
			Secrets:     spec.Secrets{"key": "AQDsIoxgHqpeBBAAtmd9Ndu4m1xspTbvwZdIzA=="},
		})
		if err == nil || !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "connection reset by peer") {
			return err
		}
	}
	return err
}

// The agent registers the plugins its config declares at every start, and again every probe
// interval while one cannot be registered (its socket not there yet: after a reboot, before its
// supervisor starts it). Nobody's process that binds the name first is not the plugin root
// served: the agent's registration holds it to the user kept with the last fingerprint, as
// every connection does; only the operator's (volctl plugin register) takes another.
func TestAgentsRegistrationKeepsWhoServed(t *testing.T) {
	t.Parallel()
	h, socket, stop := rootServesInNobodysDirectory(t)
	stop()
	wantRefusal := impostorRefused(t, socket)
	_, err := h.e.RegisterDeclaredPlugin(h.ctx, spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: socket})
	wantRefusal("the agent's registration of the declared plugin", err)
	h.registerPlugin("hp", socket) // the operator's
	if _, err := h.e.RegisterDeclaredPlugin(h.ctx, spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatalf("the agent's registration after the operator registered the plugin served by uid %d: %v", impostorUID, err)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// execTaskStart bounds the wait for an exec task's first write: its chroot is built first, which
// took 2 min 3 s at a load average of 20 on a 2-core host.
const execTaskStart = 4 * time.Minute

// TestNomadEndToEnd hands a volume volctl created over to a real Nomad agent and takes it back:
// the exported plugin job becomes healthy, volctl nomad register registers the volume (and
// refuses one in a namespace Nomad lacks, and hands one named db?x over and back), a local
// claim is refused, a volume volctl's own plugin creates on the same root while Nomad's runs
// is handed over and written by a Nomad task, the exported job claims it and its task writes a file that appears in the
// volume, a second writer is refused by Nomad, and after the jobs stop and the volume is
// deregistered, volctl nomad release takes it back and volctl claims it again. Nothing is left
// running or mounted.
//
// Opt-in: NOMAD_BIN names a Nomad binary built with cgo (the exec driver), and it runs as root.
// With VOLCTL_NOMAD_CAPTURE=FILE, every Nomad API exchange of volctl's goes through a recording
// proxy and is written to FILE, labelled by step: that is how internal/cli/testdata's captures
// were made.
func TestNomadEndToEnd(t *testing.T) {
	// The whole run's bound. Each exec task's start builds its chroot by copying the host's
	// /bin, /lib and /usr: 45 s on an idle 2-core host, 100 s on a loaded one, past 2 min at
	// a load average of 20 (execTaskStart), three times; within go test's -timeout 20m.
	w := newNomadWorld(t, 15*time.Minute)
	dir := w.dir
	volctlBin, err := exec.LookPath("volctl")
	if err != nil {
		t.Fatal(err)
	}
	step := w.stepTo

	// volctl creates the volume and runs the group on its own plugin, then stops both.
	step("volctl creates volume db and runs group web on its hostpath plugin")
	root := filepath.Join(dir, "hproot")
	hp := exec.Command("volctl", "plugin", "serve", "hostpath", "--socket", filepath.Join(dir, "hp.sock"), "--root", root, "--node-id", "n1")
	stopHP := startBackground(t, hp)
	waitForPath(t, filepath.Join(dir, "hp.sock"))
	w.writeFile("db.hcl", dbSpec)
	mnt := filepath.Join(dir, "mnt")
	w.writeFile("web.hcl", fmt.Sprintf(`group "web" {
  volume "data" {
    type            = "csi"
    source          = "db"
    access_mode     = "single-node-writer"
    attachment_mode = "file-system"
  }
  volume_mount {
    volume      = "data"
    destination = "%s/web-{index}"
  }
}
`, mnt))
	w.volctl(0, "plugin", "register", "--id", "hp", "--socket", filepath.Join(dir, "hp.sock"))
	w.volctl(0, "volume", "create", filepath.Join(dir, "db.hcl"))
	// Two more: one in a namespace Nomad does not have, one whose ID a URL would cut short.
	for _, v := range []struct{ id, namespace string }{{"elsewhere", "nosuch"}, {"db?x", "default"}} {
		w.writeFile(v.namespace+".hcl", strings.Replace(strings.Replace(w.readFile("db.hcl"), `id = "db"`, fmt.Sprintf("id = %q\nnamespace = %q", v.id, v.namespace), 1), `name = "db"`, fmt.Sprintf("name = %q", v.id), 1))
		w.volctl(0, "volume", "create", filepath.Join(dir, v.namespace+".hcl"))
	}
	w.volctl(0, "group", "run", filepath.Join(dir, "web.hcl"))
	w.volctl(0, "group", "stop", "web")
	if out, err := stopHP(); err != nil {
		t.Fatalf("local hostpath plugin: %v\n%s", err, out)
	}

	step("start nomad agent -dev on 127.0.0.1")
	w.startAgent()
	w.nomadAddr = w.proxy()
	ext := strings.TrimSpace(w.volctl(0, "volume", "status", "db", "-t", "{{.external_id}}"))

	step("export nomad")
	out := w.volctl(0, "export", "nomad", "--all", "--out", filepath.Join(dir, "export"),
		"--volctl-path", volctlBin, "--plugin-root", root, "--nomad-data-dir", w.dataDir,
		"--command", "/bin/sh", "--arg", "-c", "--arg", fmt.Sprintf("echo hello-from-nomad > %s/web-${NOMAD_ALLOC_INDEX}/out.txt && sleep 3600", mnt))
	for _, f := range []string{"volume-db.hcl", "job-web.nomad.hcl", "plugin-hp.nomad.hcl"} {
		if !strings.Contains(out, f) {
			t.Fatalf("export did not write %s:\n%s", f, out)
		}
	}
	w.volctl(0, "validate", "--for", "register", filepath.Join(dir, "export", "volume-db.hcl"))

	step("register before the plugin runs in Nomad: refused")
	if out := w.volctl(1, "nomad", "register", "db"); !strings.Contains(out, `plugin "hp" does not run in Nomad at `+w.nomadAddr) {
		t.Fatalf("register without the plugin: %s", out)
	}
	// Its --dry-run says so too, with the registration's exit (README's exit codes).
	if out := w.volctl(1, "nomad", "register", "db", "--dry-run"); !strings.Contains(out, `plugin "hp" does not run in Nomad at `+w.nomadAddr) {
		t.Fatalf("register --dry-run without the plugin: %s", out)
	}

	step("run the plugin job; wait until it is healthy")
	w.nomad("job", "run", "-detach", filepath.Join(dir, "export", "plugin-hp.nomad.hcl"))
	w.poll("the plugin job to be healthy", 90*time.Second, func() bool {
		var p struct{ NodesHealthy, ControllersHealthy int }
		return w.getJSON("/v1/plugin/csi/hp", &p) && p.NodesHealthy == 1 && p.ControllersHealthy == 1
	})

	step("volctl nomad register --dry-run")
	if out := w.volctl(0, "nomad", "register", "db", "--dry-run"); !strings.Contains(out, `Would register volume "db"`) {
		t.Fatalf("dry run: %s", out)
	}
	step("volctl nomad register")
	if out := w.volctl(0, "nomad", "register", "db"); !strings.Contains(out, `Registered volume "db" in Nomad at `+w.nomadAddr) {
		t.Fatalf("register: %s", out)
	}

	step("a volume in a namespace Nomad does not have: refused, and not left marked")
	if out := w.volctl(1, "nomad", "register", "elsewhere"); !strings.Contains(out, "nonexistent namespace nosuch") || !strings.Contains(out, "refused the registration") {
		t.Fatalf("register in a namespace Nomad lacks: %s", out)
	}
	if out := w.volctl(0, "volume", "status", "elsewhere", "-t", `{{with index . "handover"}}marked{{end}}`); strings.TrimSpace(out) != "" {
		t.Fatalf("a registration Nomad refused left its mark: %s", out)
	}

	step("a volume whose ID a URL would cut short (db?x) is registered, read back and taken back as itself")
	if out := w.volctl(0, "nomad", "register", "db?x"); !strings.Contains(out, `Registered volume "db?x"`) {
		t.Fatalf("register db?x: %s", out)
	}
	if out := w.volctl(4, "nomad", "release", "db?x"); !strings.Contains(out, "still registered in Nomad") {
		t.Fatalf("release of db?x while Nomad has it: %s", out)
	}
	w.nomad("volume", "deregister", "db?x")
	if out := w.volctl(0, "nomad", "release", "db?x"); !strings.Contains(out, `Took volume "db?x" back`) {
		t.Fatalf("release of db?x: %s", out)
	}

	step("a volume Nomad has with another topology_request: --dry-run and nomad status say Nomad would refuse it, and it does")
	// Registered with nomad volume register, from the exported file with a preferred topology
	// besides: Nomad keeps a registered volume's topology and refuses an update whose
	// topology_request is not the one it was registered with (CSIVolume.Merge).
	otherTopology := strings.Replace(w.readFile(filepath.Join("export", "volume-db?x.hcl")), "topology_request {\n",
		"topology_request {\n  preferred {\n    topology {\n      segments = {\n        \"topology.hostpath.volctl.dev/node\" = \"n1\"\n      }\n    }\n  }\n", 1)
	if !strings.Contains(otherTopology, "preferred {") {
		t.Fatalf("the exported file of db?x has no topology_request: %s", otherTopology)
	}
	w.writeFile("other-topology.hcl", otherTopology)
	w.nomad("volume", "register", filepath.Join(dir, "other-topology.hcl"))
	if out := w.volctl(4, "nomad", "register", "db?x", "--dry-run"); !strings.Contains(out, "topology_request") || !strings.Contains(out, "it would be refused") {
		t.Fatalf("dry run of db?x, whose topology_request in Nomad is another: %s", out)
	}
	if out := w.volctl(0, "nomad", "status", "db?x", "-t", `{{range .}}{{range .differs}}{{.}} {{end}}{{end}}`); strings.TrimSpace(out) != "topology_request" {
		t.Fatalf("nomad status of db?x, whose topology_request in Nomad is another, says it differs in %q", out)
	}
	// Refused, but Nomad has the volume (registered there by hand): it stays marked handed
	// over, so volctl does not claim it beside Nomad, until it is deregistered and released;
	// a conflict, exit 4, as the plan said, and run again it is refused again.
	if out := w.volctl(4, "nomad", "register", "db?x"); !strings.Contains(out, "not compatible with existing topology") ||
		!strings.Contains(out, "refused the registration") || !strings.Contains(out, "from before, so it stays marked handed over") ||
		!strings.Contains(out, "Nomad keeps its copy") {
		t.Fatalf("register of db?x, whose topology_request in Nomad is another: %s", out)
	}
	w.nomad("volume", "deregister", "db?x")
	if out := w.volctl(0, "nomad", "release", "db?x"); !strings.Contains(out, `Took volume "db?x" back`) {
		t.Fatalf("release of db?x: %s", out)
	}

	step("a local claim is refused, naming the Nomad address")
	if out := w.volctl(4, "volume", "claim", "db", "--alloc", "local-0"); !strings.Contains(out, "handed over to Nomad at "+w.nomadAddr) {
		t.Fatalf("local claim: %s", out)
	}

	step("volctl's own plugin serves the root beside Nomad's; a volume it creates now is handed over, and Nomad's task writes into it")
	// README's tour leaves volctl's plugin running while Nomad runs the exported one on the
	// same --root: a volume created since Nomad's started was unknown to it (NOT_FOUND at
	// NodeStageVolume) until its job restarted.
	hp = exec.Command("volctl", "plugin", "serve", "hostpath", "--socket", filepath.Join(dir, "hp.sock"), "--root", root, "--node-id", "n1")
	stopHP = startBackground(t, hp)
	waitForPath(t, filepath.Join(dir, "hp.sock"))
	w.writeFile("late.hcl", strings.Replace(strings.Replace(w.readFile("db.hcl"), `id = "db"`, `id = "late"`, 1), `name = "db"`, `name = "late"`, 1))
	w.volctl(0, "volume", "create", filepath.Join(dir, "late.hcl"))
	lateExt := strings.TrimSpace(w.volctl(0, "volume", "status", "late", "-t", "{{.external_id}}"))
	if out := w.volctl(0, "nomad", "register", "late"); !strings.Contains(out, `Registered volume "late"`) {
		t.Fatalf("register late: %s", out)
	}
	jobWeb := w.readFile(filepath.Join("export", "job-web.nomad.hcl"))
	jobLate := strings.Replace(strings.Replace(jobWeb, `job "web"`, `job "late"`, 1), ` = "db"`+"\n", ` = "late"`+"\n", 1)
	if strings.Count(jobLate, `"late"`) != 2 {
		t.Fatalf("the exported job, its volume source made late: %s", jobLate)
	}
	w.writeFile("late.nomad.hcl", jobLate)
	w.nomad("job", "run", "-detach", filepath.Join(dir, "late.nomad.hcl"))
	w.poll("the task's file in volume late", execTaskStart, func() bool {
		b, err := os.ReadFile(filepath.Join(root, "volumes", lateExt, "out.txt"))
		return err == nil && strings.TrimSpace(string(b)) == "hello-from-nomad"
	})
	w.nomad("job", "stop", "-purge", "late")
	w.poll("nomad volume deregister late", 90*time.Second, func() bool {
		_, err := w.tryNomad("volume", "deregister", "late")
		return err == nil
	})
	if out := w.volctl(0, "nomad", "release", "late"); !strings.Contains(out, `Took volume "late" back`) {
		t.Fatalf("release late: %s", out)
	}
	if out, err := stopHP(); err != nil {
		t.Fatalf("local hostpath plugin: %v\n%s", err, out)
	}

	step("run the exported job; its task writes into the volume")
	w.nomad("job", "run", "-detach", filepath.Join(dir, "export", "job-web.nomad.hcl"))
	written := filepath.Join(root, "volumes", ext, "out.txt")
	w.poll("the task's file in the volume", execTaskStart, func() bool {
		b, err := os.ReadFile(written)
		return err == nil && strings.TrimSpace(string(b)) == "hello-from-nomad"
	})
	step("volctl nomad status shows the write claim")
	var st []struct {
		HandedOver    bool     `json:"handed_over"`
		Registered    bool     `json:"registered"`
		AnotherVolume []string `json:"another_volume"`
		Differs       []string `json:"differs"`
		Nomad         struct {
			Schedulable bool     `json:"schedulable"`
			WriteAllocs []string `json:"write_allocs"`
		} `json:"nomad"`
	}
	if err := json.Unmarshal([]byte(w.volctl(0, "nomad", "status", "db", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	// Nomad's copy is this volume, as volctl sent it: no field reads as another volume's, or
	// as changed.
	if len(st) != 1 || !st[0].HandedOver || !st[0].Registered || !st[0].Nomad.Schedulable || len(st[0].Nomad.WriteAllocs) != 1 ||
		len(st[0].AnotherVolume) > 0 || len(st[0].Differs) > 0 {
		t.Fatalf("nomad status: %+v", st)
	}
	step("registering again while Nomad uses it is an update")
	if out := w.volctl(0, "nomad", "register", "db"); !strings.Contains(out, `Updated volume "db"`) {
		t.Fatalf("register again: %s", out)
	}

	step("a second writer is refused by Nomad")
	job2 := strings.Replace(w.readFile(filepath.Join("export", "job-web.nomad.hcl")), `job "web"`, `job "web2"`, 1)
	w.writeFile("web2.nomad.hcl", job2)
	w.nomad("job", "run", "-detach", filepath.Join(dir, "web2.nomad.hcl"))
	w.poll("Nomad to refuse the second writer", 60*time.Second, func() bool {
		var evals []struct {
			FailedTGAllocs map[string]struct{ ConstraintFiltered map[string]int }
		}
		if !w.getJSON("/v1/job/web2/evaluations", &evals) {
			return false
		}
		for _, e := range evals {
			for reason := range e.FailedTGAllocs["web"].ConstraintFiltered {
				if strings.Contains(reason, "CSI volume db has exhausted its available writer claims") {
					return true
				}
			}
		}
		return false
	})
	var allocs []struct{ ClientStatus string }
	if w.getJSON("/v1/job/web2/allocations", &allocs); len(allocs) != 0 {
		t.Fatalf("the second writer was placed: %+v", allocs)
	}

	step("release before Nomad lets go: refused")
	if out := w.volctl(4, "nomad", "release", "db"); !strings.Contains(out, "still registered in Nomad") {
		t.Fatalf("early release: %s", out)
	}

	step("stop the jobs, deregister")
	w.nomad("job", "stop", "-purge", "web2")
	w.nomad("job", "stop", "-purge", "web")
	w.poll("nomad volume deregister db", 90*time.Second, func() bool {
		_, err := w.tryNomad("volume", "deregister", "db")
		return err == nil
	})
	step("volctl nomad status after deregister")
	w.volctl(0, "nomad", "status", "db", "--json")
	step("volctl nomad release")
	if out := w.volctl(0, "nomad", "release", "db"); !strings.Contains(out, `Took volume "db" back`) {
		t.Fatalf("release: %s", out)
	}
	w.stopPluginJob()
	w.poll("the plugin to leave Nomad", 60*time.Second, func() bool {
		var p struct{ NodesHealthy int }
		return !w.getJSON("/v1/plugin/csi/hp", &p) || p.NodesHealthy == 0
	})

	step("volctl claims it again, on its own plugin")
	hp = exec.Command("volctl", "plugin", "serve", "hostpath", "--socket", filepath.Join(dir, "hp.sock"), "--root", root, "--node-id", "n1")
	stopHP = startBackground(t, hp)
	waitForPath(t, filepath.Join(dir, "hp.sock"))
	target := strings.TrimSpace(w.volctl(0, "volume", "claim", "db", "--alloc", "local-1"))
	if b, err := os.ReadFile(filepath.Join(target, "out.txt")); err != nil || strings.TrimSpace(string(b)) != "hello-from-nomad" {
		t.Fatalf("the file Nomad's task wrote, through the local claim: %q, %v", b, err)
	}
	w.volctl(0, "volume", "release", "db", "--alloc", "local-1")
	w.finish(stopHP)
	w.saveCaptures()
}

// dbSpec is volume db of plugin hp, as the end-to-end tests create it.
const dbSpec = `id = "db"
name = "db"
type = "csi"
plugin_id = "hp"
capacity_min = "10MiB"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`

// newNomadWorld is the world of an end-to-end test against a real Nomad agent, bounded by
// limit: a temporary directory (unmounted and removed after), volctl's state in it. It skips
// the test without NOMAD_BIN (a Nomad binary built with cgo, for the exec driver), root, or
// bind mounts.
func newNomadWorld(t *testing.T, limit time.Duration) *nomadWorld {
	bin := os.Getenv("NOMAD_BIN")
	if bin == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary (built with cgo, for the exec driver) to run the end-to-end test against a real agent")
	}
	if os.Geteuid() != 0 {
		t.Skip("the Nomad end-to-end test runs the agent's client, the exec driver and bind mounts: it needs root")
	}
	if err := hostpathtest.CanMount(); err != nil {
		t.Skipf("bind mounts are not allowed here: %v", err)
	}
	return makeNomadWorld(t, limit)
}

// makeNomadWorld is newNomadWorld without its checks, for a test that asks less of the host
// (NOMAD_BIN is its to check).
func makeNomadWorld(t *testing.T, limit time.Duration) *nomadWorld {
	bin := os.Getenv("NOMAD_BIN")
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	// Nomad makes unix sockets deep in its data dir (nomadDataDir's
	// alloc/<alloc ID>/<task>/secrets/api.sock, client/csi/plugins/<alloc ID>/csi.sock), which
	// must fit in 107 bytes: under a long $TMPDIR (a test binary's run directory, testproc) the
	// plugin never listened and the test waited out its health wait. The world goes under /tmp
	// when they would not fit (its processes are still the run's: they inherit TMPDIR).
	dir, err := os.MkdirTemp("", "n")
	if err == nil && len(dir)+len(nomadDataDir)+len("/alloc/")+36+len("/plugin/secrets/api.sock") > 107 {
		os.Remove(dir)
		dir, err = os.MkdirTemp("/tmp", "n")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hostpath.UnmountAll(dir); err != nil {
			t.Error(err)
		}
		os.RemoveAll(dir)
	})
	return &nomadWorld{t: t, ctx: ctx, dir: dir, bin: bin, state: filepath.Join(dir, "state"), start: time.Now()}
}

// stepTo names the step the run is at, for the failures and captures after it, and logs it
// with the time since the run began.
func (w *nomadWorld) stepTo(s string) {
	w.step = s
	w.t.Logf("%6.1fs  %s", time.Since(w.start).Seconds(), s)
}

// finish is the end-to-end tests' shared last steps, once volctl has the volumes back: the
// local hostpath plugin stopped (stopHP, startBackground's), then the agent, and nothing the
// run started left running or mounted.
func (w *nomadWorld) finish(stopHP func() (string, error)) {
	w.t.Helper()
	if out, err := stopHP(); err != nil {
		w.t.Fatalf("local hostpath plugin: %v\n%s", err, out)
	}
	w.stepTo("stop the agent; nothing left running or mounted")
	w.stopAgent()
	w.checkClean()
	w.t.Logf("%6.1fs  done (%s)", time.Since(w.start).Seconds(), w.version)
}

type nomadWorld struct {
	t         *testing.T
	ctx       context.Context
	dir       string
	bin       string
	state     string
	env       []string // more of volctl's environment
	dataDir   string
	agentAddr string
	nomadAddr string // what volctl talks to: the agent, or the recording proxy in front of it
	version   string
	start     time.Time // when the run began, for the steps' times
	step      string
	agent     *exec.Cmd
	agentOut  *iostreams.SyncBuffer
	agentDone chan error
	before    map[int]bool // processes of the Nomad binary that ran before the agent started
	// secure, when set before startAgent, runs the agent with ACLs and TLS for its HTTP API
	// (nomad_secure_e2e_test.go): the test's own requests and nomad commands then carry its
	// management token and certificates.
	secure *secureNomad
	// persistent, when set before startAgent, runs the agent as a server and a client without
	// -dev, its server's state in its data dir, so that restartAgent keeps it (-dev's server
	// keeps it in memory).
	persistent bool
	// chroot, when set before startAgent, is the exec driver's chroot_env (host path: path in
	// the task's chroot) in place of its default, a copy of most of the host's /bin, /etc, /lib
	// and /usr built for each exec task (tens of seconds on a loaded host, and as many to
	// remove with the test's directory).
	chroot map[string]string

	mu       sync.Mutex
	captures []capture
}

// capture is one Nomad API exchange of volctl's, as internal/cli's contract tests replay it.
type capture struct {
	Step    string `json:"step"`
	Method  string `json:"method"`
	Path    string `json:"path"`
	Request string `json:"request,omitempty"`
	Status  int    `json:"status"`
	Body    string `json:"body"`
}

// stopPluginJob stops the plugin job plugin-hp and waits until its task has stopped. Not
// purged: a purge drops the plugin and its alloc from the server's view at once, while the
// client is still stopping the task, and the agent stopped next left Nomad's plugin process
// serving the root beside a local one started after (and running after the test).
func (w *nomadWorld) stopPluginJob() {
	w.t.Helper()
	w.stopJob("plugin-hp")
}

// stopJob stops job and waits until its tasks have stopped (stopPluginJob).
func (w *nomadWorld) stopJob(job string) {
	w.t.Helper()
	// -detach: the stop's outcome is what the poll below reads. Without it, the nomad CLI
	// monitors the job's deployment and exits 1 when the stop cancels one still in progress
	// (a plugin not yet marked healthy on a loaded machine), though the job stops.
	w.nomad("job", "stop", "-detach", job)
	w.poll(fmt.Sprintf("the tasks of job %q to stop", job), 60*time.Second, func() bool {
		var allocs []struct{ ClientStatus string }
		if !w.getJSON("/v1/job/"+url.PathEscape(job)+"/allocations", &allocs) || len(allocs) == 0 {
			return false
		}
		for _, a := range allocs {
			if a.ClientStatus == "running" || a.ClientStatus == "pending" {
				return false
			}
		}
		return true
	})
}

func (w *nomadWorld) writeFile(name, content string) {
	if err := os.WriteFile(filepath.Join(w.dir, name), []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *nomadWorld) readFile(name string) string {
	b, err := os.ReadFile(filepath.Join(w.dir, name))
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

// volctl runs volctl and fails the test unless it exits with code; it returns stdout and stderr.
func (w *nomadWorld) volctl(code int, args ...string) string {
	w.t.Helper()
	got, out := w.volctlExit(args...)
	if got != code {
		w.t.Fatalf("volctl %s: exit %d, want %d\n%s", strings.Join(args, " "), got, code, out)
	}
	return out
}

// volctlExit runs volctl and returns its exit code, and its stdout and stderr.
func (w *nomadWorld) volctlExit(args ...string) (int, string) {
	w.t.Helper()
	cmd := exec.CommandContext(w.ctx, "volctl", args...)
	cmd.Env = append(append(os.Environ(), "VOLCTL_STATE_DIR="+w.state, "NOMAD_ADDR="+w.nomadAddr, "NO_COLOR=1"), w.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	got := 0
	if ee, ok := err.(*exec.ExitError); ok {
		got = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("volctl %s: %v", strings.Join(args, " "), err)
	}
	return got, stdout.String() + stderr.String()
}

func (w *nomadWorld) nomadCmd(args ...string) *exec.Cmd {
	cmd := exec.CommandContext(w.ctx, w.bin, args...)
	if args[0] == "agent" {
		// Not bound to the test's context: when that ends, the agent is stopped in order
		// (its jobs first), never SIGKILLed with its tasks still running.
		cmd = exec.Command(w.bin, args...)
	}
	env := append([]string{"NOMAD_ADDR=" + w.agentAddr}, w.secure.env()...)
	for _, kv := range os.Environ() {
		// Nothing of the environment may point the agent or the CLI elsewhere.
		if !strings.HasPrefix(kv, "AWS_CA_BUNDLE=") && !strings.HasPrefix(kv, "NOMAD_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	return cmd
}

func (w *nomadWorld) tryNomad(args ...string) (string, error) {
	out, err := w.nomadCmd(args...).CombinedOutput()
	return string(out), err
}

func (w *nomadWorld) nomad(args ...string) string {
	w.t.Helper()
	out, err := w.tryNomad(args...)
	if err != nil {
		w.t.Fatalf("nomad %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// nomadDataDir is the agent's data dir in the world's directory: short, for the sockets in it.
const nomadDataDir = "/n/d"

// startAgent runs nomad agent -dev (w.persistent: a server and client) bound to 127.0.0.1 only, on free ports, with a temporary
// data dir, no update check, no cloud metadata fingerprints, and raw_exec enabled.
func (w *nomadWorld) startAgent() {
	t := w.t
	w.dataDir = filepath.Join(w.dir, nomadDataDir) // alloc_mounts goes beside it
	if err := os.MkdirAll(w.dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	persistentClient, persistentServer := "", ""
	if w.persistent { // what -dev turns on, its server's state kept in data_dir
		persistentClient = "  enabled = true\n"
		persistentServer = "server {\n  enabled          = true\n  bootstrap_expect = 1\n}\n" +
			"advertise {\n  http = \"127.0.0.1\"\n  rpc  = \"127.0.0.1\"\n  serf = \"127.0.0.1\"\n}\n"
	}
	http, rpc, serf := freePort(t), freePort(t), freePort(t)
	w.agentAddr = fmt.Sprintf("http://127.0.0.1:%d", http)
	w.writeFile("agent.hcl", fmt.Sprintf(`bind_addr            = "127.0.0.1"
data_dir             = %q
disable_update_check = true
ports {
  http = %d
  rpc  = %d
  serf = %d
}
client {
  options = {
    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"
  }
%s%s}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
%s%s`, w.dataDir, http, rpc, serf, w.chrootEnv(), persistentClient, w.secure.agentConfig(), persistentServer))
	if w.secure != nil {
		w.agentAddr = fmt.Sprintf("https://127.0.0.1:%d", http)
	}
	w.before = map[int]bool{}
	for _, pid := range w.nomadProcesses() {
		w.before[pid] = true
	}
	w.agentOut = &iostreams.SyncBuffer{}
	w.runAgent()
	t.Cleanup(func() {
		if w.agent != nil {
			// A failed run: stop its jobs first. An agent that stops leaves its tasks running
			// (to reattach to them), and raw_exec's would outlive the test. The test's own
			// context has ended by now.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			w.ctx = ctx
			w.stopAllJobs()
			w.stopAgent()
		}
		for _, pid := range w.ourProcesses() {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Logf("killing pid %d, left by the run: %s", pid, bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("nomad agent log:\n%s", w.agentOut.String())
		}
	})
	w.secure.bootstrap(w)
	w.waitReady()
	w.version = strings.SplitN(strings.TrimSpace(w.nomad("version")), "\n", 2)[0]
}

// runAgent starts the agent of the configuration startAgent wrote (-dev unless w.persistent).
func (w *nomadWorld) runAgent() {
	args := []string{"agent", "-dev", "-config", filepath.Join(w.dir, "agent.hcl")}
	if w.persistent {
		args = slices.Delete(args, 1, 2)
	}
	cmd := w.nomadCmd(args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = w.agentOut, w.agentOut
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.agent, w.agentDone = cmd, make(chan error, 1)
	go func() { w.agentDone <- cmd.Wait() }()
}

// waitReady waits until the agent has a leader and its node is ready.
func (w *nomadWorld) waitReady() {
	w.t.Helper()
	w.poll("the agent to have a leader and a ready node", 60*time.Second, func() bool {
		var nodes []struct{ Status string }
		return w.getJSON("/v1/nodes", &nodes) && len(nodes) == 1 && nodes[0].Status == "ready"
	})
}

// restartAgent kills the agent's process (SIGKILL, as a crash or a supervisor's restart of a
// hung agent: what it was answering goes unanswered; its tasks keep running, and it reattaches
// to them) and starts it again on the same ports and data dir, and waits until it is ready.
// Only a w.persistent agent keeps its state across: -dev's server keeps it in memory.
func (w *nomadWorld) restartAgent() {
	w.t.Helper()
	_ = w.agent.Process.Kill()
	<-w.agentDone
	w.agent = nil
	w.runAgent()
	w.waitReady()
}

// stopAgent stops the agent (SIGINT, then SIGKILL of its process group after 30 s).
// chrootEnv is the client block's chroot_env of w.chroot, "" when unset.
func (w *nomadWorld) chrootEnv() string {
	if len(w.chroot) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("  chroot_env {\n")
	for _, src := range slices.Sorted(maps.Keys(w.chroot)) {
		fmt.Fprintf(&b, "    %q = %q\n", src, w.chroot[src])
	}
	b.WriteString("  }\n")
	return b.String()
}

// chrootOf is a chroot_env holding the program at path and the shared libraries and loader
// ldd says it needs, each at its own path: enough for an exec task that runs it alone.
func chrootOf(t *testing.T, path string) map[string]string {
	t.Helper()
	out, err := exec.Command("ldd", path).CombinedOutput()
	if err != nil {
		t.Skipf("ldd %s: %v (%s): the exec task's chroot cannot be made small", path, err, out)
	}
	env := map[string]string{path: path}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			env[f[2]] = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			env[f[0]] = f[0]
		}
	}
	return env
}

func (w *nomadWorld) stopAgent() {
	if w.agent == nil {
		return
	}
	_ = w.agent.Process.Signal(os.Interrupt)
	select {
	case <-w.agentDone:
	case <-time.After(30 * time.Second):
		w.t.Errorf("the nomad agent did not stop within 30 s of SIGINT: killing its process group")
		_ = syscall.Kill(-w.agent.Process.Pid, syscall.SIGKILL)
		<-w.agentDone
	}
	w.agent = nil
}

// stopAllJobs stops every job and waits (up to a minute) until the client reports their allocs
// stopped. Not purged: a purge drops the allocs from the server's view before the client has
// stopped their tasks.
func (w *nomadWorld) stopAllJobs() {
	var jobs []struct{ ID string }
	if !w.getJSON("/v1/jobs", &jobs) {
		return
	}
	for _, j := range jobs {
		_, _ = w.tryNomad("job", "stop", "-detach", j.ID)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var allocs []struct{ ClientStatus string }
		if !w.getJSON("/v1/allocations", &allocs) {
			return
		}
		running := 0
		for _, a := range allocs {
			if a.ClientStatus == "running" || a.ClientStatus == "pending" {
				running++
			}
		}
		if running == 0 {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// nomadProcesses lists the processes running the Nomad binary (agent, executors, logmon).
func (w *nomadWorld) nomadProcesses() []int {
	want, err := os.Stat(w.bin)
	if err != nil {
		return nil
	}
	var out []int
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, e := range exes {
		if st, err := os.Stat(e); err == nil && os.SameFile(st, want) {
			var pid int
			if _, err := fmt.Sscan(filepath.Base(filepath.Dir(e)), &pid); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// ourProcesses lists what the run started and left: processes of the Nomad binary that were
// not there before the agent started and run with this run's NOMAD_ADDR (the agent and the CLI
// get it from nomadCmd, and the agent's executors and logmon inherit its environment), and
// processes whose command line names the test's directory (the plugin, tasks). Another test's
// Nomad on the same host (this package's corpus tests, another checkout's end-to-end run) is
// not this run's: it was killed by the cleanup and reported as left running.
func (w *nomadWorld) ourProcesses() []int {
	var out []int
	mine := []byte("NOMAD_ADDR=" + w.agentAddr + "\x00")
	for _, pid := range w.nomadProcesses() {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if !w.before[pid] && pid != os.Getpid() && err == nil && bytes.Contains(env, mine) {
			out = append(out, pid)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		var pid int
		if _, serr := fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid); serr != nil || err != nil {
			continue
		}
		if bytes.Contains(b, []byte(w.dir)) && !slices.Contains(out, pid) {
			out = append(out, pid)
		}
	}
	// Zombies hold nothing; a process that is exiting is not left running.
	live := out[:0]
	for _, pid := range out {
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !bytes.Contains(st, []byte(") Z ")) {
			live = append(live, pid)
		}
	}
	return live
}

// checkClean fails for any process or mount the run left: processes of the Nomad binary it
// started, processes whose command line names the test's directory, and mounts under it.
func (w *nomadWorld) checkClean() {
	t := w.t
	for _, pid := range w.ourProcesses() {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		t.Errorf("left running: pid %d: %s", pid, bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], w.dir) {
			t.Errorf("left mounted: %s", f[4])
		}
	}
}

func (w *nomadWorld) getJSON(path string, v any) bool {
	req, err := http.NewRequest(http.MethodGet, w.agentAddr+path, nil)
	if err != nil {
		return false
	}
	resp, err := w.secure.do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	return json.NewDecoder(resp.Body).Decode(v) == nil
}

// poll waits for cond, checking every 250 ms, and fails the test after limit.
func (w *nomadWorld) poll(what string, limit time.Duration, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("waited %s for %s", limit, what)
		}
		select {
		case <-w.ctx.Done():
			w.t.Fatalf("waiting for %s: %v", what, w.ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// proxy puts a recording reverse proxy in front of the agent when VOLCTL_NOMAD_CAPTURE is set,
// and returns the address volctl is to use.
func (w *nomadWorld) proxy() string {
	if os.Getenv("VOLCTL_NOMAD_CAPTURE") == "" {
		return w.agentAddr
	}
	target, _ := url.Parse(w.agentAddr)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Director = func(r *http.Request) {
		r.URL.Scheme, r.URL.Host, r.Host = target.Scheme, target.Host, target.Host
		r.Header.Del("Accept-Encoding") // plain bodies, to store as text
		if r.Body != nil {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.Header.Set("X-Capture-Request", base64.StdEncoding.EncodeToString(body))
		}
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		req, _ := base64.StdEncoding.DecodeString(resp.Request.Header.Get("X-Capture-Request"))
		w.mu.Lock()
		w.captures = append(w.captures, capture{Step: w.step, Method: resp.Request.Method, Path: resp.Request.URL.Path,
			Request: string(req), Status: resp.StatusCode, Body: string(body)})
		w.mu.Unlock()
		return nil
	}
	srv := httptest.NewServer(rp)
	w.t.Cleanup(srv.Close)
	return srv.URL
}

func (w *nomadWorld) saveCaptures() {
	path := os.Getenv("VOLCTL_NOMAD_CAPTURE")
	if path == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b, err := json.MarshalIndent(map[string]any{"nomad_version": w.version, "exchanges": w.captures}, "", "  ")
	if err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.t.Logf("wrote %d captured exchanges to %s", len(w.captures), path)
}

// TestNomadCLIReadsExportedVolume feeds an exported volume file with everything in it (secrets,
// parameters, context, mount flags, topology, capacity) to the real `nomad volume register`,
// pointed at a stand-in for the API: what Nomad's own HCL1 reader decoded arrives as the
// request, and must be the volume as volctl has it.
//
// Opt-in: NOMAD_BIN names a Nomad binary. No agent and no root needed.
func TestNomadCLIReadsExportedVolume(t *testing.T) {
	bin := os.Getenv("NOMAD_BIN")
	if bin == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to check that Nomad's own reader accepts exported volume files")
	}
	dir := hostpathtest.ShortDir(t)
	cfg := csitest.DefaultMemConfig()
	cfg.Topology = &spec.Topology{Segments: map[string]string{"zone": "z1", "rack.example.com/row": "r7"}}
	mem := csitest.NewMountingMemPlugin(t, cfg)
	socket, _ := csitest.Serve(t, csitest.WithServer(mem))
	w := &nomadWorld{t: t, ctx: context.Background(), dir: dir, state: filepath.Join(dir, "state")}
	w.writeFile("rich.hcl", `id = "rich"
name = "rich"
type = "csi"
plugin_id = "mem"
capacity_min = "1GiB"
capacity_max = "2GiB"
capability {
  access_mode     = "multi-node-single-writer"
  attachment_mode = "file-system"
}
capability {
  access_mode     = "single-node-reader-only"
  attachment_mode = "file-system"
}
mount_options {
  fs_type     = "ext4"
  mount_flags = ["noatime", "user=x"]
}
secrets {
  "api-key" = "s3cret"
  token     = "t0k"
}
parameters {
  tier           = "gold"
  "csi.example/x" = "1"
}
`)
	w.volctl(0, "plugin", "register", "--id", "mem", "--socket", socket)
	w.volctl(0, "volume", "create", filepath.Join(dir, "rich.hcl"))
	w.volctl(0, "export", "nomad", "rich", "--include-secrets", "--out", filepath.Join(dir, "out"))

	type put struct {
		body      []byte
		namespace string // the request's: Nomad's for a volume that names none
	}
	got := make(chan put, 1)
	api := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/v1/volume/csi/") {
			select {
			case got <- put{body, r.URL.Query().Get("namespace")}:
			default:
			}
		}
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"Volumes":[{"ID":"rich"}]}`)
	}))
	defer api.Close()
	w.bin, w.agentAddr = bin, api.URL
	// In the namespace the command names (-namespace, as NOMAD_NAMESPACE does), where the job
	// of a group using the volume runs and `volctl nomad register` registers it.
	if out, err := w.tryNomad("volume", "register", "-namespace", "team", filepath.Join(dir, "out", "volume-rich.hcl")); err != nil {
		t.Fatalf("nomad volume register: %v\n%s", err, out)
	}
	var req struct {
		Volumes []struct {
			ID, Name, ExternalID, Namespace, PluginID  string
			RequestedCapacityMin, RequestedCapacityMax int64
			RequestedCapabilities                      []struct{ AccessMode, AttachmentMode string }
			MountOptions                               struct {
				FSType     string
				MountFlags []string
			}
			RequestedTopologies struct {
				Required []struct{ Segments map[string]string }
			}
			Secrets, Parameters, Context map[string]string
		}
	}
	sent := <-got
	if err := json.Unmarshal(sent.body, &req); err != nil {
		t.Fatal(err)
	}
	v := req.Volumes[0]
	if v.Namespace != "" || sent.namespace != "team" {
		t.Errorf("a volume of the default namespace, registered with -namespace team: it names namespace %q, the request %q; want none, and team (where Nomad then puts it)", v.Namespace, sent.namespace)
	}
	ext := strings.TrimSpace(w.volctl(0, "volume", "status", "rich", "-t", "{{.external_id}}"))
	if v.ID != "rich" || v.Name != "rich" || v.ExternalID != ext || v.PluginID != "mem" ||
		v.RequestedCapacityMin != 1<<30 || v.RequestedCapacityMax != 2<<30 {
		t.Errorf("identity and capacity as Nomad read them: %+v", v)
	}
	if len(v.RequestedCapabilities) != 2 || v.RequestedCapabilities[0].AccessMode != "multi-node-single-writer" ||
		v.RequestedCapabilities[1].AccessMode != "single-node-reader-only" {
		t.Errorf("capabilities as Nomad read them: %+v", v.RequestedCapabilities)
	}
	if v.MountOptions.FSType != "ext4" || strings.Join(v.MountOptions.MountFlags, ",") != "noatime,user=x" {
		t.Errorf("mount options as Nomad read them: %+v", v.MountOptions)
	}
	if len(v.RequestedTopologies.Required) != 1 || v.RequestedTopologies.Required[0].Segments["rack.example.com/row"] != "r7" ||
		v.RequestedTopologies.Required[0].Segments["zone"] != "z1" {
		t.Errorf("topology as Nomad read it: %+v", v.RequestedTopologies)
	}
	if v.Secrets["api-key"] != "s3cret" || v.Secrets["token"] != "t0k" || v.Parameters["tier"] != "gold" ||
		v.Parameters["csi.example/x"] != "1" || v.Context["name"] == "" {
		t.Errorf("maps as Nomad read them: secrets %d, parameters %v, context %v", len(v.Secrets), v.Parameters, v.Context)
	}
}

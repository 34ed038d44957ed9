package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// BenchmarkVolumeStatusFloor10k is the floor `volctl volume status` over 10,000 volumes is
// measured against (BenchmarkVolumeStatusList10k): the same rows — each volume's list fields and
// its read and write claim counts — read by a bare SQL query in Go, in process, on a database
// opened once. BENCHMARKS.md gives the ratio.
func BenchmarkVolumeStatusFloor10k(b *testing.B) {
	state := seedVolumes(b, 10_000)
	db := openFloorDB(b, state)
	for b.Loop() {
		volumeStatusFloor(b, db)
	}
}

func openFloorDB(b *testing.B, state string) *sql.DB {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(state, "volctl.db")+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// volumeStatusFloor reads what the list shows, as bare SQL.
func volumeStatusFloor(b *testing.B, db *sql.DB) {
	const query = `SELECT v.id, v.namespace, v.name, v.plugin_id, v.state, v.access_mode, v.attachment_mode, v.capacity_bytes,
		(SELECT count(*) FROM claims c WHERE c.volume_id = v.id AND c.mode = 'read'),
		(SELECT count(*) FROM claims c WHERE c.volume_id = v.id AND c.mode = 'write')
		FROM volumes v ORDER BY v.id`
	rows, err := db.Query(query)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var id, ns, name, plugin, state, acc, att string
		var capacity, readers, writers int64
		if err := rows.Scan(&id, &ns, &name, &plugin, &state, &acc, &att, &capacity, &readers, &writers); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := rows.Close(); err != nil || n != 10_000 {
		b.Fatalf("%d rows, %v", n, err)
	}
}

// BenchmarkVolumeStatusVsFloor10k runs, in each iteration, the floor once, `volctl volume
// status` once and `volctl volume status --json` once, so the three see the same load, and
// reports each one's wall time per op and the ratios to the floor. The processes' CPU time
// (user + system, from the kernel) is reported too: on a shared machine it moves less.
// BENCHMARKS.md quotes this one:
//
//	go test ./cmd/volctl -run '^$' -bench VolumeStatusVsFloor10k -benchtime 10x -count 3
func BenchmarkVolumeStatusVsFloor10k(b *testing.B) {
	benchVolumeStatusVsFloor(b, seedVolumes(b, 10_000))
}

// BenchmarkVolumeStatusVsFloorFingerprinted10k is BenchmarkVolumeStatusVsFloor10k with the
// plugin's fingerprint recorded, as every plugin volctl has reached has it, its node in a
// topology (zone a, each volume's required topology): the list then reads each volume's
// topologies to judge it by the node's (engine.nodeOutside; a plugin without a fingerprint or a
// topology costs none of it). The floor is the same bare SQL:
//
//	go test ./cmd/volctl -run '^$' -bench VolumeStatusVsFloorFingerprinted -benchtime 10x -count 3
func BenchmarkVolumeStatusVsFloorFingerprinted10k(b *testing.B) {
	state := seedVolumes(b, 10_000)
	fingerprintBenchPlugin(b, state, map[string]string{"zone": "a"})
	benchVolumeStatusVsFloor(b, state)
}

// benchVolumeStatusVsFloor is BenchmarkVolumeStatusVsFloor10k's body, on the state seeded.
func benchVolumeStatusVsFloor(b *testing.B, state string) {
	db := openFloorDB(b, state)
	volumeStatusFloor(b, db) // the page cache warm for both sides
	var floor, table, js, tableCPU, jsCPU time.Duration
	for b.Loop() {
		start := time.Now()
		volumeStatusFloor(b, db)
		floor += time.Since(start)
		// The floor's garbage collected now, not on the other core while volctl runs.
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		w, c := timeVolctl(b, state, "volume", "status", "--json")
		js, jsCPU = js+w, jsCPU+c
		w, c = timeVolctl(b, state, "volume", "status")
		table, tableCPU = table+w, tableCPU+c
	}
	reportPerOp(b, benchTotal{"floor-ns/op", floor}, benchTotal{"status-ns/op", table}, benchTotal{"json-ns/op", js},
		benchTotal{"status-cpu-ns/op", tableCPU}, benchTotal{"json-cpu-ns/op", jsCPU})
	reportRatios(b, benchRatio{"status/floor", table, floor}, benchRatio{"json/floor", js, floor})
}

// benchTotal is a metric's time summed over a benchmark's iterations.
type benchTotal struct {
	unit string
	d    time.Duration
}

// reportPerOp reports each total divided by the iterations, in nanoseconds per op.
func reportPerOp(b *testing.B, totals ...benchTotal) {
	for _, t := range totals {
		b.ReportMetric(float64(t.d.Nanoseconds())/float64(b.N), t.unit)
	}
}

// benchRatio is a metric that is one total over another.
type benchRatio struct {
	unit     string
	num, den time.Duration
}

// reportRatios reports each ratio's num/den.
func reportRatios(b *testing.B, ratios ...benchRatio) {
	for _, r := range ratios {
		b.ReportMetric(float64(r.num)/float64(r.den), r.unit)
	}
}

// BenchmarkClaimReleaseThroughput runs claim and release as volctl processes, one after the
// other in each of 1 or 8 concurrent workers (each on its own volume, so none is refused),
// against the built-in plugin with real mounts, and reports lifecycles (claim + release) per
// second across all workers:
//
//	go test ./cmd/volctl -run '^$' -bench ClaimReleaseThroughput -benchtime 5x
func BenchmarkClaimReleaseThroughput(b *testing.B) {
	hostpathtest.RequireMount(b)
	srv := hostpathtest.Start(b, hostpath.Config{Root: hostpathtest.MountDir(b), NodeID: "n1"})
	state := hostpathtest.MountDir(b)
	runVolctl(b, state, "plugin", "register", "--id", "hp", "--socket", srv.Socket)
	const perWorker = 10
	for _, workers := range []int{1, 8} {
		for w := range workers {
			runVolctl(b, state, "volume", "create", writeVolumeSpec(b, fmt.Sprintf("t%d-%d", workers, w), spec.SingleNodeWriter))
		}
		b.Run(fmt.Sprintf("processes-%d", workers), func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				var wg sync.WaitGroup
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						id := fmt.Sprintf("t%d-%d", workers, w)
						for range perWorker {
							runVolctl(b, state, "volume", "claim", id, "--alloc", "a")
							runVolctl(b, state, "volume", "release", id, "--alloc", "a")
						}
					}()
				}
				wg.Wait()
				total += time.Since(start)
			}
			lifecycles := float64(b.N * workers * perWorker)
			b.ReportMetric(lifecycles/total.Seconds(), "lifecycles/s")
		})
	}
}

// BenchmarkClaimReleaseVsBareClient measures `volctl volume claim` and `volctl volume release`
// as processes against a bare CSI client process doing the same RPCs (internal/csi/csitest/
// bareclient: NodeStage + NodePublish, NodeUnpublish + NodeUnstage), both against volctl's own
// plugin served as a separate process (`volctl plugin serve hostpath`, real bind mounts), each
// on its own volume. Every iteration runs the four processes once, interleaved, and reports
// each one's wall and CPU time and the ratios volctl/bare. BENCHMARKS.md quotes it:
//
//	go test ./cmd/volctl -run '^$' -bench ClaimReleaseVsBareClient -benchtime 50x -count 3
func BenchmarkClaimReleaseVsBareClient(b *testing.B) {
	hostpathtest.RequireMount(b)
	volctl, bare := benchVolctl(b), benchBuild(b, "../../internal/csi/csitest/bareclient")
	dir := hostpathtest.MountDir(b)
	socket, state := filepath.Join(dir, "hp.sock"), filepath.Join(dir, "state")
	plugin := exec.Command(volctl, "plugin", "serve", "hostpath", "--socket", socket,
		"--root", filepath.Join(dir, "root"), "--node-id", "n1")
	plugin.Stderr = &limitedBuffer{}
	if err := plugin.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = plugin.Process.Signal(syscall.SIGTERM)
		_ = plugin.Wait()
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the plugin did not make its socket %s within 30 s: %s", socket, plugin.Stderr.(*limitedBuffer).b)
		}
	}
	runVolctl(b, state, "plugin", "register", "--id", "hp", "--socket", socket)
	runVolctl(b, state, "volume", "create", writeVolumeSpec(b, "v", spec.SingleNodeWriter))
	runVolctl(b, state, "volume", "create", writeVolumeSpec(b, "bare", spec.SingleNodeWriter))
	var ext strings.Builder
	cmd := volctlCmd(b, state, "volume", "status", "bare", "-t", "{{.external_id}}")
	cmd.Stdout = &ext
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	bareArgs := []string{"-socket", socket, "-volume", ext.String(),
		"-staging", filepath.Join(dir, "bare-staging"), "-target", filepath.Join(dir, "bare-target")}
	runBare := func(op string) (wall, cpu time.Duration) {
		cmd := exec.Command(bare, append(bareArgs, op)...)
		out := &limitedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("bareclient %s: %v\n%s", op, err, out.b)
		}
		return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var t [4]struct{ wall, cpu time.Duration }
	add := func(i int, wall, cpu time.Duration) { t[i].wall += wall; t[i].cpu += cpu }
	volctlOp := func(op string) (time.Duration, time.Duration) {
		return timeVolctl(b, state, "volume", op, "v", "--alloc", "a")
	}
	for b.Loop() {
		w, c := volctlOp("claim")
		add(0, w, c)
		w, c = runBare("claim")
		add(1, w, c)
		w, c = volctlOp("release")
		add(2, w, c)
		w, c = runBare("release")
		add(3, w, c)
	}
	for i, name := range []string{"claim", "bare-claim", "release", "bare-release"} {
		reportPerOp(b, benchTotal{name + "-ns/op", t[i].wall}, benchTotal{name + "-cpu-ns/op", t[i].cpu})
	}
	reportRatios(b, benchRatio{"claim/bare", t[0].wall, t[1].wall}, benchRatio{"release/bare", t[2].wall, t[3].wall},
		benchRatio{"claim-cpu/bare", t[0].cpu, t[1].cpu}, benchRatio{"release-cpu/bare", t[2].cpu, t[3].cpu})
}

// BenchmarkStartupVsBareClient measures start-up: `volctl version` (fork, exec, package
// initialisation, the command tree, one line printed) against internal/csi/csitest/bareclient
// doing nothing (the gRPC and CSI packages initialised, a client built, no RPC), both built as
// the release is, interleaved:
//
//	go test ./cmd/volctl -run '^$' -bench StartupVsBareClient -benchtime 200x -count 3
func BenchmarkStartupVsBareClient(b *testing.B) {
	volctl, bare := benchVolctl(b), benchBuild(b, "../../internal/csi/csitest/bareclient")
	socket := filepath.Join(b.TempDir(), "none.sock")
	run := func(name string, args ...string) (wall, cpu time.Duration) {
		cmd := exec.Command(name, args...)
		out := &limitedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out.b)
		}
		return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var vw, vc, bw, bc time.Duration
	for b.Loop() {
		w, c := run(volctl, "version")
		vw, vc = vw+w, vc+c
		w, c = run(bare, "-socket", socket, "start")
		bw, bc = bw+w, bc+c
	}
	reportPerOp(b, benchTotal{"volctl-ns/op", vw}, benchTotal{"bare-ns/op", bw}, benchTotal{"volctl-cpu-ns/op", vc}, benchTotal{"bare-cpu-ns/op", bc})
	reportRatios(b, benchRatio{"volctl/bare", vw, bw}, benchRatio{"volctl-cpu/bare", vc, bc})
}

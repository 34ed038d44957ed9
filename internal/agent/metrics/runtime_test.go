package metrics

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// TestProcessMetrics: the volctl_process_ figures are this process's, as the kernel reports
// them elsewhere.
func TestProcessMetrics(t *testing.T) {
	cpuTime := func() float64 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	for deadline := time.Now().Add(10 * time.Second); cpuTime() < 0.06 && time.Now().Before(deadline); {
		// some CPU time to count, in the kernel's 10 ms ticks
	}
	fams := gather(t, New())
	get := func(name string) float64 {
		t.Helper()
		v, ok := value(fams, name, nil)
		if !ok {
			t.Fatalf("%s is not served", name)
		}
		return v
	}
	cpu := cpuTime()
	if got := get("volctl_process_cpu_seconds_total"); got < 0.03 || got > cpu+0.05 {
		t.Errorf("volctl_process_cpu_seconds_total = %v, getrusage says %v", got, cpu)
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	if got := get("volctl_process_open_fds"); got < float64(len(entries)-3) || got > float64(len(entries)+3) {
		t.Errorf("volctl_process_open_fds = %v, /proc/self/fd lists %d", got, len(entries))
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if got := get("volctl_process_max_fds"); got != float64(lim.Cur) {
		t.Errorf("volctl_process_max_fds = %v, getrlimit says %d", got, lim.Cur)
	}
	now := float64(time.Now().UnixNano()) / 1e9
	if got := get("volctl_process_start_time_seconds"); got > now+1 || got < now-3600 {
		t.Errorf("volctl_process_start_time_seconds = %v, now is %v: this test process did not start an hour ago", got, now)
	}
	rss, vsz := get("volctl_process_resident_memory_bytes"), get("volctl_process_virtual_memory_bytes")
	if rss < 1<<20 || vsz < rss {
		t.Errorf("volctl_process_resident_memory_bytes = %v, volctl_process_virtual_memory_bytes = %v", rss, vsz)
	}
}

// TestParseStat: the fields are counted from the last ')', whatever the command name holds;
// a short or garbled line is an error, not zeros.
func TestParseStat(t *testing.T) {
	rest := " S 1 2 3 4 5 6 7 8 9 10 111 222 13 14 15 16 17 18 19999 4096000 300 18446744073709551615"
	for _, comm := range []string{"volctl", "a b", "x) (y", "))", ""} {
		st, err := parseStat([]byte("42 (" + comm + ")" + rest + " 1 2 3\n"))
		if err != nil {
			t.Errorf("comm %q: %v", comm, err)
			continue
		}
		if want := (procStat{utime: 111, stime: 222, startTicks: 19999, vsize: 4096000, rssPages: 300}); st != want {
			t.Errorf("comm %q: %+v, want %+v", comm, st, want)
		}
	}
	for _, bad := range []string{"42 volctl S 1", "42 (volctl) S 1 2 3", "42 (volctl)" + strings.Replace(rest, "222", "x", 1)} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
}

// TestProcessMetricsWithoutProc: a /proc that cannot be read fails the scrape naming it, as
// the client library's process collector does, rather than serving zeros.
func TestProcessMetricsWithoutProc(t *testing.T) {
	old := procDir
	procDir = filepath.Join(t.TempDir(), "proc")
	t.Cleanup(func() { procDir = old })
	_, err := New().reg.gather(context.Background())
	if err == nil || !strings.Contains(err.Error(), "process metrics") || !strings.Contains(err.Error(), procDir) {
		t.Errorf("gather without /proc: %v", err)
	}
}

// TestGoMetrics: the Go runtime's figures are this process's.
func TestGoMetrics(t *testing.T) {
	runtime.GC()
	fams := gather(t, New())
	if v, ok := value(fams, "go_info", map[string]string{"version": runtime.Version()}); !ok || v != 1 {
		t.Errorf("go_info{version=%q} = %v (present %t), want 1", runtime.Version(), v, ok)
	}
	if v, _ := value(fams, "go_goroutines", nil); v < 1 {
		t.Errorf("go_goroutines = %v", v)
	}
	if v, _ := value(fams, "go_threads", nil); v < 1 {
		t.Errorf("go_threads = %v", v)
	}
	alloc, _ := value(fams, "go_memstats_alloc_bytes", nil)
	inuse, _ := value(fams, "go_memstats_heap_inuse_bytes", nil)
	if alloc < 1024 || inuse < alloc {
		t.Errorf("go_memstats_alloc_bytes = %v, go_memstats_heap_inuse_bytes = %v", alloc, inuse)
	}
	gc := fams["go_gc_duration_seconds"].GetMetric()
	if len(gc) != 1 || len(gc[0].GetSummary().GetQuantile()) != 5 || gc[0].GetSummary().GetSampleCount() < 1 ||
		gc[0].GetSummary().GetQuantile()[4].GetValue() <= 0 {
		t.Errorf("go_gc_duration_seconds after a GC: %v", gc)
	}
}

// TestRuntimeMetricsNamedAsTheClientLibrary: every go_ and volctl_process_ family served has
// the name and type the client library's Go and process collectors give it, so dashboards
// built on those read ours.
func TestRuntimeMetricsNamedAsTheClientLibrary(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: namespace}))
	theirs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, mf := range theirs {
		types[mf.GetName()] = mf.GetType().String()
	}
	n := 0
	for name, mf := range gather(t, New()) {
		if !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, namespace+"_process_") {
			continue
		}
		n++
		if got, want := mf.GetType().String(), types[name]; got != want {
			t.Errorf("%s is a %s; the client library's collectors give %q", name, got, want)
		}
	}
	if n != 12 {
		t.Errorf("%d go_ and volctl_process_ families served, docs/metrics.md lists 12", n)
	}
}

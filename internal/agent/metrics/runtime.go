package metrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The Go runtime's and the process's figures, read at each scrape: the subset of the client
// library's Go and process collectors that dashboards use, under the same names and types
// (docs/metrics.md lists them).

// goCollector reads the goroutines, threads, GC pauses and heap of this process.
func goCollector(context.Context) ([]family, error) {
	// ReadMemStats stops the world for microseconds, once a scrape; runtime/metrics would not,
	// but its package initialisation (its table of descriptions) is paid by every volctl
	// process, the very cost this package avoids.
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	threads, _ := runtime.ThreadCreateProfile(nil)

	// Min, quartiles and max of the last (up to 256) pauses, as the client library's summary.
	gc := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
	debug.ReadGCStats(&gc)
	pauses := &summaryValue{sum: gc.PauseTotal.Seconds(), count: uint64(gc.NumGC)}
	for i, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
		v := 0.0
		if gc.NumGC > 0 {
			v = gc.PauseQuantiles[i].Seconds()
		}
		pauses.quantiles = append(pauses.quantiles, quantile{q, v})
	}
	return []family{
		gauge("go_goroutines", "Goroutines that exist now.", float64(runtime.NumGoroutine())),
		gauge("go_threads", "OS threads the Go runtime created.", float64(threads)),
		{name: "go_gc_duration_seconds", help: "Stop-the-world pauses of the garbage collector: min, quartiles and max of the last 256, their total and count.",
			typ: summaryType, metrics: []sample{{sum: pauses}}},
		gauge("go_memstats_alloc_bytes", "Heap bytes allocated to objects not yet freed (runtime.MemStats.Alloc).", float64(ms.Alloc)),
		gauge("go_memstats_heap_inuse_bytes", "Heap bytes in spans in use (runtime.MemStats.HeapInuse).", float64(ms.HeapInuse)),
		{name: "go_info", help: "The Go version volctl was built with.", typ: gaugeType,
			metrics: []sample{{labels: []labelPair{{"version", runtime.Version()}}, value: 1}}},
	}, nil
}

// procDir is /proc; tests point it elsewhere.
var procDir = "/proc"

// userHZ is the unit of /proc's CPU times: clock ticks of 1/100 s on every Linux architecture
// Go supports (USER_HZ, not the kernel's HZ).
const userHZ = 100

// processCollector reads the CPU time, memory and file descriptors of this process from
// /proc/self and getrlimit, under volctl_process_.
type processCollector struct {
	once      sync.Once
	startTime float64
	startErr  error
}

func (p *processCollector) collect(context.Context) ([]family, error) {
	stat, err := os.ReadFile(procDir + "/self/stat")
	if err != nil {
		return nil, fmt.Errorf("process metrics: %w", err)
	}
	st, err := parseStat(stat)
	if err != nil {
		return nil, fmt.Errorf("process metrics: %s/self/stat: %w", procDir, err)
	}
	// The start time does not change: read the boot time once.
	p.once.Do(func() {
		var boot float64
		if boot, p.startErr = bootTime(); p.startErr == nil {
			p.startTime = boot + float64(st.startTicks)/userHZ
		}
	})
	if p.startErr != nil {
		return nil, fmt.Errorf("process metrics: %w", p.startErr)
	}
	fds, err := openFDs()
	if err != nil {
		return nil, fmt.Errorf("process metrics: %w", err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil, fmt.Errorf("process metrics: getrlimit(RLIMIT_NOFILE): %w", err)
	}
	const pfx = namespace + "_process_"
	return []family{
		{name: pfx + "cpu_seconds_total", help: "User and system CPU time the process used, in seconds.", typ: counterType,
			metrics: []sample{{value: float64(st.utime+st.stime) / userHZ}}},
		gauge(pfx+"resident_memory_bytes", "Resident memory of the process, in bytes.", float64(st.rssPages*uint64(os.Getpagesize()))),
		gauge(pfx+"virtual_memory_bytes", "Virtual memory of the process, in bytes.", float64(st.vsize)),
		gauge(pfx+"open_fds", "File descriptors the process has open.", float64(fds)),
		gauge(pfx+"max_fds", "The process's limit on open file descriptors (soft RLIMIT_NOFILE).", float64(lim.Cur)),
		gauge(pfx+"start_time_seconds", "Unix time the process started, in seconds.", p.startTime),
	}, nil
}

// procStat is what volctl reads of /proc/self/stat (proc_pid_stat(5)).
type procStat struct {
	utime, stime, startTicks, vsize, rssPages uint64
}

// parseStat reads the fields after the command name, which is in parentheses and may hold
// spaces and parentheses itself: the fields start after the last ')'.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("no command name in %q", b)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): field n is f[n-3].
	const utime, stime, starttime, vsize, rss = 14 - 3, 15 - 3, 22 - 3, 23 - 3, 24 - 3
	if len(f) <= rss {
		return procStat{}, fmt.Errorf("%d fields, want at least %d", len(f)+2, rss+3)
	}
	var st procStat
	for _, x := range []struct {
		dst *uint64
		i   int
	}{{&st.utime, utime}, {&st.stime, stime}, {&st.startTicks, starttime}, {&st.vsize, vsize}, {&st.rssPages, rss}} {
		n, err := strconv.ParseInt(f[x.i], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("field %d: %w", x.i+3, err)
		}
		*x.dst = uint64(max(n, 0)) // rss is signed in the kernel's format
	}
	return st, nil
}

// bootTime is the btime line of /proc/stat: when the host booted, in Unix seconds.
func bootTime() (float64, error) {
	b, err := os.ReadFile(procDir + "/stat")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s/stat: btime: %w", procDir, err)
			}
			return float64(n), nil
		}
	}
	return 0, fmt.Errorf("%s/stat has no btime line", procDir)
}

// openFDs counts /proc/self/fd's entries, the descriptor reading it included.
func openFDs() (int, error) {
	d, err := os.Open(procDir + "/self/fd")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(256)
		n += len(names)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

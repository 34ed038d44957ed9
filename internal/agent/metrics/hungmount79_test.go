package metrics

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// hungAbove mounts over dir a FUSE file system whose daemon never answers (the test holds
// /dev/fuse and reads nothing from it), as a plugin's own NFS mount over a claim's publish
// directory whose server is gone: a path walk through it (a stat of the target below it) sleeps
// in the kernel until the test's cleanup aborts the connection and unmounts it.
func hungAbove(t *testing.T, dir string) {
	t.Helper()
	if err := hostpathtest.CanMount(); err != nil {
		t.Fatalf("needs root with CAP_SYS_ADMIN to mount: %v", err)
	}
	fuse, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("needs /dev/fuse to make a file system that does not answer: %v", err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", fuse.Fd())
	if err := unix.Mount("volctl-test-hung", dir, "fuse", 0, opts); err != nil {
		fuse.Close()
		t.Fatalf("cannot mount a FUSE file system at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		fuse.Close() // aborts the connection: the sleepers get ENOTCONN
		_ = unix.Unmount(filepath.Clean(dir), unix.MNT_DETACH)
	})
}

// publishedTargetUnderAHungMount is fixture's metrics (claim web-0 of volume db published,
// its target a mount of its own) served on loopback, with a file system that does not answer
// mounted over the target's publish directory since.
func publishedTargetUnderAHungMount(t *testing.T) (addr, target string) {
	t.Helper()
	m, e := fixture(t)
	claims, err := e.Claims(context.Background())
	if err != nil || len(claims) != 1 || claims[0].TargetPath == "" {
		t.Fatalf("claims: %+v, %v", claims, err)
	}
	target = claims[0].TargetPath
	addr = serve(t, m, nil)
	// Scraped once as it was: the scrape answers with the target published.
	if resp, body := httpGet(t, "http://"+addr+"/metrics"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics before the hang: %d\n%s", resp.StatusCode, body)
	}
	hungAbove(t, filepath.Dir(target)) // after serve: its cleanup runs first, freeing the scrape
	return addr, target
}

// TestScrapeIsNotHeldByAHungMountAboveAPublishedTarget: claim web-0's target sits under a file
// system that no longer answers (a plugin's NFS mount over the claim's publish directory whose
// server is gone, or any hard NFS or FUSE mount a path walk to the target crosses). Each scrape
// counts covered targets (ClaimsLooked, markCovered), which asks MountRoots for every published
// target first, a statx of each path with no bound: the statx sleeps in the kernel, so /metrics
// answers nothing at all, past Prometheus's scrape_timeout (10 s) and past the agent's own
// scrapeTimeout, for as long as the server is gone. markCovered bounds only the looks after it
// (viewLookBound, 2 s); the scrape's context is not seen by the statx. Correct: a scrape answers
// within its bound whatever a mount does (the look at the target bounded, said as not answering,
// or the scrape failing with 500 naming it), as `volume status` is bounded against a cover that
// does not answer.
// Found by helper review79 (metrics).
func TestScrapeIsNotHeldByAHungMountAboveAPublishedTarget(t *testing.T) {
	addr, target := publishedTargetUnderAHungMount(t)
	limit := scrapeTimeout + 5*time.Second
	start := time.Now()
	resp, err := (&http.Client{Timeout: limit}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("/metrics with a file system that does not answer mounted above claim web-0's target %s: no answer within %s (%v); "+
			"want the scrape answered within its bound (scrapeTimeout %s), the target said not answering or the scrape failed naming it",
			target, limit, err, scrapeTimeout)
	}
	resp.Body.Close()
	t.Logf("/metrics answered %d in %s", resp.StatusCode, time.Since(start).Round(100*time.Millisecond))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics with a file system that does not answer above a target: %d; want the scrape answered (the covers not said, logged)", resp.StatusCode)
	}
}

// TestScrapesDoNotPileUpGoroutinesOnAHungMount: with claim web-0's target under a file system
// that does not answer, every scrape (one each 15 s from Prometheus, each given up by it after its
// scrape_timeout) leaves a goroutine of the agent's asleep in the kernel for good, in a statx of the
// target (markCovered's MountRoots, unbounded; were it bounded as the looks after it are,
// boundedLooks' goroutine for it is left behind the same way): one more per scrape, each holding
// an OS thread, and, while the handler is held, one of the endpoint's 32 connection slots, until
// /metrics and /healthz cannot be reached at all and the process runs into Go's limit of 10,000
// threads. Correct: a scrape does not start a look at a path while an earlier look at it has
// not come back (it says the target as not answering instead), so the goroutines asleep on one
// hung mount stay at most one whatever the number of scrapes.
// Found by helper review79 (metrics).
func TestScrapesDoNotPileUpGoroutinesOnAHungMount(t *testing.T) {
	addr, target := publishedTargetUnderAHungMount(t)
	const scrapes = 4
	var wg sync.WaitGroup
	for range scrapes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Given up as Prometheus gives a scrape up; the agent's side goes on.
			resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + addr + "/metrics")
			if err == nil {
				resp.Body.Close()
			}
		}()
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	// Past every bound the scrape has: whatever each scrape started and could end has ended.
	time.Sleep(scrapeTimeout + viewLookBoundHere + 2*time.Second)
	asleep := goroutinesIn("unix.Statx")
	if asleep > 1 {
		t.Errorf("after %d scrapes with a file system that does not answer mounted above claim web-0's target %s, %d goroutines are asleep in a statx for good "+
			"(one more per scrape); want at most one look at a path in flight, whatever the number of scrapes", scrapes, target, asleep)
	}
}

// viewLookBoundHere is the engine's bound on a view's looks at covered targets (viewLookBound, 2 s).
const viewLookBoundHere = 2 * time.Second

// goroutinesIn counts the goroutines whose stack holds fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, fn+"(") {
			count++
		}
	}
	return count
}

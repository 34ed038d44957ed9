package store

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// A holder blocked in the kernel (state D: a FUSE daemon that does not answer, an NFS server
// gone) keeps a lock as long as one stopped by a signal, and the wait for it was not bounded: it
// read as running. Now it counts as stuck once two looks find the same thread in the same
// sleep (its context switches unchanged: it has not run between them), and not while it
// sleeps anew between looks, as any disk I/O does.
func TestHolderBlockedInTheKernelIsStuckOnlyInOneSleep(t *testing.T) {
	t.Parallel()
	blocked := func(switches string) LockHolder {
		return LockHolder{Pid: 12, Command: "volctl volume claim v", Blocked: &KernelSleep{Tid: 13, Wchan: "fuse_get_req", switches: switches}}
	}
	watchFor := func(next func(look int) []LockHolder) func(at time.Duration) time.Duration {
		look := 0
		w := NewHolderWatch(func() []LockHolder { look++; return next(look) })
		t0 := time.Now()
		return func(at time.Duration) time.Duration { return w.Look(t0.Add(at)) }
	}

	same := watchFor(func(int) []LockHolder { return []LockHolder{blocked("voluntary_ctxt_switches: 5")} })
	if d := same(0); d != 0 {
		t.Fatalf("first look at a holder in D: stuck %s; want 0 (one look cannot tell a short sleep)", d)
	}
	same(time.Second)
	if d := same(11 * time.Second); d != 10*time.Second {
		t.Fatalf("a holder in the same sleep at every look for 10s: stuck %s; want 10s", d)
	}

	anew := watchFor(func(look int) []LockHolder {
		return []LockHolder{blocked("voluntary_ctxt_switches: " + strconv.Itoa(look))}
	})
	for at := time.Duration(0); at <= 20*time.Second; at += time.Second {
		if d := anew(at); d != 0 {
			t.Fatalf("a holder in D at every look but running between them: stuck %s at %s; want 0", d, at)
		}
	}

	unknown := watchFor(func(int) []LockHolder { return []LockHolder{blocked("")} })
	for at := time.Duration(0); at <= 20*time.Second; at += time.Second {
		if d := unknown(at); d != 0 {
			t.Fatalf("a holder in D whose context switches cannot be read: stuck %s at %s; want 0 (cannot tell)", d, at)
		}
	}

	msg := StuckHolders([]LockHolder{blocked("x")}, 10*time.Second)
	for _, want := range []string{"held by pid 12: volctl volume claim v, blocked in the kernel (uninterruptible sleep in fuse_get_req) for 10s",
		"FUSE daemon", "NFS server", "kill -KILL 12", "volctl reconcile"} {
		if !strings.Contains(msg, want) {
			t.Errorf("StuckHolders = %q; want it to say %q", msg, want)
		}
	}
}

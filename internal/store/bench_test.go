package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// cpuPerOp starts counting the process's CPU time (user and system); the function it returns,
// called after the benchmark loop, reports it per iteration as cpu-ns/op. On a busy shared machine
// wall time mostly measures the neighbours, and fsync latency the disk; CPU time is the store's.
func cpuPerOp(b *testing.B) func() {
	start := cpuTime(b)
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchVolume is a volume with every JSON column populated, as a created volume would have.
func benchVolume(id string) Volume {
	return Volume{
		ID: id, Namespace: "default", Name: id, PluginID: "hostpath", ExternalID: "ext-" + id, CSIName: id,
		State: VolumeReady,
		Capabilities: []spec.Capability{
			{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem},
			{AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: spec.FileSystem},
		},
		MountOptions:       &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime", "nodiratime"}},
		Secrets:            spec.Secrets{"user": "admin", "password": "hunter2"},
		Parameters:         map[string]string{"tier": "fast", "replicas": "3"},
		Context:            map[string]string{"path": "/srv/volumes/" + id},
		AccessibleTopology: []spec.Topology{{Segments: map[string]string{"zone": "a"}}},
		CapacityBytes:      1 << 30, RequestedMin: 1 << 30, RequestedMax: 2 << 30,
	}
}

func insertVolumes(b *testing.B, s *Store, prefix string, n int) {
	b.Helper()
	if err := s.Update(context.Background(), func(tx *Tx) error {
		for i := range n {
			v := benchVolume(fmt.Sprintf("%s-%05d", prefix, i))
			if err := tx.Volumes().Insert(&v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOpen is what every volctl command pays before doing anything: open an existing,
// up-to-date database (connection, pragmas, the one version query) and close it.
func BenchmarkOpen(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "state")
	s, err := Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	insertVolumes(b, s, "v", 100)
	s.Close()
	defer cpuPerOp(b)()
	for b.Loop() {
		s, err := Open(context.Background(), dir)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkOpenBesideALiveWAL is a command's open while another volctl (the agent) has the
// database open and its WAL holds commits, one volume each, short of a checkpoint: SQLite
// reads the WAL index the other keeps, and the pair check (walpair.go) reads the WAL.
func BenchmarkOpenBesideALiveWAL(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "state")
	s, err := Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range 20 {
		if err := s.Update(context.Background(), func(tx *Tx) error {
			v := benchVolume(fmt.Sprintf("v-%05d", i))
			return tx.Volumes().Insert(&v)
		}); err != nil {
			b.Fatal(err)
		}
	}
	if fi, err := os.Stat(s.Path() + "-wal"); err != nil || fi.Size() <= walHeaderSize {
		b.Fatalf("the WAL holds no commits: %v", err)
	}
	defer cpuPerOp(b)()
	for b.Loop() {
		o, err := Open(context.Background(), dir)
		if err != nil {
			b.Fatal(err)
		}
		o.Close()
	}
}

// BenchmarkOpenNew is the first command on a new state dir (and every test's): open a database
// made new, which is given its whole schema, and close it.
func BenchmarkOpenNew(b *testing.B) {
	root := b.TempDir()
	i := 0
	defer cpuPerOp(b)()
	for b.Loop() {
		i++
		s, err := Open(context.Background(), filepath.Join(root, fmt.Sprint(i)))
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkListVolumes lists 10,000 volumes, decoding every JSON column.
func BenchmarkListVolumes(b *testing.B) {
	s := newStore(b)
	insertVolumes(b, s, "v", 10000)
	defer cpuPerOp(b)()
	for b.Loop() {
		var vols []Volume
		if err := s.View(context.Background(), func(tx *Tx) (err error) {
			vols, err = tx.Volumes().List(VolumeFilter{})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		if len(vols) != 10000 {
			b.Fatalf("listed %d volumes", len(vols))
		}
	}
}

// BenchmarkEachBrief10k streams the briefs of 10,000 volumes as the volume table reads them,
// without and with their topologies (BriefTopologies, which a list reads when a plugin's node
// topology judges its volumes).
func BenchmarkEachBrief10k(b *testing.B) {
	s := newStore(b)
	insertVolumes(b, s, "v", 10000)
	for _, c := range []struct {
		name string
		cols BriefColumns
	}{{"shown", BriefShown}, {"shown+topologies", BriefShown | BriefTopologies}} {
		b.Run(c.name, func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				n := 0
				if err := s.View(context.Background(), func(tx *Tx) error {
					return tx.Volumes().EachBrief(c.cols, func(*VolumeBrief) error { n++; return nil })
				}); err != nil || n != 10000 {
					b.Fatalf("%d briefs, %v", n, err)
				}
			}
		})
	}
}

// BenchmarkInsertVolumes inserts 1,000 volumes: in one transaction, and one transaction each
// (each commit is an fsync: synchronous=FULL).
func BenchmarkInsertVolumes(b *testing.B) {
	b.Run("one-tx", func(b *testing.B) {
		s := newStore(b)
		n := 0
		defer cpuPerOp(b)()
		for b.Loop() {
			insertVolumes(b, s, fmt.Sprintf("b%d", n), 1000)
			n++
		}
	})
	b.Run("tx-each", func(b *testing.B) {
		s := newStore(b)
		n := 0
		defer cpuPerOp(b)()
		for b.Loop() {
			for i := range 1000 {
				v := benchVolume(fmt.Sprintf("b%d-%05d", n, i))
				if err := s.Update(context.Background(), func(tx *Tx) error { return tx.Volumes().Insert(&v) }); err != nil {
					b.Fatal(err)
				}
			}
			n++
		}
	})
}

// BenchmarkGetVolume compares a point read through View (read pool, deferred BEGIN) with the same
// read through Update (the one write connection, BEGIN IMMEDIATE), serially and from parallel
// goroutines: the reason reads have their own pool.
func BenchmarkGetVolume(b *testing.B) {
	s := newStore(b)
	insertVolumes(b, s, "v", 1000)
	get := func(tx *Tx) error { _, err := tx.Volumes().Get("v-00500"); return err }
	for _, bm := range []struct {
		name string
		run  func(context.Context, func(*Tx) error) error
	}{{"view", s.View}, {"update", s.Update}} {
		b.Run(bm.name, func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				if err := bm.run(context.Background(), get); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bm.name+"-parallel", func(b *testing.B) {
			defer cpuPerOp(b)()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := bm.run(context.Background(), get); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkAppendEvent appends to a full event log, so every append also trims one row.
func BenchmarkAppendEvent(b *testing.B) {
	s := newStore(b, WithEventLimit(1000))
	if err := s.Update(context.Background(), func(tx *Tx) error {
		for range 1000 {
			if err := tx.Events().Append(&Event{Kind: "claim", VolumeID: "v"}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	defer cpuPerOp(b)()
	if err := s.Update(context.Background(), func(tx *Tx) error {
		for i := 0; i < b.N; i++ {
			if err := tx.Events().Append(&Event{Kind: "claim", VolumeID: "v"}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCheckpoint is the engine's typical write: one claim's new state and an event, in one
// transaction (each commit is an fsync: synchronous=FULL), on a database with some history.
func BenchmarkCheckpoint(b *testing.B) {
	s := newStore(b, WithEventLimit(1000))
	insertVolumes(b, s, "v", 100)
	c := Claim{VolumeID: "v-00050", Alloc: "a", Mode: ClaimWrite, State: ClaimTaken}
	if err := s.Update(context.Background(), func(tx *Tx) error { return tx.Claims().Insert(&c) }); err != nil {
		b.Fatal(err)
	}
	states := []ClaimState{ClaimControllerPublished, ClaimNodeStaged, ClaimPublished, ClaimUnpublishing}
	i := 0
	defer cpuPerOp(b)()
	for b.Loop() {
		c.State = states[i%len(states)]
		i++
		if err := s.Update(context.Background(), func(tx *Tx) error {
			if err := tx.Claims().Update(&c); err != nil {
				return err
			}
			return tx.Events().Append(&Event{Kind: "claim", VolumeID: c.VolumeID, Alloc: c.Alloc, Message: string(c.State)})
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkViewClaims is the engine's typical read: a volume's live claims and its staging.
func BenchmarkViewClaims(b *testing.B) {
	s := newStore(b)
	insertVolumes(b, s, "v", 100)
	if err := s.Update(context.Background(), func(tx *Tx) error {
		c := Claim{VolumeID: "v-00050", Alloc: "a", Mode: ClaimWrite, State: ClaimPublished}
		return tx.Claims().Insert(&c)
	}); err != nil {
		b.Fatal(err)
	}
	defer cpuPerOp(b)()
	for b.Loop() {
		if err := s.View(context.Background(), func(tx *Tx) error {
			if _, err := tx.Claims().ByVolume("v-00050"); err != nil {
				return err
			}
			if _, err := tx.Stagings().Get("v-00050"); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("staging: %v", err)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkViewAfterAWrite is the engine's pattern of a lifecycle: a progress commit on the
// write connection, then a short read on a read connection (a claim's or a release's look
// before its next step), whose page cache the other connection's commit emptied. The View's
// first statement, which takes its snapshot, then reads what it touches afresh from the file.
//
//	go test ./internal/store -run '^$' -bench ViewAfterAWrite -benchtime 2000x -count 3
func BenchmarkViewAfterAWrite(b *testing.B) {
	s := newStore(b, WithEventLimit(1000))
	insertVolumes(b, s, "v", 100)
	get := func(tx *Tx) error { _, err := tx.Volumes().Get("v-00050"); return err }
	defer cpuPerOp(b)()
	for b.Loop() {
		if err := s.UpdateProgress(context.Background(), func(tx *Tx) error {
			return tx.Events().Append(&Event{Kind: "claim", VolumeID: "v-00050"})
		}); err != nil {
			b.Fatal(err)
		}
		if err := s.View(context.Background(), get); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeleteVolumeWithSecrets creates a volume with secrets and deletes it, one durable
// transaction each, in a state of 1,000 volumes, opened as the engine opens it (WithForget):
// the delete pays the secrets' comparison, the event log's pass and, since secrets left the
// state, the truncating WAL checkpoint (securedelete.go).
func BenchmarkDeleteVolumeWithSecrets(b *testing.B) {
	s := newStore(b, forgetNothing)
	insertVolumes(b, s, "v", 1000)
	n := 0
	defer cpuPerOp(b)()
	for b.Loop() {
		v := benchVolume(fmt.Sprintf("s%d", n))
		v.Secrets = spec.Secrets{"password": fmt.Sprintf("secret-%d", n)}
		n++
		if err := s.Update(context.Background(), func(tx *Tx) error { return tx.Volumes().Insert(&v) }); err != nil {
			b.Fatal(err)
		}
		if err := s.Update(context.Background(), func(tx *Tx) error { return tx.Volumes().Delete(v.ID) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFreeWithFullHistory claims a volume and frees the claim, one durable transaction each
// time, with mount flags (noatime) every claim before it had too, the claim history full (its
// limit 1,000 here) so that each free prunes its oldest entry, in a state of 100 volumes with
// secrets, opened as the engine opens it (WithForget). A pruned entry's flags that a kept entry
// (or a live claim) still holds leave nothing the state did not keep: the free pays no
// secrets' comparison for them (noteSecretsUnlessSame).
func BenchmarkFreeWithFullHistory(b *testing.B) {
	const limit = 1000
	s := newStore(b, forgetNothing, WithHistoryLimit(limit))
	insertVolumes(b, s, "v", 100)
	flags := spec.MountFlags{"noatime"}
	free := func(tx *Tx, alloc string) error {
		c := Claim{VolumeID: "v-00050", Alloc: alloc, Mode: ClaimWrite, State: ClaimControllerDetached, MountFlags: flags}
		if err := tx.Claims().Insert(&c); err != nil {
			return err
		}
		return tx.Claims().Free(c.ID, OutcomeReleased)
	}
	if err := s.Update(context.Background(), func(tx *Tx) error {
		for i := range limit {
			if err := free(tx, fmt.Sprintf("fill-%d", i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	n := 0
	defer cpuPerOp(b)()
	for b.Loop() {
		n++
		if err := s.Update(context.Background(), func(tx *Tx) error { return free(tx, fmt.Sprintf("a%d", n)) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventsLogged counts a full log of 10,000 events (the default limit) of 200-byte
// messages, which the dashboard does every refresh to say how many events its view leaves out.
func BenchmarkEventsLogged(b *testing.B) {
	s := newStore(b)
	msg := strings.Repeat("m", 200)
	if err := s.Update(context.Background(), func(tx *Tx) error {
		for range DefaultEventLimit {
			if err := tx.Events().Append(&Event{Kind: "claim", VolumeID: "v", Message: msg}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	defer cpuPerOp(b)()
	for b.Loop() {
		if err := s.View(context.Background(), func(tx *Tx) error {
			n, err := tx.Events().Logged()
			if err == nil && n != DefaultEventLimit {
				err = fmt.Errorf("the log holds %d events, want %d", n, DefaultEventLimit)
			}
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNearStorageRead is what a create's record (engine's nearStorage) adds among 1,000
// volumes of its plugin: the external IDs that may be the answer's spelled otherwise read
// (NearExternalIDs, filtered in SQL: none here) and each compared (spec.SameStorageID), in a
// read transaction; a Get of one volume beside it, as the floor of a transaction.
func BenchmarkNearStorageRead(b *testing.B) {
	s := newStore(b)
	insertVolumes(b, s, "v", 1000)
	for _, bm := range []struct {
		name string
		fn   func(tx *Tx) error
	}{
		{"external-ids", func(tx *Tx) error {
			all, err := tx.Volumes().NearExternalIDs("ext-new")
			for _, o := range all {
				if o.PluginID == "hostpath" && o.ExternalID != "ext-new" && spec.SameStorageID(o.ExternalID, "ext-new") {
					return errors.New("near")
				}
			}
			return err
		}},
		{"get", func(tx *Tx) error { _, err := tx.Volumes().Get("v-00500"); return err }},
	} {
		b.Run(bm.name, func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				if err := s.View(context.Background(), bm.fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOwingVolumes10k is the read `volctl status` makes of the volumes that owe work
// (VolumeFilter.Owing: a create or delete not finished, a controller expansion not answered)
// among 10,000 ready ones, none owing: one scan of the table, beside the brief list the summary
// reads anyway (BenchmarkEachBrief10k).
func BenchmarkOwingVolumes10k(b *testing.B) {
	s := newStore(b)
	insertVolumes(b, s, "v", 10000)
	defer cpuPerOp(b)()
	for b.Loop() {
		if err := s.View(context.Background(), func(tx *Tx) error {
			vols, err := tx.Volumes().List(VolumeFilter{Owing: true})
			if err == nil && len(vols) != 0 {
				b.Fatalf("%d volumes owe work", len(vols))
			}
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSecretValues10k reads the state's secret values (Tx.SecretValues) beside 10,000
// volumes that each have secrets and mount options, as every listing of them does before it
// scrubs their names: "indexed" through volumes_secrets and volumes_mount_options (migration
// 0030), "table" with the two indexes dropped, as before it, each of the two queries then a
// walk of every volume's whole row. In one run, side by side:
//
//	go test ./internal/store -run '^$' -bench SecretValues10k -benchtime 50x -count 3
func BenchmarkSecretValues10k(b *testing.B) {
	for _, c := range []struct {
		name string
		drop bool
	}{{"indexed", false}, {"table", true}} {
		b.Run(c.name, func(b *testing.B) {
			s := newStore(b)
			insertVolumes(b, s, "v", 10000)
			if err := s.Update(context.Background(), func(tx *Tx) error {
				for i := range 10000 { // the claims' history full, of claims without mount flags
					c := Claim{VolumeID: fmt.Sprintf("v-%05d", i), Alloc: "web", Mode: ClaimWrite, AccessMode: spec.SingleNodeWriter,
						AttachmentMode: spec.FileSystem, State: ClaimPublished}
					if err := tx.Claims().Insert(&c); err != nil {
						return err
					}
					if i%10 != 0 { // every tenth live
						if err := tx.Claims().Free(c.ID, OutcomeReleased); err != nil {
							return err
						}
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			if c.drop {
				db := rawDB(b, s.Path())
				for _, index := range secretValueIndexes {
					if _, err := db.Exec("DROP INDEX " + index); err != nil {
						b.Fatal(err)
					}
				}
			}
			defer cpuPerOp(b)()
			for b.Loop() {
				var values []string
				if err := s.View(context.Background(), func(tx *Tx) (err error) {
					values, err = tx.SecretValues()
					return err
				}); err != nil || len(values) != 2 { // admin, hunter2
					b.Fatalf("%q, %v", values, err)
				}
			}
		})
	}
}

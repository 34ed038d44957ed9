package store

import (
	"context"
	"strings"
	"testing"
)

// TestSecretValuesAreReadThroughTheirIndexes: every listing that prints volumes' names reads
// the state's secret values first (SecretValues), each of its reads of volumes and claims a
// SELECT DISTINCT of one column. Walked from the tables, those reads took each row whole: 14
// ms of CPU beside 10,000 volumes and a full claim history (BenchmarkSecretValues10k's
// "table"), more than the list's own read. Each is planned through its index of migration 0030,
// which holds that column alone, and only the rows that have it; and each of those indexes is
// some read's.
func TestSecretValuesAreReadThroughTheirIndexes(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	db := rawDB(t, s.Path())
	used := map[string]bool{}
	read := 0
	for _, q := range secretValueQueries() {
		if !strings.Contains(q.sql, "FROM volumes ") && !strings.Contains(q.sql, "FROM claims ") && !strings.Contains(q.sql, "FROM claim_history ") {
			continue
		}
		read++
		plan := queryPlan(t, db, q.sql)
		index := ""
		for _, name := range secretValueIndexes {
			if strings.Contains(plan, "USING COVERING INDEX "+name) {
				index = name
			}
		}
		if index == "" {
			t.Errorf("%s (%s) is not read through one of %q: %s", q.what, q.sql, secretValueIndexes, plan)
			continue
		}
		used[index] = true
	}
	if read != len(secretValueIndexes) {
		t.Errorf("%d reads of volumes and claims, %d indexes for them", read, len(secretValueIndexes))
	}
	for _, name := range secretValueIndexes {
		if !used[name] {
			t.Errorf("index %s serves none of SecretValues' reads", name)
		}
	}
	// Through them, the values are the same: a volume's secrets and a flag's secret value, a
	// claim's, a freed claim's.
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *Tx) error {
		v := benchVolume("v1")
		if err := tx.Volumes().Insert(&v); err != nil {
			return err
		}
		c := Claim{VolumeID: "v1", Alloc: "a", Mode: ClaimWrite, AccessMode: "single-node-writer", AttachmentMode: "file-system",
			State: ClaimPublished, MountFlags: []string{"pass=claim-live"}}
		if err := tx.Claims().Insert(&c); err != nil {
			return err
		}
		c2 := Claim{VolumeID: "v1", Alloc: "b", Mode: ClaimRead, AccessMode: "single-node-writer", AttachmentMode: "file-system",
			State: ClaimPublished, MountFlags: []string{"pass=claim-freed"}}
		if err := tx.Claims().Insert(&c2); err != nil {
			return err
		}
		return tx.Claims().Free(c2.ID, OutcomeReleased)
	}); err != nil {
		t.Fatal(err)
	}
	var values []string
	if err := s.View(ctx, func(tx *Tx) (err error) {
		values, err = tx.SecretValues()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"admin", "hunter2", "claim-live", "claim-freed"} {
		if !strings.Contains(strings.Join(values, "\x00")+"\x00", want+"\x00") {
			t.Errorf("SecretValues %q lacks %q", values, want)
		}
	}
}

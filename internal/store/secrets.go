package store

import (
	"database/sql"
	"fmt"
	"slices"

	"github.com/volctl/volctl/internal/spec"
)

// SecretValues returns every secret value and mount flag the state holds, each once: the
// volumes' secrets and mount flags, the secrets snapshots (and snapshots being created) keep, the mount flags of live and freed claims and of groups'
// volume requests, and the values of plugins' exec environments, and those of them that left the state while data a
// plugin returned for another record still holds them (kept_secrets, keepHeld). Any of them may have been
// sent to a plugin, and a plugin may echo any of them in a message: the engine scrubs them all
// from what plugins say before it stores or prints it. A mount flag that is one of the words
// volume status shows (suid, dev, exec: spec.ShownMountFlag) is no secret, and not scrubbed; the
// value of a key=value flag whose key names a secret ("password=...") is one of its own
// (spec.MountFlagSecrets), which a plugin echoes without its key. The queries read only these columns,
// each distinct value decoded once, so the cost grows with how many different secrets there
// are rather than with how many volumes and claims share them.
func (tx *Tx) SecretValues() ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(vs ...string) {
		for _, v := range vs {
			if v != "" && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	for _, q := range secretValueQueries() {
		rows, err := tx.query(q.sql)
		cols, err := collect(rows, err, func(sc scanner) (sql.NullString, error) {
			var col sql.NullString
			return col, sc.Scan(&col)
		})
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", q.what, mapBusy(err))
		}
		for _, col := range cols {
			vs, err := q.decode(col)
			if err != nil {
				return nil, fmt.Errorf("read %s: decode: %w", q.what, err)
			}
			if q.flags {
				vs = slices.DeleteFunc(vs, spec.ShownMountFlag)
				for _, flag := range vs {
					add(spec.MountFlagSecrets(flag)...) // "hunter2" of "password=hunter2"
				}
			}
			add(vs...)
		}
	}
	return out, nil
}

// secretValueQuery is one of the reads of SecretValues: a column's distinct values, decoded.
type secretValueQuery struct {
	what, sql string
	decode    func(sql.NullString) ([]string, error)
	flags     bool // mount flags: those spec.Allows shows are no secret (spec.ShownMountFlag)
}

// secretValueQueries are SecretValues' reads. Those of volumes and claims are planned through
// the indexes of migration 0030 (secretValueIndexes), which hold only the rows that have the
// column: a list of 10,000 volumes read each of them whole before
// (TestSecretValuesAreReadThroughTheirIndexes). A function, not a variable: its closures are
// made by the reads that need them, not by every process's initialisation.
func secretValueQueries() []secretValueQuery {
	return []secretValueQuery{
		{"volume secrets", `SELECT DISTINCT secrets FROM volumes WHERE secrets IS NOT NULL`, jsonValues(values), false},
		{"snapshot secrets", `SELECT DISTINCT secrets FROM snapshots WHERE secrets IS NOT NULL`, jsonValues(values), false},
		{"snapshot intent secrets", `SELECT DISTINCT secrets FROM snapshot_creates WHERE secrets IS NOT NULL`, jsonValues(values), false},
		{"volume mount flags", `SELECT DISTINCT mount_options FROM volumes WHERE mount_options IS NOT NULL`,
			jsonValues(func(mo *mountOptionsRow) []string {
				if mo == nil {
					return nil
				}
				return mo.MountFlags
			}), true},
		{"claim mount flags", `SELECT DISTINCT mount_flags FROM claims WHERE mount_flags IS NOT NULL`, jsonValues(listed), true},
		{"past claim mount flags", `SELECT DISTINCT mount_flags FROM claim_history WHERE mount_flags IS NOT NULL`, jsonValues(listed), true},
		{"group mount flags", `SELECT DISTINCT spec FROM groups`, jsonValues(func(g groupRow) []string {
			var flags []string
			for _, v := range g.Volumes {
				if v.MountOptions != nil {
					flags = append(flags, v.MountOptions.MountFlags...)
				}
			}
			return flags
		}), true},
		// Values that left with their record while another's plugin data holds them (keepHeld).
		{"secrets kept for plugin data", `SELECT value FROM kept_secrets`, func(col sql.NullString) ([]string, error) {
			return []string{col.String}, nil
		}, false},
		// Values of earlier exec envs a process started with them may still run with (keepEnvGoing).
		{"values kept of earlier plugin environments", `SELECT DISTINCT value FROM exec_env_kept`, func(col sql.NullString) ([]string, error) {
			return []string{col.String}, nil
		}, false},
		{"plugin environments", `SELECT DISTINCT exec FROM plugins WHERE exec IS NOT NULL`,
			jsonValues(func(e *execRow) []string {
				if e == nil {
					return nil
				}
				return values(e.Env)
			}), false},
	}
}

// secretValueIndexes are migration 0030's indexes, one for each column SecretValues reads from
// volumes and claims.
var secretValueIndexes = []string{"volumes_secrets", "volumes_mount_options", "claims_mount_flags", "claim_history_mount_flags"}

// jsonValues decodes a JSON column into a T and picks the secret values out of it.
func jsonValues[T any](pick func(T) []string) func(sql.NullString) ([]string, error) {
	return func(col sql.NullString) ([]string, error) {
		var v T
		err := decJSON(col, &v)
		return pick(v), err
	}
}

func listed(l []string) []string { return l }

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

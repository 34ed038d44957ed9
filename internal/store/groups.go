package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// GroupState is whether a group's allocs are meant to hold their claims.
type GroupState string

// The group states.
const (
	GroupRunning GroupState = "running"
	GroupStopped GroupState = "stopped"
)

// Group is a group spec that was run, with the count it runs at.
type Group struct {
	Name  string
	Spec  spec.Group // stored with raw mount flags
	Count int
	State GroupState
	// RunErrors are the errors of the allocs the last `group run` could not give their volumes,
	// by alloc name (nil when every alloc got them): a group every alloc of which failed reads
	// as failed, with the reasons (engine.GroupInfo). Kept in the run_errors column (migration
	// 0024; before, in the spec column's JSON), scrubbed of the secrets that leave the state as
	// the other last errors are (forgetGone).
	RunErrors map[string]string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// GroupStore reads and writes groups.
type GroupStore interface {
	// Get returns one group, or an error matching ErrNotFound.
	Get(name string) (Group, error)
	// List returns every group, ordered by name.
	List() ([]Group, error)
	// Put inserts or replaces a group, keeping its creation time; it sets CreatedAt and UpdatedAt.
	Put(g *Group) error
	// Delete removes a group; ErrNotFound if there is none.
	Delete(name string) error
}

// Groups is the group API inside this transaction.
func (tx *Tx) Groups() GroupStore { return groups{tx} }

type groups struct{ tx *Tx }

const groupColumns = `name, spec, count, state, run_errors, created_at, updated_at`

func scanGroup(sc scanner) (Group, error) {
	var (
		g       Group
		specCol string
		runErrs sql.NullString
		c, u    int64
	)
	if err := sc.Scan(&g.Name, &specCol, &g.Count, &g.State, &runErrs, &c, &u); err != nil {
		return Group{}, err
	}
	var r groupRow
	if err := json.Unmarshal([]byte(specCol), &r); err != nil {
		return Group{}, fmt.Errorf("%s: decode: %w", groupWhat(g.Name), err)
	}
	g.Spec = r.spec()
	if runErrs.Valid {
		if err := json.Unmarshal([]byte(runErrs.String), &g.RunErrors); err != nil {
			return Group{}, fmt.Errorf("%s: decode its run errors: %w", groupWhat(g.Name), err)
		}
	}
	g.CreatedAt, g.UpdatedAt = decTime(c), decTime(u)
	return g, nil
}

func groupWhat(name string) string { return fmt.Sprintf("group %q", name) }

func (gs groups) Get(name string) (Group, error) {
	return getOne(gs.tx, groupWhat(name), scanGroup, `SELECT `+groupColumns+` FROM groups WHERE name = ?`, name)
}

func (gs groups) List() ([]Group, error) {
	return listAll(gs.tx, "list groups", scanGroup, `SELECT `+groupColumns+` FROM groups ORDER BY name`)
}

func (gs groups) Put(g *Group) error {
	what := groupWhat(g.Name)
	b, err := json.Marshal(toGroupRow(g.Spec))
	if err != nil {
		return fmt.Errorf("%s: encode: %w", what, err)
	}
	runErrs, err := encodeRunErrors(g.RunErrors)
	if err != nil {
		return fmt.Errorf("%s: encode its run errors: %w", what, err)
	}
	if err := gs.tx.noteSecretsUnlessSame(`SELECT spec IS ? FROM groups WHERE name = ?`, string(b), g.Name); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	now := encTime(gs.tx.now())
	var created int64
	err = gs.tx.queryRow(`
		INSERT INTO groups (`+groupColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, count = excluded.count, state = excluded.state,
			run_errors = excluded.run_errors, updated_at = excluded.updated_at
		RETURNING created_at`,
		g.Name, string(b), g.Count, g.State, runErrs, now, now).Scan(&created)
	if err != nil {
		return wrap(err, what, "")
	}
	g.CreatedAt, g.UpdatedAt = decTime(created), decTime(now)
	return nil
}

// encodeRunErrors is the run_errors column of a group's run errors: NULL for none, else a JSON
// object by alloc, each message cut to MaxStoredMessage.
func encodeRunErrors(runErrors map[string]string) (sql.NullString, error) {
	if len(runErrors) == 0 {
		return sql.NullString{}, nil
	}
	cut := make(map[string]string, len(runErrors))
	for alloc, msg := range runErrors {
		cut[alloc] = spec.Cut(msg, MaxStoredMessage)
	}
	b, err := json.Marshal(cut)
	return sql.NullString{String: string(b), Valid: true}, err
}

// scrubRunErrors is forgetGone's scrub of the groups' run errors: each message is read out of
// its JSON and scrubbed as the other last errors are (a secret JSON escapes, a quote or a '<',
// is found in the message, not in its encoding), and the column written again when one
// changed.
func (tx *Tx) scrubRunErrors(scrub func(string) string) error {
	type row struct{ name, runErrs string }
	rows, err := tx.query(`SELECT name, run_errors FROM groups WHERE run_errors IS NOT NULL`)
	all, err := collect(rows, err, func(sc scanner) (row, error) {
		var r row
		return r, sc.Scan(&r.name, &r.runErrs)
	})
	if err != nil {
		return mapBusy(err)
	}
	for _, r := range all {
		var runErrors map[string]string
		if err := json.Unmarshal([]byte(r.runErrs), &runErrors); err != nil {
			return fmt.Errorf("%s: decode its run errors: %w", groupWhat(r.name), err)
		}
		changed := false
		for alloc, msg := range runErrors {
			if s := scrub(msg); s != msg {
				runErrors[alloc], changed = s, true
			}
		}
		if !changed {
			continue
		}
		enc, err := encodeRunErrors(runErrors)
		if err != nil {
			return fmt.Errorf("%s: encode its run errors: %w", groupWhat(r.name), err)
		}
		if _, err := tx.exec(`UPDATE groups SET run_errors = ? WHERE name = ?`, enc, r.name); err != nil {
			return mapBusy(err)
		}
	}
	return nil
}

// moveGroupRunErrors is migration 0024's step: the run errors an older volctl kept in a group's
// spec column ("run_errors" beside the spec) move to the run_errors column, and the spec
// column is written again as Put writes it.
func moveGroupRunErrors(tx *Tx) error {
	type row struct{ name, spec string }
	rows, err := tx.query(`SELECT name, spec FROM groups WHERE spec LIKE '%"run\_errors"%' ESCAPE '\'`)
	all, err := collect(rows, err, func(sc scanner) (row, error) {
		var r row
		return r, sc.Scan(&r.name, &r.spec)
	})
	if err != nil {
		return wrap(mapBusy(err), "read the groups' specs", "")
	}
	for _, r := range all {
		var (
			g      groupRow
			legacy struct {
				RunErrors map[string]string `json:"run_errors"`
			}
		)
		if err := json.Unmarshal([]byte(r.spec), &g); err != nil {
			return fmt.Errorf("%s: decode: %w", groupWhat(r.name), err)
		}
		if err := json.Unmarshal([]byte(r.spec), &legacy); err != nil {
			return fmt.Errorf("%s: decode: %w", groupWhat(r.name), err)
		}
		b, err := json.Marshal(g)
		if err != nil {
			return fmt.Errorf("%s: encode: %w", groupWhat(r.name), err)
		}
		runErrs, err := encodeRunErrors(legacy.RunErrors)
		if err != nil {
			return fmt.Errorf("%s: encode its run errors: %w", groupWhat(r.name), err)
		}
		if _, err := tx.exec(`UPDATE groups SET spec = ?, run_errors = ? WHERE name = ?`, string(b), runErrs, r.name); err != nil {
			return wrap(mapBusy(err), "move "+groupWhat(r.name)+"'s run errors to their column", "")
		}
	}
	return nil
}

func (gs groups) Delete(name string) error {
	// Its volume requests' mount flags may be secrets (a "password=..."), which leave the
	// state with it: forgotten as a deleted volume's are (review57; before, a purged group's
	// password stayed in the event log, and in the WAL's old pages).
	if err := gs.tx.noteSecrets(); err != nil {
		return fmt.Errorf("%s: %w", groupWhat(name), err)
	}
	res, err := gs.tx.exec(`DELETE FROM groups WHERE name = ?`, name)
	return affected(res, err, groupWhat(name), "")
}

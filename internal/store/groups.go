package store

import (
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
	// as failed, with the reasons (engine.GroupInfo). Kept in the spec column's JSON.
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
}

// Groups is the group API inside this transaction.
func (tx *Tx) Groups() GroupStore { return groups{tx} }

type groups struct{ tx *Tx }

const groupColumns = `name, spec, count, state, created_at, updated_at`

func scanGroup(sc scanner) (Group, error) {
	var (
		g       Group
		specCol string
		c, u    int64
	)
	if err := sc.Scan(&g.Name, &specCol, &g.Count, &g.State, &c, &u); err != nil {
		return Group{}, err
	}
	var r groupRow
	if err := json.Unmarshal([]byte(specCol), &r); err != nil {
		return Group{}, fmt.Errorf("%s: decode: %w", groupWhat(g.Name), err)
	}
	g.Spec, g.RunErrors = r.spec(), r.RunErrors
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
	row := toGroupRow(g.Spec)
	for alloc, msg := range g.RunErrors {
		if row.RunErrors == nil {
			row.RunErrors = make(map[string]string, len(g.RunErrors))
		}
		row.RunErrors[alloc] = spec.Cut(msg, MaxStoredMessage)
	}
	b, err := json.Marshal(row)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", what, err)
	}
	if err := gs.tx.noteSecretsUnlessSame(`SELECT spec IS ? FROM groups WHERE name = ?`, string(b), g.Name); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	now := encTime(gs.tx.now())
	var created int64
	err = gs.tx.queryRow(`
		INSERT INTO groups (`+groupColumns+`) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, count = excluded.count, state = excluded.state,
			updated_at = excluded.updated_at
		RETURNING created_at`,
		g.Name, string(b), g.Count, g.State, now, now).Scan(&created)
	if err != nil {
		return wrap(err, what, "")
	}
	g.CreatedAt, g.UpdatedAt = decTime(created), decTime(now)
	return nil
}

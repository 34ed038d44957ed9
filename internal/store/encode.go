package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// storableTime reports whether encTime keeps t: nanoseconds since 1970 in 64 bits, the years
// 1678 to 2262. Outside them UnixNano wraps around (the year 3000 would read back as 1830).
func storableTime(t time.Time) bool {
	return !t.Before(time.Unix(0, math.MinInt64)) && !t.After(time.Unix(0, math.MaxInt64))
}

// Times are stored as unix nanoseconds; the zero time is stored as 0 and read back as the zero
// time, so "never" survives a round trip.
func encTime(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func decTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

func encBool(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// encJSON encodes v for a JSON column. A nil map, slice or pointer becomes SQL NULL, so nil and
// empty stay distinct (a volume context that is absent is not one that is empty).
func encJSON(v any) (any, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Invalid:
		return nil, nil
	case reflect.Map, reflect.Slice, reflect.Pointer:
		if rv.IsNil() {
			return nil, nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// decJSON decodes a JSON column into dst; NULL leaves dst at its zero value.
func decJSON(col sql.NullString, dst any) error {
	if !col.Valid {
		return nil
	}
	return json.Unmarshal([]byte(col.String), dst)
}

// jsonCol is a JSON column as scanned and where it decodes to.
type jsonCol struct {
	col sql.NullString
	dst any
}

// decJSONs decodes each column in turn with decJSON, stopping at the first error.
func decJSONs(cols ...jsonCol) error {
	for _, c := range cols {
		if err := decJSON(c.col, c.dst); err != nil {
			return err
		}
	}
	return nil
}

// The spec types redact secrets and mount flags when marshalled, which is right for every output
// and wrong for the store, which must persist the raw values. These mirrors carry the raw values;
// nothing else in the store marshals a spec type that holds either.

type mountOptionsRow struct {
	FSType     string   `json:"fs_type"`
	MountFlags []string `json:"mount_flags"`
}

func toMountOptionsRow(m *spec.MountOptions) *mountOptionsRow {
	if m == nil {
		return nil
	}
	return &mountOptionsRow{FSType: m.FSType, MountFlags: m.MountFlags.Plain()}
}

func (r *mountOptionsRow) spec() *spec.MountOptions {
	if r == nil {
		return nil
	}
	return &spec.MountOptions{FSType: r.FSType, MountFlags: spec.MountFlags(r.MountFlags)}
}

type execRow struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

func toExecRow(e *spec.Exec) *execRow {
	if e == nil {
		return nil
	}
	return &execRow{Command: e.Command, Args: e.Args, Env: e.Env.Plain()}
}

func (r *execRow) spec() *spec.Exec {
	if r == nil {
		return nil
	}
	return &spec.Exec{Command: r.Command, Args: r.Args, Env: spec.Secrets(r.Env)}
}

type volumeRequestRow struct {
	Name           string              `json:"name"`
	Type           string              `json:"type"`
	Source         string              `json:"source"`
	PerAlloc       bool                `json:"per_alloc"`
	ReadOnly       bool                `json:"read_only"`
	AccessMode     spec.AccessMode     `json:"access_mode"`
	AttachmentMode spec.AttachmentMode `json:"attachment_mode"`
	MountOptions   *mountOptionsRow    `json:"mount_options"`
}

type groupRow struct {
	Name    string             `json:"name"`
	Count   int                `json:"count"`
	Volumes []volumeRequestRow `json:"volumes"`
	Mounts  []spec.VolumeMount `json:"volume_mounts"`
	// Group.RunErrors were kept here as "run_errors" before migration 0024 gave them a column
	// (moveGroupRunErrors).
}

func toGroupRow(g spec.Group) groupRow {
	r := groupRow{Name: g.Name, Count: g.Count, Mounts: g.Mounts}
	if g.Volumes != nil {
		r.Volumes = make([]volumeRequestRow, len(g.Volumes))
	}
	for i, v := range g.Volumes {
		r.Volumes[i] = volumeRequestRow{
			Name: v.Name, Type: v.Type, Source: v.Source, PerAlloc: v.PerAlloc, ReadOnly: v.ReadOnly,
			AccessMode: v.AccessMode, AttachmentMode: v.AttachmentMode,
			MountOptions: toMountOptionsRow(v.MountOptions),
		}
	}
	return r
}

func (r groupRow) spec() spec.Group {
	g := spec.Group{Name: r.Name, Count: r.Count, Mounts: r.Mounts}
	if r.Volumes != nil {
		g.Volumes = make([]spec.VolumeRequest, len(r.Volumes))
	}
	for i, v := range r.Volumes {
		g.Volumes[i] = spec.VolumeRequest{
			Name: v.Name, Type: v.Type, Source: v.Source, PerAlloc: v.PerAlloc, ReadOnly: v.ReadOnly,
			AccessMode: v.AccessMode, AttachmentMode: v.AttachmentMode,
			MountOptions: v.MountOptions.spec(),
		}
	}
	return g
}

// scanner is what *sql.Row and *sql.Rows have in common.
type scanner interface{ Scan(dest ...any) error }

// collect reads every row with scan, closing rows. A query with no rows gives an empty, non-nil
// slice, so callers can marshal it as [] rather than null.
func collect[T any](rows *cursor, err error, scan func(scanner) (T, error)) (_ []T, err2 error) {
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := rows.close(); err2 == nil && cerr != nil {
			err2 = cerr
		}
	}()
	out := []T{}
	for rows.rows.Next() {
		v, err := scan(rows.rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if rows.s != nil {
		rows.s.rows.Add(int64(len(out)))
	}
	return out, rows.c.check(rows.rows.Err())
}

// getOne reads the one row query returns with scan; an error names what (ErrNotFound when there
// is no row).
func getOne[T any](tx *Tx, what string, scan func(scanner) (T, error), query string, args ...any) (T, error) {
	v, err := scan(tx.queryRow(query, args...))
	if err != nil {
		var zero T
		return zero, wrap(err, what, "")
	}
	return v, nil
}

// listAll reads every row query returns with scan, as collect does; an error says "what: ...".
func listAll[T any](tx *Tx, what string, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := tx.query(query, args...)
	out, err := collect(rows, err, scan)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, mapBusy(err))
	}
	return out, nil
}

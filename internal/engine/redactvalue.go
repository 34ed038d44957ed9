package engine

import (
	"context"
	"reflect"
)

// RedactValue scrubs every secret value and mount flag the state holds (Redactor), and extra,
// from every string in *v (v is a pointer): struct fields, slice and array elements, map keys
// and values, through pointers. Data a plugin returned (a volume's context, external ID and
// topology, a plugin's version, manifest and node ID, snapshot IDs, messages) is kept raw, as
// it is sent back to the plugin and to Nomad; a hostile plugin may have echoed a secret into
// any of it. Commands and the dashboard pass what they are about to show through this. Only
// strings change, so the JSON form of v stays valid whatever the secrets are ("true", "1").
func (e *Engine) RedactValue(ctx context.Context, v any, extra ...string) error {
	redact, err := e.Redactor(ctx, extra...)
	if err != nil {
		return err
	}
	return redactWith(v, redact)
}

// RedactWith replaces every string under v, a pointer, with redact of it: for what a
// scrubber of values cannot do (the Nomad client's masking of a plain user as a word).
func RedactWith(v any, redact func(string) string) error { return redactWith(v, redact) }

// redactWith replaces every string under v, a pointer, with redact of it (scrubValue).
func redactWith(v any, redact func(string) string) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil
	}
	scrubValue(rv.Elem(), memoized(redact))
	return nil
}

// MapStrings replaces every settable string under *v with fn of it, as the scrub does: for what
// a caller rewrites in everything it shows (the dashboard's advice carrying --state-dir).
func MapStrings(v any, fn func(string) string) { _ = redactWith(v, fn) }

// memoized is redact answering a string it scrubbed already from what it answered: a read of
// many records holds the same words many times (a plugin's ID, a state, a mode), and the
// scrub of each is the costly part of the read (BenchmarkDashboard10k).
func memoized(redact func(string) string) func(string) string {
	seen := map[string]string{}
	return func(s string) string {
		if r, ok := seen[s]; ok {
			return r
		}
		r := redact(s)
		seen[s] = r
		return r
	}
}

// scrubValue replaces every settable string under v with fn of it.
func scrubValue(v reflect.Value, fn func(string) string) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			if s := fn(v.String()); s != v.String() {
				v.SetString(s)
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			scrubValue(v.Elem(), fn)
		}
	case reflect.Interface:
		if !v.IsNil() && v.Elem().Kind() == reflect.Pointer {
			scrubValue(v.Elem(), fn)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scrubValue(v.Field(i), fn)
			}
		}
		if v.CanAddr() && !embedsUnexportedText(v.Type()) {
			if u, ok := v.Addr().Interface().(unexportedText); ok {
				u.scrubUnexported(fn)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			scrubValue(v.Index(i), fn)
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(iter.Key())
			scrubValue(k, fn)
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(iter.Value())
			scrubValue(e, fn)
			n.SetMapIndex(k, e)
		}
		v.Set(n)
	}
}

// unexportedText is a type holding text it shows through a method, in fields reflection cannot
// set: scrubValue has it scrub them. VolumeSummary's outsideWords names the plugin's node ID
// and topologies, data a hostile plugin may have echoed a secret into, and `volume status ID`
// printed it raw (TestOutsideTopologyReasonIsScrubbedOfSecrets).
type unexportedText interface{ scrubUnexported(fn func(string) string) }

// embedsUnexportedText reports whether struct type t has the method of unexportedText only by
// an embedded field's (VolumeInfo's, of its VolumeSummary), which the walk scrubs as a field:
// called again on t, it scrubbed the field's text twice, a secret inside the first pass's
// marker masking it again ("share-[R[REDACTED]CTED]":
// TestVolumeStatusOwedUnpublishLineNamesThePluginAsTheRestOfTheStatusDoes).
func embedsUnexportedText(t reflect.Type) bool {
	for i := range t.NumField() {
		if f := t.Field(i); f.Anonymous && f.IsExported() && reflect.PointerTo(f.Type).Implements(unexportedTextType) {
			return true
		}
	}
	return false
}

var unexportedTextType = reflect.TypeFor[unexportedText]()

func (v *VolumeSummary) scrubUnexported(fn func(string) string) {
	v.outsideWords, v.unpublishWay = fn(v.outsideWords), fn(v.unpublishWay)
}

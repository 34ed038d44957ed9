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

// RedactValueKeeping is RedactValue, but a string that is exactly one of own, volctl's own
// identifiers in *v (a volume's ID, its plugin's, the namespace it is registered in), is
// scrubbed of the state's secrets only, not of extra: credentials sent elsewhere (to Nomad),
// which only what answers there can echo. Before, a Nomad password that was also a volume's
// name turned that name into [REDACTED] in every --json field naming it, Nomad's copy of it
// included, where the volume's other output names it as it is; showing volctl's own
// identifier, which it prints everywhere else, shows nothing more. Anywhere else (the credential
// inside other text, in a value Nomad answered) extra is scrubbed as RedactValue does.
func (e *Engine) RedactValueKeeping(ctx context.Context, v any, own []string, extra ...string) error {
	redact, err := e.Redactor(ctx, extra...)
	if err != nil {
		return err
	}
	if len(own) == 0 || len(extra) == 0 {
		return redactWith(v, redact)
	}
	local, err := e.Redactor(ctx)
	if err != nil {
		return err
	}
	keep := make(map[string]bool, len(own))
	for _, id := range own {
		keep[id] = id != ""
	}
	return redactWith(v, func(s string) string {
		if keep[s] {
			return local(s)
		}
		return redact(s)
	})
}

// redactWith replaces every string under v, a pointer, with redact of it (scrubValue).
func redactWith(v any, redact func(string) string) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil
	}
	scrubValue(rv.Elem(), redact)
	return nil
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

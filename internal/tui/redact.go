package tui

import (
	"context"
	"reflect"
)

// redactor is what an engine that knows the state's secrets offers (*engine.Engine does): a
// function that scrubs every secret value and mount flag from text. The dashboard keeps what
// it reads raw nowhere: data a plugin returned (a volume's context and external ID, its
// version and node ID, events about them) is shown as the engine keeps it, and a hostile
// plugin may have echoed a secret into any of it, so every string read is scrubbed before it
// reaches a view.
type redactor interface {
	Redactor(ctx context.Context, extra ...string) (func(string) string, error)
}

// redacted scrubs every string in *v with eng's redactor, when it has one. If the secrets
// cannot be read, the error is returned and nothing is to be shown.
func redacted[T any](ctx context.Context, eng Engine, v *T) error {
	r, ok := eng.(redactor)
	if !ok {
		return nil
	}
	fn, err := r.Redactor(ctx)
	if err != nil {
		return err
	}
	scrubValue(reflect.ValueOf(v).Elem(), fn)
	return nil
}

// scrubValue replaces every settable string under v (struct fields, slice and array elements,
// map keys and values, through pointers and interfaces) with fn of it.
func scrubValue(v reflect.Value, fn func(string) string) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(fn(v.String()))
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
		if v.IsNil() {
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
		if v.CanSet() {
			v.Set(n)
		}
	}
}

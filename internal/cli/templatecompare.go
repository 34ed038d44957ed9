package cli

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strings"
	"text/template"
)

// compareFuncs are text/template's comparison functions (eq, ne, lt, le, gt, ge) with numbers
// compared by their values, whatever their Go types: a -t template gets a JSON number as an
// int64 when it is whole and a float64 when it is not (templateNumbers), so the builtins, which
// refuse to compare an int64 with a float64, failed a health check `{{if gt .probe_latency_ms
// 100.0}}` whenever the latency was whole (0 for a plugin that never answered), and `{{eq
// .probe_latency_ms 0}}` whenever it was not: the same template passed or failed on the value
// measured (TestTemplateComparesNumbersByValue). Anything else compares as the builtins do: a
// string with a string, a bool with a bool (eq and ne), nil with nil; two other kinds are
// "incompatible types for comparison", an error, exit 2.
var compareFuncs = template.FuncMap{
	"eq": func(a any, bs ...any) (bool, error) {
		if len(bs) == 0 {
			return false, errors.New("missing argument for comparison")
		}
		for _, b := range bs {
			if equal, err := templateEqual(a, b); err != nil || equal {
				return equal, err
			}
		}
		return false, nil
	},
	"ne": func(a, b any) (bool, error) {
		equal, err := templateEqual(a, b)
		return !equal, err
	},
	"lt": orderedBy(func(c int) bool { return c < 0 }),
	"le": orderedBy(func(c int) bool { return c <= 0 }),
	"gt": orderedBy(func(c int) bool { return c > 0 }),
	"ge": orderedBy(func(c int) bool { return c >= 0 }),
}

// orderedBy is an ordering comparison: true when ok holds of templateOrder's result.
func orderedBy(ok func(int) bool) func(a, b any) (bool, error) {
	return func(a, b any) (bool, error) {
		c, err := templateOrder(a, b)
		return err == nil && ok(c), err
	}
}

var errIncompatible = errors.New("incompatible types for comparison")

// templateEqual is eq of two values: numbers by value, else as text/template's eq compares them.
func templateEqual(a, b any) (bool, error) {
	if a == nil || b == nil {
		// As the builtin: nil equals nil alone, beside any kind, a number too (a field left
		// out, read through index: `{{if ne (index . "expansion_pending") 0}}`, which failed
		// when nil was taken for a kind: TestTemplateComparesNilAsTheBuiltinDoes).
		return a == nil && b == nil, nil
	}
	na, aNum := templateNumberValue(a)
	nb, bNum := templateNumberValue(b)
	switch {
	case aNum && bNum:
		return na != nil && nb != nil && na.Cmp(nb) == 0, nil // NaN equals nothing
	case aNum || bNum:
		return false, errIncompatible
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb {
		return false, errIncompatible
	}
	if !ta.Comparable() {
		return false, fmt.Errorf("non-comparable type %s", ta)
	}
	return a == b, nil
}

// templateOrder compares two numbers by value, or two strings: -1, 0 or 1.
func templateOrder(a, b any) (int, error) {
	na, aNum := templateNumberValue(a)
	nb, bNum := templateNumberValue(b)
	switch {
	case aNum && bNum:
		if na == nil || nb == nil {
			return 0, errors.New("NaN is not ordered")
		}
		return na.Cmp(nb), nil
	case aNum || bNum:
		return 0, errIncompatible
	}
	sa, aStr := a.(string)
	sb, bStr := b.(string)
	if aStr && bStr {
		return strings.Compare(sa, sb), nil
	}
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return 0, errIncompatible
	}
	return 0, fmt.Errorf("invalid type for comparison: %T", a)
}

// templateNumberValue is v's value when v is a number of any Go numeric type (nil for a NaN,
// which orders against nothing), and whether it is one.
func templateNumberValue(v any) (*big.Float, bool) {
	switch n := v.(type) {
	case int:
		return new(big.Float).SetInt64(int64(n)), true
	case int8:
		return new(big.Float).SetInt64(int64(n)), true
	case int16:
		return new(big.Float).SetInt64(int64(n)), true
	case int32:
		return new(big.Float).SetInt64(int64(n)), true
	case int64:
		return new(big.Float).SetInt64(n), true
	case uint:
		return new(big.Float).SetUint64(uint64(n)), true
	case uint8:
		return new(big.Float).SetUint64(uint64(n)), true
	case uint16:
		return new(big.Float).SetUint64(uint64(n)), true
	case uint32:
		return new(big.Float).SetUint64(uint64(n)), true
	case uint64:
		return new(big.Float).SetUint64(n), true
	case uintptr:
		return new(big.Float).SetUint64(uint64(n)), true
	case float32:
		return floatValue(float64(n)), true
	case float64:
		return floatValue(n), true
	case *big.Int:
		if n == nil {
			return nil, false
		}
		return new(big.Float).SetInt(n), true
	}
	return nil, false
}

func floatValue(f float64) *big.Float {
	if math.IsNaN(f) {
		return nil
	}
	return new(big.Float).SetFloat64(f)
}

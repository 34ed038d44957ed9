package spec

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// A number or bool written where a spec wants a string is sent as Nomad sends it, so that a
// volume registered through volctl and through Nomad reaches the plugin with the same strings
// (`nomad volume register` and `volume create`, command/volume_register_csi.go, read the file
// with HCL1):
//
//   - parameters, secrets and context are decoded into untyped values and then weakly into
//     strings (mapstructure.WeakDecode): true and false become "1" and "0", a whole number its
//     decimal digits (one beyond int64 is an error there: the file is refused; one written with
//     a leading 0 is octal, 0755 -> "493" with a warning, and one with an 8 or 9 is refused),
//     any other number the shortest decimal of its float64, never in exponent form (1.50 -> "1.5",
//     1e3 -> "1000", 1e21 -> "1000000000000000000000");
//   - mount_options' fs_type and mount_flags are decoded straight into strings, which keeps a
//     number's text as written (1.50 -> "1.50") and a bool's ("true").
//
// A number computed rather than written (an HCL2 expression, which HCL1 has not) is taken as
// the number it is.

// numberText matches a number literal as HCL and JSON write it, with its sign.
var numberText = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^-?(0[xX][0-9a-fA-F]+|([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?)$`)
})

// numberLiteral returns the text of expr when it is a number written as a literal.
func (d *decoder) numberLiteral(expr hcl.Expression) (string, bool) {
	r := expr.Range()
	if d.src == nil || r.Start.Byte < 0 || r.End.Byte > len(d.src) || r.Start.Byte >= r.End.Byte {
		return "", false
	}
	t := string(d.src[r.Start.Byte:r.End.Byte])
	for off := r.End.Byte - 1; off >= r.Start.Byte && len(d.lits) > 0; off-- {
		if l, ok := d.lits[off]; ok && off+l.n <= r.End.Byte {
			k := off - r.Start.Byte
			t = t[:k] + l.text + t[k+l.n:] // as written: 0x1F, not the 31 of the rewrite
		}
	}
	t = strings.TrimSpace(t)
	if !numberText().MatchString(t) {
		return "", false
	}
	return t, true
}

var errNotString = errors.New("not a string")

// weakString is a map value as Nomad's weak decoding makes it (see above).
func (d *decoder) weakString(expr hcl.Expression, v cty.Value) (string, error) {
	if v.IsKnown() && !v.IsNull() {
		switch v.Type() {
		case cty.Bool:
			if v.True() {
				return "1", nil
			}
			return "0", nil
		case cty.Number:
			if t, ok := d.numberLiteral(expr); ok {
				n, err := nomadNumber(t)
				if err == nil && octal(t) {
					// Neither the value nor what it becomes: it may be a secret's.
					d.warnf(expr.Range(), "Octal number", "Nomad reads a whole number written with a leading 0 as octal, and volctl sends it as Nomad does (one written 0755 is sent as \"493\"); to send the digits as written, put them in quotes.")
				}
				return n, err
			}
			bf := v.AsBigFloat()
			if i, acc := bf.Int64(); bf.IsInt() && acc == big.Exact {
				return strconv.FormatInt(i, 10), nil
			}
			f, _ := bf.Float64()
			return formatFloat(f)
		}
	}
	if s, ok := toString(v); ok {
		return s, nil
	}
	return "", errNotString
}

// nomadNumber is what Nomad makes of a number literal: a whole number written without a point
// or exponent is an int64, octal when it has a leading 0 (HCL1 parses it with base 0), any
// other a float64. Its errors do not show the number: it may be a secret (the diagnostic's
// snippet shows where it is, masked when it is).
func nomadNumber(t string) (string, error) {
	if !strings.ContainsAny(t, ".eE") || hexNumber(t) {
		i, err := strconv.ParseInt(t, 0, 64)
		if errors.Is(err, strconv.ErrSyntax) {
			return "", fmt.Errorf("not a number Nomad reads: a whole number with a leading 0 is octal there, whose digits are 0 to 7; write it as a string, in quotes, or without the leading 0")
		}
		if err != nil {
			return "", fmt.Errorf("the number is beyond the whole numbers Nomad reads here (64-bit); write it as a string, in quotes")
		}
		return strconv.FormatInt(i, 10), nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return "", fmt.Errorf("the number is beyond the numbers Nomad reads here (64-bit floating point); write it as a string, in quotes")
	}
	return formatFloat(f)
}

// octal reports whether a whole number literal is octal to Nomad: a leading 0 and more digits.
func octal(t string) bool {
	t = strings.TrimPrefix(t, "-")
	return len(t) > 1 && t[0] == '0' && !strings.ContainsAny(t, ".eE") && !hexNumber(t)
}

// hexNumber reports whether a number literal is hexadecimal (0x1F, -0X1f): HCL1 reads it.
func hexNumber(t string) bool {
	t = strings.TrimPrefix(t, "-")
	return len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')
}

func formatFloat(f float64) (string, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("the number is beyond 64-bit floating point; write it as a string, in quotes")
	}
	return strconv.FormatFloat(f, 'f', -1, 64), nil
}

// literalString is a string as Nomad decodes a mount option's or a topology segment's (straight
// into a string): a number as written, and one Nomad cannot read refused, where saying where.
func (d *decoder) literalString(expr hcl.Expression, v cty.Value, where string) (string, bool) {
	if v.Type() == cty.Number {
		if t, ok := d.numberLiteral(expr); ok {
			d.readable(expr, where, t)
			return t, true
		}
	}
	return toString(v)
}

// readable refuses a number literal Nomad cannot read: Nomad decodes the whole file into
// untyped values before it reads mount_options as strings (or any other field), so a whole
// number beyond int64 anywhere, or 08, makes it refuse the file, as in parameters
// (TestMountOptionNumbersNomadRefusesAreRefused, TestNumberFieldsAsNomadReadsThem).
// It reports whether Nomad reads t; where names the field for the error.
func (d *decoder) readable(expr hcl.Expression, where, t string) bool {
	if _, err := nomadNumber(t); err != nil {
		d.errorf(expr.Range(), "Invalid value", "%s %s.", where, err.Error())
		return false
	}
	return true
}

// literalStrings puts the text of each number literal of a list expression into out, the
// list strList decoded from it.
func (d *decoder) literalStrings(expr hcl.Expression, out []string) {
	exprs, diags := hcl.ExprList(expr)
	if diags.HasErrors() || len(exprs) != len(out) {
		return
	}
	for i, e := range exprs {
		if t, ok := d.numberLiteral(e); ok {
			d.readable(e, "In mount_options,", t)
			out[i] = t
		} else if v, diags := e.Value(nil); d.json && !diags.HasErrors() && v.Type() == cty.Bool {
			// Nomad's JSON reader drops a true or false from a list without a word: the plugin
			// got a mount flag from volctl that Nomad never sends for the same file
			// (TestJSONBoolInMountFlagsIsRefused). The native form reads it as the string, as
			// Nomad's HCL reader does.
			d.errorf(e.Range(), "Value Nomad drops", "A true or false in a JSON list is dropped by Nomad's JSON reader: `nomad volume register` sends "+
				"these mount flags without it, and volctl would send it as the flag %q. Write it in quotes to send it, or remove it.", out[i])
		}
	}
}

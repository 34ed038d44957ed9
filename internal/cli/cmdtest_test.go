package cli

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/iostreams"
)

// runCmd executes cmd with args the way root.go wires it (flag errors exit 2), its output
// discarded, and returns its error.
func runCmd(t *testing.T, cmd *cobra.Command, args ...string) error {
	t.Helper()
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err: err} })
	return cmd.Execute()
}

// parseOptions builds a command with newCmd and a runF that captures its options, runs it on
// args, and returns the options its flags and arguments filled (the zero value when it failed
// before running).
func parseOptions[O any](t *testing.T, newCmd func(*Factory, func(*O) error) *cobra.Command, args ...string) (O, error) {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	var got O
	err := runCmd(t, newCmd(NewFactory(ios), func(o *O) error { got = *o; return nil }), args...)
	return got, err
}

// checkHolds checks that the output named what holds every string of want and none of notWant.
func checkHolds(t *testing.T, what, got string, want, notWant []string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(got, s) {
			t.Errorf("%s lacks %q:\n%s", what, s, got)
		}
	}
	for _, s := range notWant {
		if strings.Contains(got, s) {
			t.Errorf("%s contains %q:\n%s", what, s, got)
		}
	}
}

// flagCase is a row of a command's flag table: the arguments, and what they parse to (want) or
// the usage error they give (wantErr).
type flagCase[W any] struct {
	name    string
	args    []string
	want    W
	wantErr string
}

// checkFlagCases runs a command's flag table: each case's arguments are parsed by the command
// newCmd builds, and view turns the options they filled into what the case compares with want
// (it may fail with a usage error of its own, as a spec built from the flags does). A case with
// wantErr must fail with a usage error holding it.
func checkFlagCases[O, W any](t *testing.T, newCmd func(*Factory, func(*O) error) *cobra.Command, cases []flagCase[W],
	view func(t *testing.T, o O) (W, error)) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseOptions(t, newCmd, tt.args...)
			var got W
			if err == nil {
				got, err = view(t, o)
			}
			if expectErr(t, err, tt.wantErr, ExitUsage) {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("parsed %q:\n got %+v\nwant %+v", tt.args, got, tt.want)
			}
		})
	}
}

// expectErr checks err against a table case: with want empty it must be nil; otherwise it must
// contain want and exit with code. It reports whether an error was expected, so that the case
// stops there.
func expectErr(t *testing.T, err error, want string, code int) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) || ExitCode(err) != code {
		t.Fatalf("err = %v (exit %d), want %q (exit %d)", err, ExitCode(err), want, code)
	}
	return true
}

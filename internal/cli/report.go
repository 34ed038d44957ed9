package cli

import "fmt"

// Report prints a command's error to stderr (unless already shown) and returns the exit code.
func (f *Factory) Report(err error) int {
	if err != nil && !isSilent(err) {
		fmt.Fprintf(f.IO.ErrOut, "Error: %v\n", err)
	}
	return ExitCode(err)
}

// Command starthelper is package starthelper alone: internal/agent's tests build it without
// -race and start it as the agent's start helper (startHelperBin), in place of their race-built
// test binary. Its init runs the helper; run any other way it does nothing.
package main

import (
	"fmt"
	"os"

	_ "github.com/volctl/volctl/internal/agent/starthelper"
)

func main() {
	fmt.Fprintln(os.Stderr, "starthelper: run only as the agent's start helper")
	os.Exit(2)
}

package agent

import "github.com/volctl/volctl/internal/agent/starthelper"

// The agent records a plugin's process before the plugin runs (startProcess): it starts the
// start helper (package starthelper, whose init serves it in any binary that links the agent)
// with startHelperEnv set, records its pid and start time, then gives it the go-ahead on a pipe
// (the process's fd 3), and only then does the process exec the plugin's command, keeping its
// pid and start time.
const (
	startHelperEnv  = starthelper.Env
	startHelperArg0 = starthelper.Arg0
)

// startHelperBin is the program startProcess starts as the start helper: the agent's own binary,
// volctl. internal/agent's tests set a program built of package starthelper alone without
// -race (TestMain), which starts in a few milliseconds of CPU where their race-built test
// binary took about 0.18 s, at every plugin start.
var startHelperBin = "/proc/self/exe"

package engine

// FailpointEnv names a checkpoint at which volctl kills itself, for crash tests: after the named
// state is committed ("claim:node-staged", "release:node-detached", "create:intent", ...) or right
// after an RPC returns before its result is committed ("rpc:NodeStageVolume"). Several names may be
// given, comma-separated. A name given as NAME=panic panics there instead, as a bug in volctl
// would (the crash exit code's tests); NAME=panic:TEXT with TEXT in the panic's value (the
// crash report's scrubbing's test).
//
// Failpoints exist only in a binary built with the volctl_failpoints tag (failpoint_on.go), as
// cmd/volctl's crash tests build it. In the default build, release binaries included,
// failpoint is a no-op (failpoint_off.go) and the variable is ignored: a shipped volctl never
// kills itself because of its environment.
const FailpointEnv = "VOLCTL_FAILPOINT"

// failpointHook (an Engine's field) runs, in tests, at every failpoint that engine passes,
// whatever the build: a test pauses one operation there (another volctl's command, another
// Engine, runs meanwhile) and then lets it go on, or lists the failpoints an operation passes
// (pausepairs_test.go). Set on one engine, it sees that engine's operations alone, so tests
// that set it on theirs run in parallel. It is nil outside tests: a failpoint then costs a nil
// check.

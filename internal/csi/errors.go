package csi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Class says what a caller should do about a failed RPC.
type Class int

// The error classes, as DESIGN.md's "Checkpoints" uses them.
const (
	// Final errors will fail the same way again: roll back, do not retry.
	Final Class = iota
	// Retryable errors may pass later: retry with backoff, then leave for reconcile.
	Retryable
	// Ignorable errors mean the work is already done (NOT_FOUND on a teardown RPC).
	Ignorable
)

// String names the class as logs and JSON show it.
func (c Class) String() string {
	switch c {
	case Retryable:
		return "retryable"
	case Ignorable:
		return "ignorable"
	}
	return "final"
}

// Error is a failed CSI RPC, translated at the boundary: which RPC, the gRPC code, the plugin's
// own message (with any secret or mount flag the request carried scrubbed out), what class of
// failure it is, and a hint a person can act on.
type Error struct {
	RPC     string
	Code    codes.Code
	Message string
	Class   Class
	Hint    string
}

// Error reads "NodePublishVolume: FailedPrecondition: <plugin message> (<hint>)".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.RPC)
	b.WriteString(": ")
	b.WriteString(e.Code.String())
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// GRPCStatus lets status.Code and status.FromError see the code through wrapping.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// ErrNotConfirmed is wrapped by ValidateVolumeCapabilities when the plugin does not confirm
// the requested capabilities.
var ErrNotConfirmed = errors.New("capabilities not confirmed")

// ClassOf returns the class of err: an *Error's own class, Final for anything else (including
// a cancelled caller context, which must not be retried on the caller's behalf).
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return Final
}

// IsRetryable reports whether err is worth retrying with backoff.
func IsRetryable(err error) bool { return err != nil && ClassOf(err) == Retryable }

// IsIgnorable reports whether err means the teardown it came from is already done.
func IsIgnorable(err error) bool { return err != nil && ClassOf(err) == Ignorable }

// CodeOf returns the gRPC code of err: OK for nil, the code of an *Error or a gRPC status,
// Canceled or DeadlineExceeded for context errors, Unknown otherwise.
func CodeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.Unknown
}

// ignorableNotFound lists the teardown RPCs whose NOT_FOUND means "already gone".
var ignorableNotFound = map[string]bool{
	RPCNodeUnpublishVolume:       true,
	RPCNodeUnstageVolume:         true,
	RPCControllerUnpublishVolume: true,
	RPCDeleteVolume:              true,
	RPCDeleteSnapshot:            true,
}

// classify applies DESIGN.md's classes.
func classify(rpc string, code codes.Code) Class {
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted, codes.ResourceExhausted:
		return Retryable
	case codes.NotFound:
		if ignorableNotFound[rpc] {
			return Ignorable
		}
	}
	return Final
}

// translate turns an RPC failure into an *Error, or returns the caller's own context error
// when it was the caller who gave up. sensitive holds the request's secret values and mount
// flags, which a careless plugin might echo in its message.
func translate(ctx context.Context, rpc, socket string, timeout time.Duration, err error, sensitive []string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", rpc, ctxErr)
	}
	// A context's Err is set by a timer that may not have run yet when gRPC, watching the same
	// deadline, gives up: a caller's deadline already past is the caller's, not the plugin's.
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return fmt.Errorf("%s: %w", rpc, context.DeadlineExceeded)
	}
	st, _ := status.FromError(err)
	e := &Error{RPC: rpc, Code: st.Code(), Message: scrub(st.Message(), sensitive)}
	e.Class = classify(rpc, e.Code)
	e.Hint = hint(rpc, e.Code, socket, timeout)
	if e.Code == codes.Unavailable {
		// gRPC's dial errors are a transport dump; say what is wrong with the socket instead.
		if msg, h := socketProblem(socket); msg != "" {
			e.Message, e.Hint = msg, h
		}
	}
	return e
}

// socketProblem explains why a socket cannot be dialled, or returns "" if it looks fine.
func socketProblem(socket string) (msg, hint string) {
	fi, err := os.Stat(socket)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("plugin socket %s does not exist", socket), "is the plugin running?"
	case err != nil:
		return fmt.Sprintf("plugin socket %s: %v", socket, err), "check the socket path and its permissions"
	case fi.Mode()&fs.ModeSocket == 0:
		return fmt.Sprintf("plugin socket %s is not a socket", socket), "check the plugin's socket path"
	}
	conn, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Sprintf("nothing is listening on plugin socket %s", socket),
				"is the plugin running? the socket file may be left over from one that died"
		}
		return fmt.Sprintf("plugin socket %s: %v", socket, err), "check the socket's permissions"
	}
	conn.Close()
	return "", ""
}

// minScrubLen keeps scrubbing from shredding a message over a two-letter flag like "ro",
// which carries no credential.
const minScrubLen = 3

// scrub replaces every sensitive value found in msg.
func scrub(msg string, sensitive []string) string {
	for _, s := range sensitive {
		if len(s) >= minScrubLen && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "[REDACTED]")
		}
	}
	return msg
}

// hint says what a person can do about code from rpc, following the error tables of the
// CSI spec for each RPC.
func hint(rpc string, code codes.Code, socket string, timeout time.Duration) string {
	switch code {
	case codes.Unavailable:
		return fmt.Sprintf("is the plugin running and listening on %s?", socket)
	case codes.DeadlineExceeded:
		if IsLong(rpc) {
			return fmt.Sprintf("the plugin did not answer within %s; it may still be working: run `volctl reconcile` later", timeout)
		}
		return fmt.Sprintf("the plugin did not answer within %s; is it overloaded or stuck? check its logs", timeout)
	case codes.Canceled:
		return "the plugin cancelled the call; it can be retried"
	case codes.Unimplemented:
		return fmt.Sprintf("the plugin does not implement %s; check its capabilities", rpc)
	case codes.Unauthenticated:
		return "the plugin rejected the credentials; check the volume's secrets"
	case codes.PermissionDenied:
		return fmt.Sprintf("the credentials in the volume's secrets lack permission for %s", rpc)
	case codes.Internal, codes.Unknown:
		return "the plugin failed internally; check its logs"
	case codes.DataLoss:
		return "the plugin reports data loss; check the storage backend"
	case codes.InvalidArgument:
		return invalidArgumentHint(rpc)
	case codes.NotFound:
		return notFoundHint(rpc)
	case codes.AlreadyExists:
		return alreadyExistsHint(rpc)
	case codes.FailedPrecondition:
		return failedPreconditionHint(rpc)
	case codes.ResourceExhausted:
		return resourceExhaustedHint(rpc)
	case codes.Aborted:
		return abortedHint(rpc)
	case codes.OutOfRange:
		return outOfRangeHint(rpc)
	}
	return ""
}

func invalidArgumentHint(rpc string) string {
	switch rpc {
	case RPCCreateVolume:
		return "the plugin rejected the request; check the spec's parameters, capabilities and capacity, and that a snapshot or clone source suits this volume"
	case RPCControllerExpandVolume, RPCNodeExpandVolume:
		return "the plugin rejected the request; check the requested size and that the volume's capabilities support expansion"
	case RPCDeleteSnapshot:
		return "the snapshot may be part of a group snapshot and cannot be deleted alone"
	case RPCListVolumes, RPCListSnapshots:
		return "the plugin rejected the listing request"
	}
	return "the plugin rejected the request; check the volume's capabilities, parameters, context and mount options"
}

func notFoundHint(rpc string) string {
	switch rpc {
	case RPCCreateVolume:
		return "the snapshot or clone source does not exist; check snapshot_id or clone_id"
	case RPCControllerPublishVolume:
		return "the plugin does not know the volume or the node; check the volume's external_id and the node ID"
	case RPCCreateSnapshot:
		return "the source volume does not exist; check its external_id"
	case RPCDeleteSnapshot, RPCListSnapshots:
		return "the snapshot is already gone"
	case RPCDeleteVolume, RPCNodeUnpublishVolume, RPCNodeUnstageVolume, RPCControllerUnpublishVolume:
		return "the volume is already gone, so there is nothing to undo"
	case RPCNodeGetVolumeStats:
		return "the volume is not at that path; it may not be published"
	}
	return "the plugin does not know this volume; check its external_id"
}

func alreadyExistsHint(rpc string) string {
	switch rpc {
	case RPCCreateVolume:
		return "a volume with this name exists with incompatible parameters"
	case RPCCreateSnapshot:
		return "a snapshot with this name exists for another volume; choose another name"
	case RPCControllerPublishVolume:
		return "the volume is already published to this node with another capability or read-only flag"
	case RPCNodeStageVolume:
		return "the volume is already staged at this path with another capability"
	case RPCNodePublishVolume:
		return "the volume is already published at this target with another capability or read-only flag"
	}
	return "an object with this name exists with incompatible parameters"
}

func failedPreconditionHint(rpc string) string {
	switch rpc {
	case RPCProbe:
		return "the plugin is unhealthy or misses a dependency; check its logs"
	case RPCDeleteVolume:
		return "the volume is in use or has snapshots; release its claims and delete its snapshots first"
	case RPCControllerPublishVolume:
		return "the volume is published to another node and its access mode is single-node (release the other claim first)"
	case RPCNodeStageVolume:
		return "the volume does not support the requested capability, or is still in use elsewhere"
	case RPCNodePublishVolume:
		return "the volume may be published elsewhere with an incompatible mode, or is not staged"
	case RPCNodeUnstageVolume:
		return "the volume is still published from this staging path; unpublish it first"
	case RPCDeleteSnapshot:
		return "the snapshot is in use; delete what was created from it first"
	case RPCControllerExpandVolume:
		return "the volume is published and the plugin cannot expand it online; release its claims first"
	case RPCNodeExpandVolume:
		return "the filesystem cannot be expanded while staged or published"
	}
	return "the plugin is not in a state to do this; check its logs"
}

func resourceExhaustedHint(rpc string) string {
	switch rpc {
	case RPCControllerPublishVolume:
		return "the node reached its max volumes"
	case RPCCreateVolume:
		return "the plugin cannot provision in the requested topology (capacity or quota); free space or relax topology_request"
	case RPCCreateSnapshot:
		return "not enough space for the snapshot; free space and retry"
	}
	return "the plugin ran out of a resource; retry later"
}

func abortedHint(rpc string) string {
	switch rpc {
	case RPCListVolumes, RPCListSnapshots:
		return "the page token is no longer valid; list again from the start"
	case RPCCreateSnapshot, RPCDeleteSnapshot:
		return "another operation on this snapshot is in progress in the plugin; retry shortly"
	}
	return "another operation on this volume is in progress in the plugin; retry shortly"
}

func outOfRangeHint(rpc string) string {
	if rpc == RPCCreateVolume {
		return "requested capacity outside the plugin's supported range (a volume cannot be smaller than its source)"
	}
	return "requested size outside the plugin's supported range"
}

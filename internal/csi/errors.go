package csi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/volctl/volctl/internal/spec"
)

// Class says what a caller should do about a failed RPC.
type Class int

// The error classes, as docs/architecture.md (Error classes) defines them.
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
// own message (with any secret or mount flag the request carried scrubbed out, and control
// characters escaped) or, when the plugin could not be reached, what is wrong with its socket,
// what class of failure it is, and a hint a person can act on.
type Error struct {
	RPC     string
	Code    codes.Code
	Message string
	Class   Class
	Hint    string
	// TimedOut: the call was cut off by volctl's own per-RPC timeout (a DEADLINE_EXCEEDED the
	// plugin returned itself, before that, is not).
	TimedOut bool
	// AnswerUnread: the plugin did the call and answered, but its answer was dropped unread,
	// over gRPC's size limit or not decodable (a string field that is not UTF-8): whatever the
	// RPC does, the plugin did (IsAnswerUnread).
	AnswerUnread bool
	// Answered: the plugin ended the call with this status itself (gRPC read the trailers only
	// a server sends: answerWatcher), so the code is the plugin's word and not gRPC's account of
	// a connection it could not make or lost. An UNAVAILABLE so answered is a plugin that is
	// running and says something it needs is out of reach (IsUnreachable is false for it).
	Answered bool
	// InUse: the plugin answered a code the CSI spec gives, for this RPC, for a volume or
	// snapshot something else holds (inUseCode), and its message gives no other reason (volctl's
	// own plugin's may not mount, hostpathNoMountPrivilege).
	InUse bool
	// NotAccepting: a process listens on the plugin's socket but accepts no connection (hung
	// or stopped), the queue of those waiting for it full: connect(2) says EAGAIN. A plugin so
	// is there, not gone: IsUnreachable is false for it, as for one that hung mid-call
	// (TestStoppedPluginWithAFullAcceptQueueIsNotAPermissionProblem).
	NotAccepting bool
	// Own: the failure is volctl's own, found before the RPC was sent (a question about who
	// answers on the socket that failed its checks): Code is UNKNOWN for its class alone, and
	// is neither recorded (EventCode) nor shown, the plugin having answered no such code.
	Own bool
}

// Error reads "NodePublishVolume: FailedPrecondition: <plugin message> (<hint>)".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.RPC)
	if !e.Own {
		b.WriteString(": ")
		b.WriteString(e.Code.String())
	}
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

// IsTimeout reports whether err is an RPC cut off by volctl's own per-RPC timeout: the plugin
// did not answer in time and may still be working on the request.
func IsTimeout(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.TimedOut
}

// IsDeadlineExceeded reports whether err is an RPC that ran out of time: cut off by volctl's own
// timeout (IsTimeout), or answered DEADLINE_EXCEEDED by the plugin, whose backend timed out.
// Either way the plugin may still be working on the request.
func IsDeadlineExceeded(err error) bool {
	return IsTimeout(err) || err != nil && CodeOf(err) == codes.DeadlineExceeded
}

// IsAnswerUnread reports whether err is a plugin's answer to a call it did, which volctl could
// not use: dropped for its size or as not decodable (Error.AnswerUnread), or without the ID of
// what it made. The
// plugin did what was asked (created the volume, took the snapshot) and volctl cannot see what
// it made. Such an error is final (the same call gets the same answer) but, unlike other final
// errors, does not say that nothing happened.
func IsAnswerUnread(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.AnswerUnread || errors.As(err, new(unreadError))
}

// unreadError is an answer the plugin gave with OK that says nothing volctl can use (no ID).
type unreadError struct{ error }

func (e unreadError) Unwrap() error { return e.error }

// IsUnavailable reports whether err is an UNAVAILABLE: the plugin could not be reached, or it
// answered so itself (IsUnreachable tells them apart).
func IsUnavailable(err error) bool { return err != nil && CodeOf(err) == codes.Unavailable }

// IsUnreachable reports whether err is an UNAVAILABLE the plugin did not answer itself: gRPC
// could not make the connection, or lost it before the plugin's answer came (its socket
// missing, nothing listening, the plugin stopped mid-call).
func IsUnreachable(err error) bool {
	var e *Error
	return IsUnavailable(err) && !(errors.As(err, &e) && (e.Answered || e.NotAccepting))
}

// IsUnimplemented reports whether err is the plugin's UNIMPLEMENTED: it does not do this RPC.
func IsUnimplemented(err error) bool { return err != nil && CodeOf(err) == codes.Unimplemented }

// IsNotFound reports whether err is the plugin's NOT_FOUND, whatever the RPC.
func IsNotFound(err error) bool { return err != nil && CodeOf(err) == codes.NotFound }

// IsAborted reports whether err is an ABORTED answer: of a list RPC, a starting_token the
// plugin no longer honours.
func IsAborted(err error) bool { return err != nil && CodeOf(err) == codes.Aborted }

// DidNothing reports whether err is the plugin's own answer that it did not act on the call:
// ABORTED, which the CSI spec gives for an operation already pending for the volume, the request
// not carried out. Any other failure of an attempt that reached the plugin may have done what it
// asks (an answer lost, a timeout, an UNAVAILABLE mid-call), and a retry after one counts it.
func DidNothing(err error) bool {
	var e *Error
	return IsAborted(err) && errors.As(err, &e) && e.Answered
}

// IsAlreadyExists reports whether err is the plugin's ALREADY_EXISTS.
func IsAlreadyExists(err error) bool { return err != nil && CodeOf(err) == codes.AlreadyExists }

// IsSizeRefused reports whether err is a plugin's refusal of the size or request asked
// (OUT_OF_RANGE, INVALID_ARGUMENT): answered without doing anything, and a retry gets it again.
func IsSizeRefused(err error) bool {
	return err != nil && (CodeOf(err) == codes.OutOfRange || CodeOf(err) == codes.InvalidArgument)
}

// IsFailedPrecondition reports whether err is the plugin's FAILED_PRECONDITION: the object is
// not in a state to do this.
func IsFailedPrecondition(err error) bool {
	return err != nil && CodeOf(err) == codes.FailedPrecondition
}

// InUse reports whether err is a plugin's answer that the CSI spec gives for a volume or snapshot
// something else holds (Error.InUse). The command line's exit code for it is a conflict's, as
// for the refusals volctl makes itself on the same grounds.
func InUse(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.InUse
}

// inUseCode reports whether the CSI spec gives code, answered to rpc, for a volume or snapshot
// something else holds: ControllerPublishVolume FAILED_PRECONDITION (published to another node,
// its access mode single-node) or ALREADY_EXISTS (published to this node incompatibly, not by
// this request), NodeStageVolume FAILED_PRECONDITION (exceeds the volume's capabilities: staged
// for another node or path, no MULTI_NODE mode), and DeleteVolume, DeleteSnapshot and
// ControllerExpandVolume FAILED_PRECONDITION (in use). Not NodePublishVolume's
// FAILED_PRECONDITION, which the spec gives for a missing staging path too.
func inUseCode(rpc string, code codes.Code) bool {
	switch rpc {
	case RPCControllerPublishVolume:
		return code == codes.FailedPrecondition || code == codes.AlreadyExists
	case RPCNodeStageVolume, RPCDeleteVolume, RPCDeleteSnapshot, RPCControllerExpandVolume:
		return code == codes.FailedPrecondition
	}
	return false
}

// IsRefusedCredentials reports whether err is the plugin's refusal of the credentials sent, or
// of their absence: UNAUTHENTICATED or PERMISSION_DENIED, the codes the RPC table's hints count
// as such. Not INVALID_ARGUMENT, which a plugin answers for any field it refuses (an ID it no
// longer parses): advised to send the secrets again, the user was refused the same
// (TestReconcileInvalidArgumentIsNotASecretsRefusal).
func IsRefusedCredentials(err error) bool {
	switch CodeOf(err) {
	case codes.Unauthenticated, codes.PermissionDenied:
		return true
	}
	return false
}

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

// EventCode is the code an event, or a claim's last_code, records of err, an operation's
// failure: the gRPC code the RPC ended with (the plugin's answer, or gRPC's own: a deadline, a
// cancel, an answer past the size limit), "" for a failure volctl found itself, which
// docs/json.md says carries none: an answer given with OK that it could not use (no ID: an
// unreadError), or a refusal of its own. CodeOf's UNKNOWN for those was recorded as if the
// plugin had answered it, and a script taking `.code != null` for the plugin's refusal read a
// volume the plugin made as nothing made (TestUnreadableCreateAnswerEventHasNoCode).
func EventCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		if e.Own {
			return ""
		}
		return e.Code.String()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return CodeOf(err).String()
	}
	if st, ok := status.FromError(err); ok {
		return st.Code().String()
	}
	return ""
}

// classify applies the classes of docs/architecture.md (Error classes).
func classify(rpc string, code codes.Code) Class {
	switch code {
	case codes.ResourceExhausted:
		if rpcTable[rpc].exhaustedFinal {
			return Final
		}
		return Retryable
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		return Retryable
	case codes.NotFound:
		if rpcTable[rpc].notFoundDone {
			return Ignorable
		}
	}
	return Final
}

// translate turns an RPC failure into an *Error, or returns the caller's own context error
// when it was the caller who gave up. text makes the plugin's message fit to show: it scrubs
// the secret values and mount flags a careless or hostile plugin might echo in it. req is
// the request sent; deadline is the one its timeout set on the call.
// reached says the call got a stream on a connection whose gRPC handshake was done (gRPC's
// Peer call option was filled): its error is then the plugin's answer or a connection lost
// mid-call, never a handshake that failed, whatever its message says. answered says the plugin
// ended the call with its own status (answerWatcher): no socket or connection is then to blame.
// plugin names the plugin in the hint (`plugin "mem"`, or "the plugin").
func translate(ctx context.Context, rpc, plugin, socket string, timeout time.Duration, deadline time.Time, err error, text func(string) string, req proto.Message, reached, answered bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", rpc, ctxErr)
	}
	// A context's Err is set by a timer that may not have run yet when gRPC, watching the same
	// deadline, gives up: a caller's deadline already past is the caller's, not the plugin's.
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return fmt.Errorf("%s: %w", rpc, context.DeadlineExceeded)
	}
	st, _ := status.FromError(err)
	e := &Error{RPC: rpc, Code: st.Code(), Message: text(st.Message()), Answered: answered}
	e.Class = classify(rpc, e.Code)
	e.TimedOut = e.Code == codes.DeadlineExceeded && !deadline.IsZero() && !time.Now().Before(deadline)
	e.Hint = hint(rpc, e.Code, plugin, socket, timeout)
	e.InUse = answered && inUseCode(rpc, e.Code)
	if e.Code == codes.FailedPrecondition && strings.HasPrefix(st.Message(), hostpathNoMountPrivilege) {
		// volctl's own plugin says why, and the spec's reason for the code is another.
		e.InUse = false
		h := hostpathNoMountPrivilegeHint
		switch {
		case strings.Contains(st.Message(), hostpathRunsAsRoot):
			h = hostpathRootWithoutCapabilityHint
		case os.Geteuid() != 0:
			h = hostpathNoMountPrivilegeNotRootHint
		}
		e.Hint = strings.ReplaceAll(h, "{plugin}", plugin)
	}
	// gRPC's dial and handshake errors are a transport dump; say what is wrong with the socket
	// instead. The dump itself stays in the RPC trace (--verbose). The code, and so the class,
	// stay what gRPC said.
	switch {
	case e.Code == codes.Unavailable && answered:
		// The plugin is running and answered: "is the plugin running and listening on ...?"
		// would send the user to a socket that works.
		e.Hint = strings.ReplaceAll(pluginUnavailableHint, "{plugin}", plugin)
	case e.Code == codes.Unavailable:
		if msg, h, hung := socketProblem(socket); msg != "" {
			e.Message, e.Hint, e.NotAccepting = msg, h, hung
		} else if !reached {
			// gRPC gives no typed account of a failed handshake: its transport's words are
			// all there is (handshakeProblem), read only for a call that never got a stream.
			if msg, h := handshakeProblem(socket, st.Message()); msg != "" {
				e.Message, e.Hint = msg, h
			}
		} else if strings.HasPrefix(st.Message(), grpcProtocolError) {
			// Not the plugin unreachable: it answered, and broke HTTP/2 doing so. The answer's
			// code is lost with it (megabytes of status details come with an error), so the
			// plugin may or may not have done the call: it stays a lost answer, retryable, left
			// for reconcile; but no socket is to blame.
			e.Message = "the plugin answered, but in a way that breaks HTTP/2: gRPC dropped the answer unread and closed the connection (" + e.Message +
				"); most likely metadata past the 16 MiB of headers and trailers gRPC's client reads (megabytes of status details, say)"
			e.Hint = "the answer's code is lost with it, so the plugin may have done the call, which is kept for `volctl reconcile` as after a lost answer; " +
				"the plugin answers the same way every time: report it to the plugin's authors"
		}
	case e.Code == codes.ResourceExhausted && grpcTooLarge().MatchString(st.Message()):
		// Not the plugin out of a resource: a message over gRPC's size limit, which the same
		// call would send or get again. Final, whatever RESOURCE_EXHAUSTED usually means.
		e.Class = Final
		e.Message, e.Hint, e.AnswerUnread = tooLarge(rpc, st.Message(), req)
	case e.Code == codes.Internal:
		// Not the plugin failing: a message that could not pass between the two protobufs.
		// Final (the same message fails the same way); an answer to a call the plugin did
		// is unread.
		switch notEncoded(st.Message(), req) {
		case answerNotEncoded:
			if reached {
				e.Message = "the plugin did the call but its answer cannot be decoded (" + e.Message + ")"
				e.Hint = "the answer breaks the CSI protobuf (a string field that is not UTF-8, say) and a retry gets the same one; report it to the plugin's authors"
				e.AnswerUnread = true
			}
		case requestNotEncoded:
			e.Message = "volctl's request cannot be encoded, and was not sent (" + e.Message + ")"
			e.Hint = "a value it carries is not UTF-8, as CSI's strings must be: a path, secret, parameter or ID given as other bytes; give it in UTF-8"
		}
	case e.Code == codes.DeadlineExceeded && !reached:
		// The call never reached a plugin: the timeout ran out while gRPC was still connecting
		// (its message says "while waiting for connections to become ready"; a plugin may
		// say the same, which reached tells apart).
		if msg, h, hung := socketProblem(socket); msg != "" {
			e.Message, e.Hint, e.NotAccepting = msg, h, hung
		} else {
			e.Message = fmt.Sprintf("something accepted the connection on %s but did not complete the gRPC handshake within %s", socket, timeout)
			e.Hint = "a hung plugin, or not a CSI plugin"
		}
	case e.Code == codes.DeadlineExceeded && !e.TimedOut:
		// The plugin's own DEADLINE_EXCEEDED, answered before volctl's timeout: something
		// behind it timed out, not the plugin's answer to volctl (the hints for that say it
		// "did not answer within" the timeout, which it did).
		e.Hint = strings.ReplaceAll(pluginDeadlineHint, "{plugin}", plugin)
	}
	e.Hint = namedHint(e.Hint, plugin)
	return e
}

// namedHint is a hint that names the plugin that answered (`plugin "mem"`, Config.Name): one
// that does not already is led by the name. The error of an RPC is read where the command that
// sent it reports it, and a claim's or release's names the volume, whose plugin the user would
// otherwise have to look up; most of the spec's hints say "the plugin" (a NodeStageVolume
// ALREADY_EXISTS, a PermissionDenied, the code 99 no one defines), and a user with several plugins, or
// one answering for another on its socket, could not tell from the error which one to look at
// (TestCodeMatrix: every cell's error names the plugin). A client given no name ("the plugin")
// leaves the hint as it is.
func namedHint(h, plugin string) string {
	if plugin == unnamedPlugin || strings.Contains(h, plugin) {
		return h
	}
	if h == "" {
		return plugin
	}
	return plugin + ": " + h
}

// hostpathNoMountPrivilege opens the FAILED_PRECONDITION message of volctl's own plugin
// (internal/hostpath's mountStatus) when it may not mount or unmount: run by a user who is not
// root, or in a container without CAP_SYS_ADMIN. The hint for the code, from the CSI spec's
// tables (a capability the volume lacks, a volume in use elsewhere, one not staged), named
// another cause and nothing to do; hostpathNoMountPrivilegeHint replaces it
// (TestHostpathWithoutMountPrivilegeSaysSo and ...SaysWhetherRoot, which run the plugin, hold
// the two packages' words together). Another plugin that answers so is told the same, which is
// what it says. The plugin says whether it runs as root (hostpathRunsAsRoot): root without
// CAP_SYS_ADMIN, in a container without --privileged or a user namespace (`unshare -U -r`),
// is not helped by sudo, and is told what is (hostpathRootWithoutCapabilityHint).
const hostpathNoMountPrivilege = "hostpath: bind-mounting needs root (CAP_SYS_ADMIN)"

const hostpathRunsAsRoot = "the plugin runs as root (uid 0) without CAP_SYS_ADMIN"

const hostpathNoMountPrivilegeHint = "{plugin} may not mount: volctl's own plugin bind-mounts, which needs CAP_SYS_ADMIN; " +
	"start `volctl plugin serve hostpath` as root (sudo), then run the command again"

// hostpathNoMountPrivilegeNotRootHint is hostpathNoMountPrivilegeHint said to a volctl that is
// not root itself: the plugin started again as root alone answers root alone (its socket is
// made root's), and the command run again by the same user was refused at the socket
// (TestNonRootClaimNoMountAdviceWorksWhenFollowed); docs/troubleshooting.md (1) says the same.
const hostpathNoMountPrivilegeNotRootHint = "{plugin} may not mount: volctl's own plugin bind-mounts, which needs CAP_SYS_ADMIN; " +
	"run both as root, `volctl plugin serve hostpath` and volctl itself (sudo): root's plugin answers root alone, " +
	"and root's volctl keeps its own state dir, where the plugin is registered and the volume created again"

const hostpathRootWithoutCapabilityHint = "{plugin} may not mount: volctl's own plugin bind-mounts, which needs CAP_SYS_ADMIN, " +
	"and it runs as root without it (in a container without --privileged, or in a user namespace): give its container " +
	"--privileged or the capability (--cap-add SYS_ADMIN), or start `volctl plugin serve hostpath` as root on the host " +
	"outside any user namespace, then run the command again"

// pluginUnavailableHint is the hint of an UNAVAILABLE a plugin answered itself.
const pluginUnavailableHint = "{plugin} is running and answered UNAVAILABLE itself: something it depends on (its storage backend, most likely) " +
	"is out of reach for now, as its message may say; check its logs"

// pluginDeadlineHint is the hint of a DEADLINE_EXCEEDED a plugin answered itself.
const pluginDeadlineHint = "{plugin} answered in time, but reported a timeout of its own (its storage backend, most likely); " +
	"it may still be working: trying again later, or `volctl reconcile`, may succeed"

// grpcProtocolError is what gRPC says, with UNAVAILABLE, of a call whose answer broke HTTP/2
// (the framer's PROTOCOL_ERROR, which closes the connection): above all, header or trailer
// metadata far past the 16 MiB list gRPC's client reads (Go's HTTP/2 framer refuses it so).
// A plugin could word its own UNAVAILABLE so; it reads as this then, still retryable.
const grpcProtocolError = "error reading from server: connection error: PROTOCOL_ERROR"

// What gRPC says, with INTERNAL, of an answer that did not pass from the plugin's protobuf to
// volctl's: volctl could not decode or decompress it, or the plugin's gRPC could not encode it
// (Go's protobuf refuses a string field that is not UTF-8 on either side; C++'s writes it).
const (
	grpcUnmarshal      = "grpc: failed to unmarshal the received message"
	grpcDecompress     = "grpc: failed to read decompressed data"
	grpcNoDecompressor = "grpc: no decompressor available for compressed payload"
	grpcMarshal        = "grpc: error while marshaling"
)

// Which message of a call did not pass between volctl's protobuf and the plugin's.
const (
	bothEncoded = iota
	answerNotEncoded
	requestNotEncoded
)

// notEncoded says which message of a call, according to detail (gRPC's INTERNAL), did not pass
// from one protobuf to the other: the answer, which volctl could not decode (grpcUnmarshal...)
// or the plugin's gRPC encode; or volctl's request, which gRPC refuses to send with the same
// grpcMarshal as the plugin's side: told apart by encoding req.
func notEncoded(detail string, req proto.Message) int {
	for _, p := range []string{grpcUnmarshal, grpcDecompress, grpcNoDecompressor} {
		if strings.HasPrefix(detail, p) {
			return answerNotEncoded
		}
	}
	if !strings.HasPrefix(detail, grpcMarshal) {
		return bothEncoded
	}
	if _, err := proto.Marshal(req); err != nil {
		return requestNotEncoded
	}
	return answerNotEncoded
}

// grpcTooLarge matches what gRPC says, with RESOURCE_EXHAUSTED, of a message over its size
// limit: "grpc: received message larger than max (5242893 vs. 4194304)" when volctl got it
// (the plugin's answer) or the plugin did (volctl's request), "trying to send message larger
// than max (...)" when the sender refused it, and the variants after decompression, which may
// give the limit alone ("... larger than max 4194304"). Compiled on first use, not by every
// process.
var grpcTooLarge = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`message (?:after decompression )?larger than max(?: length allowed on current machine)? \(?(\d*)(?: vs\. (\d+))?`)
})

// tooLarge explains a message over gRPC's size limit: the plugin's answer, unless volctl's
// request was itself over the limit (gRPC's limit is the same 4 MiB on both sides by default).
// answer says it was the plugin's answer: the call reached the plugin, which did it.
func tooLarge(rpc, detail string, req proto.Message) (msg, hint string, answer bool) {
	reqSize := proto.Size(req)
	m := grpcTooLarge().FindStringSubmatch(detail)
	size, limit := m[1], m[2]
	if limit == "" {
		size, limit = "", size
	}
	limitText := "the size limit of a gRPC message"
	if limit != "" {
		limitText = fmt.Sprintf("the %s-byte limit of a gRPC message", limit)
	}
	n, err := strconv.Atoi(limit)
	if strings.HasPrefix(detail, "trying to send") || err == nil && reqSize > n {
		msg, hint := requestTooLarge(req)
		return fmt.Sprintf("volctl's request is %d bytes, over %s%s", reqSize, limitText, msg), hint, false
	}
	what := fmt.Sprintf("the plugin answered with a message over %s", limitText)
	if size != "" {
		what = fmt.Sprintf("the plugin answered with a message of %s bytes, over %s", size, limitText)
	}
	field := rpcTable[rpc].large
	if field == "" {
		field = "its response"
	}
	return what, fmt.Sprintf("%s is far beyond CSI's size limits and a retry gets the same answer; report it to the plugin's authors", field), true
}

// requestTooLarge names what makes a request too large for gRPC: its fields of more than
// largeField bytes, largest first, with their sizes (": its volume_context is N bytes,
// publish_context M"), and whose they are, for the hint: a map a plugin answered
// (publish_context, and a created volume's volume_context) is for its authors, as volctl cannot
// make it smaller; a spec's (parameters, secrets, context) for the user to make smaller.
func requestTooLarge(req proto.Message) (msg, hint string) {
	type field struct {
		name string
		size int
	}
	var large []field
	m := req.ProtoReflect()
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		one := m.New()
		one.Set(fd, v)
		if n := proto.Size(one.Interface()); n > largeField {
			large = append(large, field{string(fd.Name()), n})
		}
		return true
	})
	if len(large) == 0 {
		return "", "the request carries too much (the volume's parameters, context or secrets); make them smaller"
	}
	slices.SortFunc(large, func(a, b field) int { return b.size - a.size })
	var sizes, whose []string
	for i, f := range large {
		if i == 0 {
			sizes = append(sizes, fmt.Sprintf("its %s holds %d bytes", f.name, f.size))
		} else {
			sizes = append(sizes, fmt.Sprintf("%s %d", f.name, f.size))
		}
		if w := requestFieldOrigin[f.name]; w != "" {
			whose = append(whose, f.name+" "+w)
		}
	}
	hint = "make the volume's spec carry less"
	if len(whose) > 0 {
		hint = strings.Join(whose, "; ")
	}
	return ": " + strings.Join(sizes, ", "), hint
}

// largeField is the size past which requestTooLarge names a request's field: CSI's limit on
// a map (4 KiB), past which nothing a plugin or a spec should send is.
const largeField = spec.MaxCSIMap

// requestFieldOrigin says where a request's field comes from, and what to do when it is too large.
var requestFieldOrigin = map[string]string{
	"publish_context":    "is what the plugin answered ControllerPublishVolume, far past CSI's 4 KiB for a map, and volctl sends it back as it is: report it to the plugin's authors",
	"volume_context":     "is the volume spec's context (make it smaller) or, for a volume volctl created, what the plugin answered CreateVolume, far past CSI's 4 KiB for a map: report it to the plugin's authors",
	"parameters":         "are the volume spec's: make them smaller",
	"mutable_parameters": "are the volume spec's: make them smaller",
	"secrets":            "are the volume spec's, or --secret's: make them smaller",
}

// What gRPC's transport says, in its error messages, when a connection to a socket was made
// but the HTTP/2 handshake on it failed. A socket that does not exist or that nobody listens
// on never gets this far.
const (
	// The handshake: the client's preface and SETTINGS frame out, the server's SETTINGS back.
	grpcWritePreface  = "failed to write client preface"
	grpcWriteSettings = "failed to write initial settings frame"
	grpcNoPreface     = "error reading server preface"
	grpcNotSettings   = "initial http2 frame from server is not a settings frame"
	// What came back was not an HTTP/2 frame; Go's HTTP/2 framer recognises HTTP/1.1.
	grpcFrameTooLarge   = "frame too large"
	grpcLooksLikeHTTP11 = "looked like an HTTP/1.1 header"
	// gRPC's last handshake write, when the other end has hung up, comes back bare:
	// "write unix @->/x.sock: write: broken pipe".
	grpcBareWrite = "write unix "
)

// handshakeProblem explains a gRPC transport message saying that something accepted the
// connection on socket but did not go through with the gRPC handshake, or returns "" when
// detail says no such thing (a plugin's own UNAVAILABLE, or a connection lost mid-call).
func handshakeProblem(socket, detail string) (msg, hint string) {
	has := func(s ...string) bool {
		for _, v := range s {
			if strings.Contains(detail, v) {
				return true
			}
		}
		return false
	}
	hungUp := has("EOF", "connection reset", "broken pipe")
	if !has(grpcWritePreface, grpcWriteSettings, grpcNoPreface, grpcNotSettings) &&
		!(strings.HasPrefix(detail, grpcBareWrite) && hungUp) {
		return "", ""
	}
	notGRPC := fmt.Sprintf("something accepted the connection on %s and answered, but not with gRPC", socket)
	const http1 = "it looks like an HTTP/1.x server, not a CSI plugin"
	if has(grpcLooksLikeHTTP11) {
		return notGRPC, http1
	}
	if !hungUp && !has(grpcFrameTooLarge, grpcNotSettings) {
		// Most often gRPC gave up waiting and closed the connection itself ("use of closed
		// network connection"): the other end holds connections without a word, as a stopped
		// process does.
		return fmt.Sprintf("something accepted the connection on %s but did not complete the gRPC handshake", socket),
			"a hung plugin, or not a CSI plugin"
	}
	// It answered with something else, or hung up, perhaps after answering (an HTTP server
	// does, and gRPC may not have read the answer): ask it again, to say which.
	answer := probeAnswer(socket)
	switch {
	case bytes.HasPrefix(answer, []byte("HTTP/")):
		return notGRPC, http1
	case len(answer) == http2FrameHeaderLen && answer[3] == http2SettingsFrame:
		return "", "" // it handshakes now: whatever went wrong before, this is not it
	case len(answer) > 0:
		return notGRPC, "it does not speak gRPC's HTTP/2, so it is not a CSI plugin; check the plugin's socket path"
	}
	return fmt.Sprintf("something accepted the connection on %s but closed it before completing the gRPC handshake", socket),
		"a plugin failing as it starts, or not a CSI plugin; check its logs"
}

// The start of an HTTP/2 connection (RFC 9113): the client's preface, and the first frame a
// server sends back, its SETTINGS, behind a 9-byte frame header whose fourth byte is the type.
const (
	http2ClientPreface   = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	http2FrameHeaderLen  = 9
	http2SettingsFrame   = 0x4
	handshakeProbeWindow = time.Second
)

// probeAnswer connects to socket, sends an HTTP/2 client preface and returns the first bytes
// that come back (up to an HTTP/2 frame header), or none if the other end hangs up or says
// nothing for a second.
func probeAnswer(socket string) []byte {
	conn, err := net.DialTimeout("unix", socket, handshakeProbeWindow)
	if err != nil {
		return nil
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(handshakeProbeWindow))
	_, _ = io.WriteString(conn, http2ClientPreface) // an HTTP/1.x server answers a bad request too
	buf := make([]byte, http2FrameHeaderLen)
	n, _ := io.ReadFull(conn, buf)
	return buf[:n]
}

// FileKind names the kind of file fi is, for a path that should have been a socket: "a
// directory", "a regular file", "a named pipe (FIFO)", "a device file".
func FileKind(fi fs.FileInfo) string {
	switch t := fi.Mode().Type(); {
	case t == 0:
		return "a regular file"
	case t == fs.ModeDir:
		return "a directory"
	case t == fs.ModeNamedPipe:
		return "a named pipe (FIFO)"
	case t&fs.ModeDevice != 0:
		return "a device file"
	case t == fs.ModeSocket:
		return "a socket"
	}
	return "a file of another kind"
}

// socketProblem explains why a socket cannot be dialled, or returns "" if it looks fine. hung
// says a process listens there but accepts no connection: the queue of connections waiting to
// be accepted is full (EAGAIN), which a plugin that hung or was stopped (SIGSTOP) leaves once
// enough were tried, every reconnect gRPC makes among them. It said "check the socket's
// permissions" (TestStoppedPluginWithAFullAcceptQueueIsNotAPermissionProblem).
func socketProblem(socket string) (msg, hint string, hung bool) {
	fi, err := os.Stat(socket)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("plugin socket %s does not exist", spec.QuoteName(socket)), "is the plugin running?", false
	case err != nil:
		return fmt.Sprintf("plugin socket %s: %v", spec.QuoteName(socket), unnamed(err)), "check the socket path and its permissions", false
	case fi.Mode()&fs.ModeSocket == 0:
		return fmt.Sprintf("plugin socket %s is %s, not a socket", spec.QuoteName(socket), FileKind(fi)), "check the plugin's socket path", false
	}
	conn, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return fmt.Sprintf("nothing is listening on plugin socket %s", spec.QuoteName(socket)),
				"is the plugin running? the socket file may be left over from one that died", false
		case errors.Is(err, syscall.EAGAIN):
			return fmt.Sprintf("the process listening on plugin socket %s accepts no connection: the queue of those waiting for it is full", spec.QuoteName(socket)),
				"the plugin is hung or stopped (SIGSTOP); restart it", true
		}
		return fmt.Sprintf("plugin socket %s: %v", spec.QuoteName(socket), unnamed(err)), "check the socket's permissions", false
	}
	conn.Close()
	return "", "", false
}

// MaxPluginMessage is how much of a plugin's message volctl keeps, in bytes (before control
// characters are escaped): the rest is cut off, saying how much (spec.Cut). The message goes
// into errors, events (each of the 10,000 the log keeps) and terminals; a plugin answering
// with megabytes would make each of them as large.
const MaxPluginMessage = 4 << 10

// pluginText makes text from a plugin, answering req, fit to show and store: sensitive values
// scrubbed out, and the request's own secret values too short for that wherever they stand
// as a word (scrubWords), then cut to MaxPluginMessage (after the scrub, so that no part of a
// secret is left at the cut), then control characters escaped.
func pluginText(msg string, req proto.Message, sensitive []string) string {
	return pluginTextUpTo(msg, req, sensitive, MaxPluginMessage)
}

// pluginTextUpTo is pluginText cut to max bytes where MaxPluginMessage is not the bound (the
// trace's answers: MaxTraceAnswer).
func pluginTextUpTo(msg string, req proto.Message, sensitive []string, max int) string {
	return EscapeControl(spec.Cut(scrubWords(scrubPluginMessage(msg, sensitive), shortSecrets(req)), max))
}

// EscapeControl writes each control character in s (C0 including newline and tab, DEL, C1) as
// a visible escape, as strconv.Quote would ("\x1b", "\n", "\u009b"), and leaves the rest of
// the text, non-ASCII letters included, as it is. A plugin's message is shown on terminals
// (status, the TUI) and stored: an escape sequence in it must not recolour the screen or
// retitle the window. Callers that word other data a plugin returned (its topology segments)
// use it too. It is spec.EscapeControl, the one escaping the command line's output and the
// spec diagnostics use as well (gRPC delivers only UTF-8; a byte that is not is shown "\xff").
func EscapeControl(s string) string { return spec.EscapeControl(s) }

// hint says what a person can do about code from rpc, following the error tables of the
// CSI spec for each RPC (rpcTable, codeHints).
func hint(rpc string, code codes.Code, plugin, socket string, timeout time.Duration) string {
	h, ok := rpcTable[rpc].hints[code]
	switch {
	case ok:
	case code == codes.DeadlineExceeded && IsLong(rpc):
		h = longTimeoutHint
	case code > codes.Unauthenticated:
		// grpc-status is a number on the wire, and a server other than gRPC's may send any.
		h = fmt.Sprintf("the plugin answered gRPC status code %d, which neither gRPC nor CSI defines: taken as a failure a retry "+
			"would not mend; report it to the plugin's authors", uint32(code))
	default:
		h = codeHints[code]
		if c := carriesHint(rpcTable[rpc], code); c != "" {
			h = c
		}
	}
	if f := rpcTable[rpc]; code == codes.InvalidArgument && !f.noSecrets && f.hints[codes.Unauthenticated] != hintSnapshotSecrets && !strings.Contains(h, "secret") {
		h += secretsTooHint
	}
	return strings.NewReplacer("{rpc}", rpc, "{plugin}", plugin, "{socket}", socket, "{timeout}", timeout.String()).Replace(h)
}

// secretsTooHint ends INVALID_ARGUMENT's hint for an RPC that carries a volume's secrets: a
// plugin answers that code for a secret it needs and was not sent (a key missing from the
// volume's secrets), which the hint, of capabilities or of what a teardown carries ("an ID, a
// node or a path"), never named (TestInvalidArgumentHintNamesTheSecretsTheRequestCarries). Not
// the snapshot RPCs', whose secrets volctl does not record: the way to send them is a command
// again with --secret, and advised for an INVALID_ARGUMENT that is no secret's it failed the
// same (TestReconcileInvalidArgumentIsNotASecretsRefusal); their refusal of credentials says it.
const secretsTooHint = "; or a secret it needs was not sent: check the volume's secrets"

// unnamed is err without the path or address it names (an fs.PathError's, a net.OpError's):
// the message names the socket already, quoted where it must be (spec.QuoteName), and the
// error's own copy of it would print a newline in it raw.
func unnamed(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Err
	}
	return err
}

// unnamedPlugin is how errors name a plugin whose client was given no name (Config.Name).
const unnamedPlugin = "the plugin"

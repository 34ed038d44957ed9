// Package csitest holds CSI test doubles for volctl's engine and CLI tests: Faults, an
// interceptor that injects errors, delays and hangs into any CSI server and counts calls;
// MemPlugin, an in-memory CSI plugin with real CSI semantics that records every request as
// the owned types of package csi; and Serve, which serves them on a temporary unix socket.
// Its exported API takes and returns no CSI protobuf types.
package csitest

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Fault is one thing to do to calls of an RPC, in this order: hang (with lost, after the call
// itself), gate, delay, (lost: the call itself,) fail.
type Fault struct {
	Code    codes.Code // the error to return; OK returns none (a Delay alone)
	Message string     // the error's message; default "injected <Code>"
	// Details, with Code, are the error's status details: a plugin that says more than its
	// message (a debug dump, its request echoed) in google.rpc.Status details.
	Details []string
	Delay   time.Duration // wait this long first, cut short if the call's context ends
	// Hang blocks until the call's context ends (the client's timeout fires); with Lost, the
	// plugin does what was asked first: its answer comes too late to be read.
	Hang bool
	// Gate, when set, blocks the call until the channel is closed (or the call's context
	// ends): a test holds a caller mid-RPC (InFlight says when it got there), acts meanwhile,
	// then lets it go on.
	Gate <-chan struct{}
	// Pad, when positive, lets the call through and pads its answer with that many bytes of a
	// field the client does not know: a plugin that did what was asked and answered with a
	// message as large as a test makes it (over gRPC's 4 MiB limit, which the client refuses).
	Pad int
	// Raw, when set, lets the call through and appends these bytes to its answer's wire form as
	// they are (after Pad's), where the client reads them as fields: a plugin whose answer volctl
	// cannot decode, as a string field that is not UTF-8 (AppendString's answer) makes it.
	Raw []byte
	// Lost, when set, lets the call through and then answers with Code (UNAVAILABLE if
	// unset) instead of the plugin's answer: the plugin did what was asked, and its answer was
	// lost on the way (a connection reset, a client timeout). The client reads it as the
	// plugin's own status (csi.Error.Answered: its trailers came), which the engine takes as a
	// lost answer on every path but a claim's Probe and the fingerprint's questions
	// (csi.IsUnreachable); a connection really lost mid-call is the server stopped under a
	// Hang (ServeAt's stop).
	Lost bool
	// NextToken, when set, lets a paged call (ListSnapshots, ListVolumes) through and answers
	// with next_token NextToken(the starting_token it was asked for) instead of the plugin's:
	// a plugin whose paging repeats or never ends.
	NextToken func(startingToken string) string
	// FirstPage, when set, asks the plugin for its first page whatever starting_token the call
	// carries: with NextToken giving a fresh token each time, a plugin whose paging never ends
	// and never repeats (with Delay, one that pages slowly).
	FirstPage bool
	// Trailer, when positive, sends that many bytes of trailer metadata with the call's end,
	// whatever it ends with (the plugin's answer, or Code): a plugin that sends megabytes of
	// metadata (its status details, a dump of its request), past the 16 MiB of header and
	// trailer lists gRPC's client reads, which drops the answer unread.
	Trailer int
	// Answer, when set, lets the call through and rewrites its answer (OK) in place, before
	// NextToken, Pad and Raw apply: a plugin whose answer says what its state does not (an
	// entry listed twice, two ways), made of the honest one.
	Answer func(resp proto.Message)
	// When, when set, applies the fault only to the calls whose request it accepts; the
	// others go through as if it were not queued, and do not use up Times: a plugin that
	// fails some requests only (a starting_token it no longer honours).
	When  func(req proto.Message) bool
	Times int // how many calls it applies to; 0 means every call from now on
}

// Count is how often an RPC was called and how many of those calls failed, whether by an
// injected fault or by the server.
type Count struct {
	Calls  int
	Failed int
}

// Faults injects faults per RPC (by short name, "NodeStageVolume") and counts calls. The
// zero value injects nothing; it is safe for concurrent use.
type Faults struct {
	mu       sync.Mutex
	faults   map[string][]Fault
	counts   map[string]Count
	inFlight int
	held     int // calls waiting at a Gate or in a Hang
	echo     bool
	encode   []func(string) string // with echo: the forms each value is echoed in besides its own
	seen     []string              // with echo: every secret value and mount flag received, in order
}

// NewFaults returns an injector with no faults.
func NewFaults() *Faults { return &Faults{} }

// Inject queues a fault for rpc. Faults apply in the order injected: a counted fault is used
// up before the next one applies.
func (f *Faults) Inject(rpc string, fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.faults == nil {
		f.faults = map[string][]Fault{}
	}
	f.faults[rpc] = append(f.faults[rpc], fault)
}

// FailNext fails the next n calls of rpc with code, then lets calls through.
func (f *Faults) FailNext(rpc string, code codes.Code, n int) {
	if n <= 0 {
		return
	}
	f.Inject(rpc, Fault{Code: code, Times: n})
}

// FailOnce fails the next call of rpc with code.
func (f *Faults) FailOnce(rpc string, code codes.Code) { f.FailNext(rpc, code, 1) }

// FailAlways fails every call of rpc with code until cleared.
func (f *Faults) FailAlways(rpc string, code codes.Code) { f.Inject(rpc, Fault{Code: code}) }

// Delay slows every call of rpc by d until cleared.
func (f *Faults) Delay(rpc string, d time.Duration) { f.Inject(rpc, Fault{Delay: d}) }

// Pad pads the answer of every call of rpc that succeeds with n bytes (Fault.Pad), until cleared.
func (f *Faults) Pad(rpc string, n int) { f.Inject(rpc, Fault{Pad: n}) }

// Hang makes every call of rpc block until its context ends, until cleared.
func (f *Faults) Hang(rpc string) { f.Inject(rpc, Fault{Hang: true}) }

// Clear removes the faults of the named RPCs, or of all RPCs when none are named.
func (f *Faults) Clear(rpcs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(rpcs) == 0 {
		f.faults = nil
		return
	}
	for _, r := range rpcs {
		delete(f.faults, r)
	}
}

// Echo plays a hostile plugin: from now on every failed call, whether an injected fault or
// the server's own error, has every secret value and mount flag the injector has ever
// received, in any RPC, appended to its message. Values are remembered from the first call
// on, echo or not, and Reset does not forget them.
func (f *Faults) Echo() { f.EchoEncoded() }

// EchoEncoded is Echo with each value echoed also in each of encodings, after itself: a
// plugin that builds URLs, tokens or dumps of what it was sent (url.QueryEscape,
// base64.StdEncoding.EncodeToString...).
func (f *Faults) EchoEncoded(encodings ...func(string) string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.echo = true
	f.encode = slices.Clone(encodings)
}

// Seen returns every secret value and mount flag received so far, each once.
func (f *Faults) Seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

// remember records the secret values and mount flags of req.
func (f *Faults) remember(req any) {
	m, ok := req.(proto.Message)
	if !ok {
		return
	}
	vals := secretsIn(m.ProtoReflect())
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, v := range vals {
		if !slices.Contains(f.seen, v) {
			f.seen = append(f.seen, v)
		}
	}
}

// echoed rewrites err's message as an echoing plugin would.
func (f *Faults) echoed(err error) error {
	f.mu.Lock()
	echo, seen, encode := f.echo, slices.Clone(f.seen), f.encode
	f.mu.Unlock()
	if err == nil || !echo || len(seen) == 0 {
		return err
	}
	var said []string
	for _, v := range seen {
		said = append(said, v)
		for _, enc := range encode {
			said = append(said, enc(v))
		}
	}
	st := status.Convert(err)
	return status.Errorf(st.Code(), "%s (echo: %s)", st.Message(), strings.Join(said, " "))
}

// secretsIn collects the values of every `secrets` map and every `mount_flags` list in m, at
// any depth, by field name: independent of how the client finds them.
func secretsIn(m protoreflect.Message) []string {
	var out []string
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.Name() == "secrets" {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					out = append(out, mv.String())
					return true
				})
			} else if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					out = append(out, secretsIn(mv.Message())...)
					return true
				})
			}
		case fd.IsList():
			for i := range v.List().Len() {
				if fd.Name() == "mount_flags" {
					out = append(out, v.List().Get(i).String())
				} else if fd.Kind() == protoreflect.MessageKind {
					out = append(out, secretsIn(v.List().Get(i).Message())...)
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			out = append(out, secretsIn(v.Message())...)
		}
		return true
	})
	return out
}

// ResetCounts zeroes the call counts.
func (f *Faults) ResetCounts() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts = nil
}

// Reset clears every fault and zeroes the counts.
func (f *Faults) Reset() {
	f.Clear()
	f.ResetCounts()
}

// Calls returns how many calls of rpc the server received.
func (f *Faults) Calls(rpc string) int { return f.Count(rpc).Calls }

// Failed returns how many calls of rpc failed.
func (f *Faults) Failed(rpc string) int { return f.Count(rpc).Failed }

// Count returns the counts of rpc.
func (f *Faults) Count(rpc string) Count {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[rpc]
}

// Counts returns the counts of every RPC called so far.
func (f *Faults) Counts() map[string]Count {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.counts)
}

// InFlight returns how many calls are being handled now. A client whose timeout fired has
// its error before the server notices, so a test waits for zero before reading Failed.
func (f *Faults) InFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFlight
}

// Held returns how many calls wait now at a Fault's Gate or in a Hang: unlike InFlight, not
// the calls passing through on their way to the plugin, which a test waiting for its gated
// call to be held must not take for it.
func (f *Faults) Held() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held
}

// hold counts a call as held until the returned release.
func (f *Faults) hold() (release func()) {
	f.mu.Lock()
	f.held++
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.held--
		f.mu.Unlock()
	}
}

// WaitIdle waits until no call is in flight, or ctx ends.
func (f *Faults) WaitIdle(ctx context.Context) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for f.InFlight() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// take counts a call of rpc and returns the fault that applies to it, if any.
func (f *Faults) take(rpc string, req any) (Fault, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts = map[string]Count{}
	}
	c := f.counts[rpc]
	c.Calls++
	f.counts[rpc] = c
	f.inFlight++
	queue := f.faults[rpc]
	if len(queue) == 0 {
		return Fault{}, false
	}
	fault := queue[0]
	if fault.When != nil {
		if m, ok := req.(proto.Message); !ok || !fault.When(m) {
			return Fault{}, false
		}
	}
	if fault.Times > 0 {
		queue[0].Times--
		if queue[0].Times == 0 {
			f.faults[rpc] = queue[1:]
		}
	}
	return fault, true
}

// done ends a call of rpc, counting it as failed if it was.
func (f *Faults) done(rpc string, failed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inFlight--
	if failed {
		if f.counts == nil { // reset while the call was in flight
			f.counts = map[string]Count{}
		}
		c := f.counts[rpc]
		c.Failed++
		f.counts[rpc] = c
	}
}

// Interceptor returns the server interceptor that applies the faults; Serve installs it with
// WithFaults, or pass it to grpc.NewServer to wrap any CSI server.
func (f *Faults) Interceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		rpc := path.Base(info.FullMethod)
		f.remember(req)
		resp, err := f.apply(ctx, rpc, req, handler)
		f.done(rpc, err != nil)
		return resp, f.echoed(err)
	}
}

func (f *Faults) apply(ctx context.Context, rpc string, req any, handler grpc.UnaryHandler) (any, error) {
	fault, ok := f.take(rpc, req)
	if !ok {
		return handler(ctx, req)
	}
	if fault.Trailer > 0 {
		// In values of 1 MiB: one value of 16 MiB or more is refused by the server's own
		// HTTP/2 encoder before it is sent. Of 'X', whose Huffman code is 8 bits: HPACK
		// sends it as it is, not Huffman-coded, and the client reads it so, not bit by bit
		// (under -race, seconds for 17 MiB). The limit counts the values' length either way.
		var kv []string
		for left := fault.Trailer; left > 0; left -= 1 << 20 {
			kv = append(kv, fmt.Sprintf("x-dump-%d", len(kv)), strings.Repeat("X", min(left, 1<<20)))
		}
		if err := grpc.SetTrailer(ctx, metadata.Pairs(kv...)); err != nil {
			return nil, err
		}
	}
	if fault.Hang {
		defer f.hold()()
		if fault.Lost {
			if _, err := handler(ctx, req); err != nil {
				return nil, err
			}
		}
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if fault.Gate != nil {
		release := f.hold()
		select {
		case <-fault.Gate:
			release()
		case <-ctx.Done():
			release()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	if fault.Delay > 0 {
		timer := time.NewTimer(fault.Delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	if fault.Lost {
		if _, err := handler(ctx, req); err != nil {
			return nil, err
		}
		if fault.Code == codes.OK {
			fault.Code = codes.Unavailable
		}
	}
	if fault.Code != codes.OK {
		msg := fault.Message
		if msg == "" {
			msg = fmt.Sprintf("injected %s", fault.Code)
		}
		st := status.New(fault.Code, msg)
		for _, d := range fault.Details {
			withDetail, err := st.WithDetails(protoadapt.MessageV1Of(wrapperspb.String(d)))
			if err != nil {
				return nil, err
			}
			st = withDetail
		}
		return nil, st.Err()
	}
	asked := req
	if in, ok := req.(proto.Message); ok && fault.FirstPage {
		first := proto.Clone(in)
		if from := first.ProtoReflect().Descriptor().Fields().ByName("starting_token"); from != nil {
			first.ProtoReflect().Clear(from)
		}
		asked = first
	}
	resp, err := handler(ctx, asked)
	if m, ok := resp.(proto.Message); ok && err == nil && fault.Answer != nil {
		fault.Answer(m)
	}
	if m, ok := resp.(proto.Message); ok && err == nil && fault.NextToken != nil {
		setNextToken(req, m, fault.NextToken)
	}
	if m, ok := resp.(proto.Message); ok && err == nil && fault.Pad > 0 {
		r := m.ProtoReflect()
		pad := protowire.AppendTag(nil, 9999, protowire.BytesType)
		pad = protowire.AppendBytes(pad, make([]byte, fault.Pad))
		r.SetUnknown(append(r.GetUnknown(), pad...))
	}
	if m, ok := resp.(proto.Message); ok && err == nil && len(fault.Raw) > 0 {
		r := m.ProtoReflect()
		r.SetUnknown(append(r.GetUnknown(), fault.Raw...))
	}
	return resp, err
}

// AppendString is the wire form of a string field: field number path[len(path)-1] holding s,
// whatever bytes s holds, nested in the message fields the rest of path names from the outside
// in. With Fault.Raw, it overrides a field of the answer (the last occurrence of a field wins,
// and a message field's occurrences merge): AppendString("\xff", 1, 2) makes CreateVolume's
// answer's volume_id a string no UTF-8 reader accepts.
func AppendString(s string, path ...int) []byte {
	n := len(path) - 1
	return nest(protowire.AppendBytes(protowire.AppendTag(nil, protowire.Number(path[n]), protowire.BytesType), []byte(s)), path[:n])
}

// AppendBool is AppendString for a bool field: AppendBool(false, 2) makes
// ControllerExpandVolume's answer say node_expansion_required false.
func AppendBool(v bool, path ...int) []byte {
	n := len(path) - 1
	return nest(protowire.AppendVarint(protowire.AppendTag(nil, protowire.Number(path[n]), protowire.VarintType), protowire.EncodeBool(v)), path[:n])
}

// nest wraps the wire form of a field in the message fields path names, from the outside in.
func nest(b []byte, path []int) []byte {
	for i := len(path) - 1; i >= 0; i-- {
		b = protowire.AppendBytes(protowire.AppendTag(nil, protowire.Number(path[i]), protowire.BytesType), b)
	}
	return b
}

// setNextToken sets resp's next_token to next(req's starting_token), by field name; a message
// without those fields is left as it is.
func setNextToken(req any, resp proto.Message, next func(string) string) {
	in, ok := req.(proto.Message)
	if !ok {
		return
	}
	from := in.ProtoReflect().Descriptor().Fields().ByName("starting_token")
	to := resp.ProtoReflect().Descriptor().Fields().ByName("next_token")
	if from == nil || to == nil {
		return
	}
	start := in.ProtoReflect().Get(from).String()
	resp.ProtoReflect().Set(to, protoreflect.ValueOfString(next(start)))
}

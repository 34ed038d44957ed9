package csi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/spec"
)

// Config says how to reach a plugin. A monolith serves both services on one socket: give the
// same path twice (ConfigFromSpec does). Sockets are paths, or unix://PATH as in CSI_ENDPOINT.
type Config struct {
	ControllerSocket string // empty: the plugin has no controller service here
	NodeSocket       string // empty: the plugin has no node service here
	Timeouts         Timeouts
	// Logger receives one Debug record per RPC, secrets and mount flags redacted. Nil discards.
	Logger *slog.Logger
	// Redact, when set, returns every secret value and mount flag the caller holds, beyond the
	// ones a request carries: a plugin may echo in one RPC's error what it was sent in another
	// (a volume's secret in a NodeUnstageVolume error, which carries none). They are scrubbed
	// from every plugin message (errors, the trace, ValidateVolumeCapabilities' message). It is
	// called only when there is such a message, with a context that is never cancelled; if it
	// fails, the plugin's message is withheld rather than shown unscrubbed.
	Redact func(ctx context.Context) ([]string, error)
	// Observe, when set, is called after every RPC the client sends, whatever its outcome, with
	// the RPC's name ("NodeStageVolume"), its gRPC code ("OK", "Unavailable", "DeadlineExceeded"
	// for volctl's own timeout; a number gRPC does not define is "Unknown", so the code takes
	// one of 17 values whatever a plugin answers) and how long it took. The agent's metrics count and time RPCs with
	// it. It must be quick and safe for concurrent use; it never sees a request or a message.
	Observe func(rpc, code string, d time.Duration)
	// Name is the plugin's name in the client's errors (volctl's plugin ID): a timeout's says
	// `plugin "mem" did not answer within 2m0s`. Empty says "the plugin".
	Name string
	// LongTimeoutAdvice, when set, is added to the hint of a long RPC cut off by the client's
	// own long timeout: where that timeout is set and how to raise it (the engine's words, with
	// the command that does it). A plugin slower than the timeout, not hung, fails so on every
	// try, and "did not answer within 2m0s" alone said neither that the limit is the plugin's
	// setting nor how to change it. A function, called only then: a claim's dial builds no
	// words it will not print.
	LongTimeoutAdvice func() string
	// CheckPeer, when set, is asked about every connection the client makes, the first and each
	// one gRPC makes again by itself after the plugin went away, with the credentials of the
	// process listening on the socket (SO_PEERCRED), before anything is sent over it: an error
	// closes the connection unused, and the RPC that waited for it fails with that error (the
	// RPC's name before it). So whatever checks a plugin's listener checks the very connection
	// the requests, and their secrets, go over, not one dialled beside it.
	//
	// It is asked again, with the same credentials, when the server's first bytes arrive (its
	// HTTP/2 settings, which gRPC awaits before it sends an RPC): connect(2) succeeds while the
	// connection waits in the listener's backlog, and the process that accepts it may run
	// another program by then (it exec()ed keeping its listening socket). An error then closes
	// the connection before any RPC went over it, as at the dial.
	CheckPeer func(socket string, cred *unix.Ucred) error
	// CheckAccepted, when set, is asked about every connection CheckPeer let through, when the
	// server's first bytes arrive (so some process has accept()ed it), with the connection
	// itself: whoever holds its other end may be another process than the one that listens (a
	// supervisor's plugin). An error closes the connection before any RPC went over it.
	CheckAccepted func(socket string, cred *unix.Ucred, nc net.Conn) error
}

// ConfigFromSpec derives a Config from a plugin spec: a monolith's socket serves both
// services unless split sockets are given, and the spec's timeout is the long-RPC timeout.
func ConfigFromSpec(p *spec.Plugin) Config {
	return Config{Timeouts: Timeouts{Long: p.Timeout}, ControllerSocket: p.ControllerEndpoint(), NodeSocket: p.NodeEndpoint()}
}

// Client talks to one plugin's controller and node sockets. It is safe for concurrent use.
type Client struct {
	timeouts   Timeouts
	log        *slog.Logger
	controller *endpoint // nil without a controller socket
	node       *endpoint // nil without a node socket; the same endpoint as controller for a monolith
	// redact is Config.Redact; nil scrubs only the values of the request itself.
	redact func(context.Context) ([]string, error)
	// observe is Config.Observe; nil observes nothing.
	observe func(rpc, code string, d time.Duration)
	// named is how errors name the plugin (Config.Name), or unnamedPlugin.
	named string
	// longTimeoutAdvice is Config.LongTimeoutAdvice.
	longTimeoutAdvice func() string
	// checkPeer is Config.CheckPeer; nil connects to whoever listens.
	checkPeer func(socket string, cred *unix.Ucred) error
	// checkAccepted is Config.CheckAccepted; nil asks nothing more at the first data.
	checkAccepted func(socket string, cred *unix.Ucred, nc net.Conn) error
}

// endpoint is one socket and the CSI service clients on it.
type endpoint struct {
	socket     string
	conn       *grpc.ClientConn
	identity   csipb.IdentityClient
	controller csipb.ControllerClient
	node       csipb.NodeClient
	// refused is checkPeer's refusal of the last connection made to the socket, nil when it was
	// accepted: what an RPC that got no connection fails with (invoke).
	refused atomic.Pointer[error]
}

// New builds a client. It does not connect: gRPC connects on the first RPC, and a socket that
// is missing then is reported by name ("plugin socket /x.sock does not exist").
func New(cfg Config) (*Client, error) {
	if cfg.ControllerSocket == "" && cfg.NodeSocket == "" {
		return nil, errors.New("csi client: no controller or node socket given")
	}
	c := &Client{timeouts: cfg.Timeouts.withDefaults(), log: cfg.Logger, redact: cfg.Redact, observe: cfg.Observe, named: unnamedPlugin, checkPeer: cfg.CheckPeer, checkAccepted: cfg.CheckAccepted,
		longTimeoutAdvice: cfg.LongTimeoutAdvice}
	if cfg.Name != "" {
		c.named = fmt.Sprintf("plugin %q", EscapeControl(cfg.Name))
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if cfg.ControllerSocket != "" {
		if c.controller, err = c.dial(cfg.ControllerSocket); err != nil {
			return nil, err
		}
	}
	if cfg.NodeSocket != "" {
		if c.controller != nil && samePath(cfg.NodeSocket, cfg.ControllerSocket) {
			c.node = c.controller
		} else if c.node, err = c.dial(cfg.NodeSocket); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func samePath(a, b string) bool {
	aa, err1 := SocketPath(a)
	bb, err2 := SocketPath(b)
	return err1 == nil && err2 == nil && aa == bb
}

// SocketPath is the path the client dials for socket: absolute and clean, CSI_ENDPOINT's
// unix:// taken off. Config.CheckPeer is asked about that path, whatever spelling the plugin
// was registered with ("/run/hp//csi.sock", "/run/hp/./csi.sock"): whoever keeps facts by
// socket for it keys them by this path.
func SocketPath(socket string) (string, error) {
	// CSI_ENDPOINT's unix:// form is what plugin docs print; take it as the path it names.
	return filepath.Abs(strings.TrimPrefix(socket, "unix://"))
}

// reconnectBackoff keeps reconnection to a restarted plugin quick: a local socket is cheap to
// dial, and gRPC's default (up to two minutes) would leave a restarted plugin unused for long.
var reconnectBackoff = backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second}

// connectTimeout is how long gRPC gives one connection to complete its handshake: twice the
// short RPC timeout (10 s by default). An RPC waiting on that handshake is bounded by its own
// timeout first, and a short one that runs out says "did not complete the gRPC handshake within
// 5s"; a long one waits for the connection's end, then fails UNAVAILABLE, which a command may
// retry. gRPC's answer when it gives up on a connection is UNAVAILABLE for every RPC waiting on
// it at once, whatever time each has left: the 1 s this was failed the first RPC to a plugin
// that socket activation starts, that exec()s its driver, or that a loaded machine runs
// slowly, with most of its timeout left (TestSlowHandshakeWithinTheTimeoutIsWaitedFor).
// Twice, not once: a short RPC's own deadline then ends it, not a race with gRPC's.
func (c *Client) connectTimeout() time.Duration { return 2 * c.timeouts.Short }

func (c *Client) dial(socket string) (*endpoint, error) {
	abs, err := SocketPath(socket)
	if err != nil {
		return nil, fmt.Errorf("plugin socket %s: %w", spec.QuoteName(socket), err)
	}
	// gRPC reads its target as a URL: the path goes in escaped, so that a "#", "?" or "%41" in a
	// file name is not read as a fragment, a query or an "A" (another socket, maybe another
	// plugin's), and a control character or a lone "%" is not refused as a bad URL.
	ep := &endpoint{socket: abs}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff, MinConnectTimeout: c.connectTimeout()}),
		grpc.WithChainUnaryInterceptor(traceInterceptor(c.log, abs, c.pluginTextUpTo, c.observe)),
		grpc.WithStatsHandler(answerWatcher{}),
	}
	if c.checkPeer != nil {
		opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return ep.dialChecked(ctx, c.checkPeer, c.checkAccepted)
		}))
	}
	conn, err := grpc.NewClient("unix://"+(&url.URL{Path: abs}).EscapedPath(), opts...)
	if err != nil {
		return nil, fmt.Errorf("plugin socket %s: %w", spec.QuoteName(abs), err)
	}
	ep.conn = conn
	ep.identity, ep.controller, ep.node = csipb.NewIdentityClient(conn), csipb.NewControllerClient(conn), csipb.NewNodeClient(conn)
	return ep, nil
}

// dialChecked connects to the endpoint's socket and asks check about the process listening
// there (Config.CheckPeer): gRPC's dialer, for each connection it makes. A refused connection
// is closed before gRPC sends anything over it, and the refusal kept for the RPC that waited.
// The connection asks check again at its first data (acceptedConn), and then accepted when set.
func (ep *endpoint) dialChecked(ctx context.Context, check func(string, *unix.Ucred) error,
	accepted func(string, *unix.Ucred, net.Conn) error) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", ep.socket)
	if err != nil {
		ep.refused.Store(nil) // nobody listens now: not the refused process's doing
		return nil, err
	}
	cred, err := PeerCred(nc)
	if err == nil {
		err = check(ep.socket, cred)
	}
	if err != nil {
		nc.Close()
		ep.refused.Store(&err)
		return nil, err
	}
	ep.refused.Store(nil)
	return &acceptedConn{Conn: nc, check: func() error {
		err := check(ep.socket, cred)
		if err == nil && accepted != nil {
			err = accepted(ep.socket, cred, nc)
		}
		if err != nil {
			ep.refused.Store(&err)
		}
		return err
	}}, nil
}

// acceptedConn is a dialled connection that asks check once more when its first data arrives:
// then whoever accept()ed it has written to it, the server's HTTP/2 settings, and gRPC has
// sent nothing but its own preface; it waits for the server's before any RPC. Connect(2) on a
// unix socket returns once the connection is queued in the listener's backlog, so the check
// at the dial saw the process that listened then, which may exec() another program before it
// accepts: the listener's image is read again (TestExecWhileAConnectionWaitsInTheBacklogIsRefused).
// A refusal closes the connection, and its read fails with it.
type acceptedConn struct {
	net.Conn
	once  sync.Once
	err   error
	check func() error
}

func (c *acceptedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.once.Do(func() { c.err = c.check() })
		if c.err != nil {
			_ = c.Conn.Close()
			return 0, c.err
		}
	}
	return n, err
}

// PeerCred is what SO_PEERCRED says of the process at the other end of a unix socket
// connection: the one that listened, for a connection made by connect(2).
func PeerCred(nc net.Conn) (*unix.Ucred, error) {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("a %T, not a unix socket connection", nc)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) { cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return nil, err
	}
	if credErr != nil {
		return nil, fmt.Errorf("reading who listens on the socket (SO_PEERCRED): %w", credErr)
	}
	return cred, nil
}

// Close releases the connections.
func (c *Client) Close() error {
	var errs []error
	for _, ep := range c.endpoints() {
		errs = append(errs, ep.conn.Close())
	}
	return errors.Join(errs...)
}

// endpoints lists each distinct socket once, controller first.
func (c *Client) endpoints() []*endpoint {
	var out []*endpoint
	if c.controller != nil {
		out = append(out, c.controller)
	}
	if c.node != nil && c.node != c.controller {
		out = append(out, c.node)
	}
	return out
}

// endpointFor is where rpc goes, by the service rpcTable files it under: an identity RPC to
// the controller socket if any, as it decides which controller capabilities apply, else the
// node socket; a controller or node RPC to the socket of its service, which must be configured.
func (c *Client) endpointFor(rpc string) (*endpoint, error) {
	switch svc := ServiceOf(rpc); svc {
	case ServiceIdentity:
		if c.controller != nil {
			return c.controller, nil
		}
		return c.node, nil
	case ServiceController, ServiceNode:
		ep := c.controller
		if svc == ServiceNode {
			ep = c.node
		}
		if ep == nil {
			return nil, fmt.Errorf("%s: the plugin has no %s socket configured", rpc, svc)
		}
		return ep, nil
	}
	return nil, fmt.Errorf("%s: not an RPC the csi client knows (it has no entry in rpcTable)", rpc)
}

// prepared says what keeps a request from being sent, in order: a missing socket (endpointFor)
// before a bad request, then the first failed conversion of the request's fields (capability,
// capacity range, content source), named by the RPC. nil: the request can be sent.
func (c *Client) prepared(rpc string, conversions ...error) error {
	if _, err := c.endpointFor(rpc); err != nil {
		return err
	}
	for _, err := range conversions {
		if err != nil {
			return fmt.Errorf("%s: %w", rpc, err)
		}
	}
	return nil
}

// send sends one RPC to the socket of its service (endpointFor), through that socket's stub of
// the service: call is the stub's method, as csipb.NodeClient.NodeStageVolume.
func send[Stub any, Req proto.Message, Resp any](ctx context.Context, c *Client, rpc string, req Req,
	call func(Stub, context.Context, Req, ...grpc.CallOption) (Resp, error)) (Resp, error) {
	var zero Resp
	ep, err := c.endpointFor(rpc)
	if err != nil {
		return zero, err
	}
	for _, s := range [...]any{ep.identity, ep.controller, ep.node} {
		if stub, ok := s.(Stub); ok {
			return invoke(ctx, c, ep, rpc, req, func(ctx context.Context, req Req, opts ...grpc.CallOption) (Resp, error) {
				return call(stub, ctx, req, opts...)
			})
		}
	}
	return zero, fmt.Errorf("%s: the csi client has no stub of type %T", rpc, (*Stub)(nil))
}

// invoke runs one RPC under its timeout and translates its failure.
func invoke[Req proto.Message, Resp any](ctx context.Context, c *Client, ep *endpoint, rpc string, req Req,
	call func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (Resp, error) {
	timeout := c.timeouts.For(rpc)
	// The RPC's clock starts before its deadline is set, so an RPC volctl's timeout ended is
	// observed taking at least that timeout (traceInterceptor).
	// answered is set when the plugin ends the call with a status of its own (answerWatcher).
	var answered atomic.Bool
	cctx, cancel := context.WithTimeout(context.WithValue(context.WithValue(ctx, rpcStartKey{}, time.Now()), answeredKey{}, &answered), timeout)
	defer cancel()
	ReportProgress(ctx, rpc)
	// gRPC fills p only when the call got a stream on a connection, handshake done: with p
	// empty the call never reached whatever listens on the socket (translate, reached).
	var p peer.Peer
	resp, err := call(cctx, req, grpc.Peer(&p))
	if err != nil {
		var zero Resp
		text := func(msg string) string { return c.pluginText(ctx, req, msg) }
		if refused := ep.refused.Load(); refused != nil && (p.Addr == nil || failedDialing(err)) {
			return zero, fmt.Errorf("%s: %w", rpc, *refused) // nothing was sent: who listens was refused
		}
		deadline, _ := cctx.Deadline()
		err = translate(ctx, rpc, c.named, ep.socket, timeout, deadline, err, text, req, p.Addr != nil, answered.Load())
		// Only for a call that reached the plugin: one that never got past the handshake is no
		// slow plugin, and its error says what listens there instead.
		if e := (*Error)(nil); c.longTimeoutAdvice != nil && IsLong(rpc) && p.Addr != nil && errors.As(err, &e) && e.TimedOut {
			if advice := c.longTimeoutAdvice(); advice != "" {
				e.Hint += "; " + advice
			}
		}
		return zero, err
	}
	return resp, nil
}

// failedDialing says whether err, an RPC's, is gRPC's for a connection its dialer could not
// make: nothing went over a new connection. gRPC may have filled the call's peer from the
// connection the plugin's stop broke, picked before the RPC waited for a new one, so an
// empty peer alone does not tell a refused dial (TestServerOfAnotherUserThanTheFingerprintsIsRefused
// failed about one run in ten: the refusal reported as UNAVAILABLE, not as the conflict it is).
func failedDialing(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.Unavailable && strings.Contains(st.Message(), "Error while dialing")
}

// withheld replaces a plugin's message when the values to scrub from it could not be had.
const withheld = "[the plugin's message is withheld: volctl could not read the secrets to redact from it]"

// pluginText makes text from a plugin, answering req, fit to show and store: every secret value
// and mount flag the request carried and every one Config.Redact returns scrubbed out, then
// control characters escaped.
func (c *Client) pluginText(ctx context.Context, req proto.Message, msg string) string {
	return c.pluginTextUpTo(ctx, req, msg, MaxPluginMessage)
}

// pluginTextUpTo is pluginText cut to max bytes (pluginTextUpTo).
func (c *Client) pluginTextUpTo(ctx context.Context, req proto.Message, msg string, max int) string {
	if msg == "" {
		return ""
	}
	sensitive := sensitiveValues(req)
	if c.redact != nil {
		more, err := c.redact(context.WithoutCancel(ctx))
		if err != nil {
			c.log.Warn("withholding a plugin's message: cannot read the secrets to redact from it", "err", err)
			return withheld
		}
		sensitive = append(sensitive, more...)
	}
	return pluginTextUpTo(msg, req, sensitive, max)
}

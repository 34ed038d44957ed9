package nomad

import (
	"cmp"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/nomad/api"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

// Client talks to a Nomad cluster's HTTP API, configured like the nomad CLI: NOMAD_ADDR,
// NOMAD_TOKEN, NOMAD_NAMESPACE, NOMAD_REGION, NOMAD_CACERT, NOMAD_CLIENT_CERT,
// NOMAD_CLIENT_KEY, NOMAD_SKIP_VERIFY (and the rest api.DefaultConfig reads).
type Client struct {
	api *api.Client
	// Address, Region and Namespace are what the client was configured with, for messages and
	// the handover mark.
	Address   string
	Region    string
	Namespace string
	// Timeout bounds each request; DefaultTimeout when zero.
	Timeout time.Duration
	// creds are the credentials every request carries (the ACL token, a basic auth password
	// and its header's encoding), never shown in what Nomad says.
	creds []string
	// words are the basic auth users with no password that do not look like keys (userKey):
	// each is the request's only credential, and may be a name or a password a person chose
	// (http://opensesame@host), so it is masked in what Nomad says wherever it stands as a
	// word of its own (maskWords), and kept inside a longer name (volume "ops-db").
	words []string
	// token: requests carry an ACL token (NOMAD_TOKEN is set).
	token bool
	// trusts names the CA certificates volctl trusts Nomad's to be signed by, when the
	// environment names them: "NOMAD_CACERT=PATH" or "NOMAD_CAPATH=DIR" ("" for the system's).
	trusts string
	// serverName is NOMAD_TLS_SERVER_NAME, the host Nomad's certificate is checked to be for
	// instead of NOMAD_ADDR's.
	serverName string
	// skipUnread is NOMAD_SKIP_VERIFY when it is set to what the api module (as the nomad CLI)
	// does not read as a boolean ("yes"), and so ignores: the check it was meant to skip is
	// made. "" otherwise.
	skipUnread string
	// stopped names the first request Nomad did not answer or answered busy (noteStopped),
	// shared by the client's copies; nil for a Client not made by NewClient.
	stopped *atomic.Pointer[string]
	// seen: Nomad answered a request of the client or a copy (answer.fromNomad), so one
	// whose connection it then closes unanswered met a Nomad that went away part way, not
	// something else at NOMAD_ADDR; nil for a Client not made by NewClient.
	seen *atomic.Bool
	// volumes is Nomad's volumes of every namespace as listed once for the client and its
	// copies (Twins); nil for a Client not made by NewClient, which lists them for each call.
	volumes *volumeList
	// tokenSelf is whether Nomad still has the request's token, asked once per client and its
	// copies (goneToken); nil for a Client not made by NewClient, which never asks.
	tokenSelf *tokenSelf
}

// request returns the context one request to Nomad runs under: ctx (Ctrl-C ends it), bounded
// by the client's timeout.
// The answer is what the transport noted of its answer.
func (c *Client) request(ctx context.Context) (context.Context, *answer, context.CancelFunc) {
	a := &answer{seen: c.seen}
	rctx, cancel := context.WithTimeout(context.WithValue(ctx, answerKey{}, a), c.timeout())
	rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { a.connected.Store(true) }})
	return rctx, a, cancel
}

// DefaultTimeout bounds each request to Nomad, reading the answer included: a Nomad (or a
// proxy before it) that takes the request and never answers must not hold a command, nor the
// volume lock it holds while registering, for ever.
const DefaultTimeout = time.Minute

// NewClient builds a client from the environment, as the nomad CLI does. address, when set,
// overrides NOMAD_ADDR.
func NewClient(address string) (*Client, error) {
	cfg := api.DefaultConfig()
	if address != "" {
		cfg.Address = address
	}
	if err := strayCredential(cfg.SecretID, os.Getenv("NOMAD_HTTP_AUTH")); err != nil {
		return nil, err
	}
	creds := []string{cfg.SecretID}
	// basic notes a basic auth credential: its password, or its user when it has none (an API
	// key a proxy or gateway takes as the user, NOMAD_ADDR=https://KEY@host or
	// NOMAD_HTTP_AUTH=KEY: the only credential the request carries), and its header's encoding.
	// A user with no password is taken for a key only when it looks like one (userKey): a
	// plain one (http://ops@host, NOMAD_HTTP_AUTH=ops) was replaced in everything Nomad said
	// (volume "dev[REDACTED]"), and is masked only where it stands as a word of its own
	// (words), besides the address and the header's encoding: it may be a password a person
	// chose (http://opensesame@host), which a proxy's refusal echoes as a word.
	var words []string
	basic := func(user, password string) {
		switch {
		case password != "" || userKey(user):
			creds = append(creds, cmp.Or(password, user))
		case !slices.Contains(words, user):
			words = append(words, user)
		}
		creds = append(creds, base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
	}
	userinfo := func(ui *url.Userinfo) {
		if pw, _ := ui.Password(); pw != "" || ui.Username() != "" {
			basic(ui.Username(), pw)
		}
	}
	if a := cfg.HttpAuth; a != nil {
		userinfo(url.UserPassword(a.Username, a.Password))
	}
	// shown is the address for messages and the handover mark: without a password in it. One
	// url.Parse does not read as user:password@host (a '#', '/' or '?' in the password ends its
	// host early) has everything before its last '@' hidden.
	shown := hiddenUserinfo(cfg.Address)
	u, perr := url.Parse(cfg.Address)
	if perr == nil && misread(cfg.Address, u) {
		// Parsed, but not as written: the requests, with NOMAD_TOKEN, would go to the host the
		// password's first part names, while shown names the one meant.
		perr = errMisread
	}
	if perr == nil && u.User != nil {
		userinfo(u.User)
		shown = u.Redacted()
		if pw, _ := u.User.Password(); pw == "" && u.User.Username() != "" {
			// A user with no password is the credential: hidden as Redacted hides a password.
			shown = hiddenUserinfo(u.String())
		}
	}
	if perr == nil && !strings.EqualFold(u.Scheme, "unix") {
		// The forward proxy's credentials (HTTP_PROXY=http://USER:PASSWORD@HOST), which every
		// request through it carries in its Proxy-Authorization header: its 407 page may echo
		// them.
		if pu, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err == nil && pu != nil && pu.User != nil {
			userinfo(pu.User)
		}
	}
	// Its query's values too: the API client sends none of it, and a token there
	// (?token=SECRET), its path too, was shown wherever the address is (engine.HiddenNomadPathAndQuery).
	shown = engine.HiddenNomadPathAndQuery(shown)
	// Longest first, so that a credential holding another is replaced whole.
	sort.Slice(creds, func(i, j int) bool { return len(creds[i]) > len(creds[j]) })
	if err := speakable(cfg.Address, shown); err != nil {
		return nil, err
	}
	if perr != nil {
		if fixed, ok := zoneEscaped(cfg.Address); ok {
			return nil, fmt.Errorf("Nomad at %s: NOMAD_ADDR's IPv6 address names its zone after a bare %%, which a URL writes as %%25: %s",
				shown, advised(fixed))
		}
		if fixed, ok := fragmentless(cfg.Address); ok {
			return nil, fmt.Errorf("Nomad at %s: NOMAD_ADDR ends in a fragment (a '#' and what follows it), which Nomad's API client does not send, nor anything after the host and port: %s (a '#' that is part of a password is written %%23)",
				shown, advised(fixed))
		}
		// Not url.Parse's words nor the api module's, which quote the address, or the part of
		// the password it took for a port.
		return nil, fmt.Errorf("Nomad at %s: NOMAD_ADDR cannot be read as a URL (a '#', '/', '?' or '@' in a password must be written %%23, %%2F, %%3F or %%40)", shown)
	}
	hc, err := httpClient(cfg.TLSConfig, cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("Nomad at %s: %w", shown, err)
	}
	cfg.HttpClient = hc
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("Nomad at %s: %w (check NOMAD_ADDR)", shown, err)
	}
	// Every request names its region itself (c.Region, or where a volume was handed over):
	// the api module would add NOMAD_REGION to a request that names none, and a question
	// meant for the agent's own region (a volume handed over with no region named) would go
	// to that one, which answers that it has no such volume.
	c.SetRegion("")
	// So too its namespace (namespaceFor, or the one a volume was handed over in): the api
	// module would add NOMAD_NAMESPACE to a request that names none, and a mark with no
	// namespace (Nomad's default one) would be asked about in that one, which answers that it
	// has no such volume.
	region, namespace := cfg.Region, cfg.Namespace
	c.SetNamespace("")
	out := &Client{api: c, Address: shown, Region: region, Namespace: namespace, creds: creds, words: words, token: cfg.SecretID != "",
		serverName: cfg.TLSConfig.TLSServerName, stopped: new(atomic.Pointer[string]), seen: new(atomic.Bool), volumes: new(volumeList), tokenSelf: new(tokenSelf)}
	if v := os.Getenv("NOMAD_SKIP_VERIFY"); v != "" {
		if _, err := strconv.ParseBool(v); err != nil {
			out.skipUnread = v
		}
	}
	switch t := cfg.TLSConfig; {
	case t.CACert != "": // read before NOMAD_CAPATH, which is then not read
		out.trusts = "NOMAD_CACERT=" + t.CACert
	case t.CAPath != "":
		out.trusts = "NOMAD_CAPATH=" + t.CAPath
	}
	return out, nil
}

// userKey reports whether user, a basic auth user with no password, looks like a key a proxy
// or gateway takes as the user: at least minUserKey characters, with a digit or both cases
// of letters (a generated token), not a name or a word.
func userKey(user string) bool {
	if len(user) < minUserKey {
		return false
	}
	digit := strings.ContainsFunc(user, unicode.IsDigit)
	return digit || (strings.ContainsFunc(user, unicode.IsUpper) && strings.ContainsFunc(user, unicode.IsLower))
}

// minUserKey is the length from which a user with no password may be a key (userKey).
const minUserKey = 16

// errMisread is url.Parse's success at reading an address otherwise than it is written (misread).
var errMisread = errors.New("read as another address")

// misread reports whether u, address as url.Parse read it, is not the address written: a
// fragment that may be a password's (http://ops:1234#5678@nomad:4646, a password with a '#':
// host "ops:1234", the rest a fragment), or an '@' after the host it read (a '/' or '?' in a password ends the host
// there, the rest read as a path or query). The request would go, with the token, to the
// host the password's first part names, while the address shown (everything before its last
// '@' hidden) names the one meant. A Nomad address needs neither (unix:// is a path, and kept).
func misread(address string, u *url.URL) bool {
	if strings.EqualFold(u.Scheme, "unix") {
		return false
	}
	if hash := strings.Index(address, "#"); hash >= 0 {
		// A fragment the nomad CLI takes, as volctl does (its API client sends the scheme,
		// user, host and port only): one after the last '@', the address before it read as
		// written. Before, http://nomad:4646/#x was refused, where `nomad` works. A '#' before
		// an '@' is a password's (ops:1234#5678@nomad) or puts an '@' in the fragment
		// (nomad:4646/#x@other), whose address shown (everything before its last '@' hidden)
		// would name another host than the one asked.
		if hash < strings.LastIndex(address, "@") {
			return true
		}
		before, err := url.Parse(address[:hash])
		return err != nil || misread(address[:hash], before)
	}
	rest := address
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+len("://"):]
	}
	if end := strings.IndexAny(rest, "/?"); end >= 0 {
		return strings.Contains(rest[end:], "@")
	}
	return false
}

// zoneEscaped is address with the zone of its bracketed IPv6 host (http://[fe80::1%eth0]:4646,
// as `ip address` prints one) written as a URL writes it, after %25, and true, when the zone
// follows a bare "%" that url.Parse cannot read; before, such an address was refused with
// advice about the characters of a password.
func zoneEscaped(address string) (string, bool) {
	open := strings.LastIndex(address, "[")
	end := strings.Index(address[open+1:], "]")
	if open < 0 || end < 0 {
		return "", false
	}
	host := address[open+1 : open+1+end]
	ip, zone, ok := strings.Cut(host, "%")
	if !ok || zone == "" || strings.HasPrefix(zone, "25") {
		return "", false
	}
	if _, err := netip.ParseAddr(ip); err != nil || !strings.Contains(ip, ":") {
		return "", false
	}
	fixed := address[:open+1] + ip + "%25" + url.PathEscape(zone) + address[open+1+end:]
	// The fixed address must read as the one meant: the bracketed address its host, with
	// its user when one was written before it. A '#', '/' or '?' in a password still makes
	// it another host (ops:1234), which that advice alone would send the token to.
	u, err := url.Parse(fixed)
	if err != nil || misread(fixed, u) || u.Hostname() != ip+"%"+zone {
		return "", false
	}
	if strings.Contains(address[:open], "@") && u.User == nil {
		return "", false
	}
	return fixed, true
}

// fragmentless is address without its fragment, and true, when it has one that cannot be
// part of a password (a '#' after its last '@') and reads as a URL without it: such an
// address was refused (misread) with advice about the characters of a password, which it
// had none of (TestNomadAddressFragmentAndQueryAdviceNameThem).
func fragmentless(address string) (string, bool) {
	hash := strings.LastIndex(address, "@") + 1
	i := strings.Index(address[hash:], "#")
	if i < 0 {
		return "", false
	}
	fixed := address[:hash+i]
	u, err := url.Parse(fixed)
	return fixed, err == nil && !misread(fixed, u)
}

// advised is NOMAD_ADDR=ADDRESS, advice to set NOMAD_ADDR to fixed, pasteable into a shell as
// printed: what volctl does not show hidden as everywhere (hiddenUserinfo: a user and
// password, and a path segment that may be a secret, which works as printed since Nomad's
// API client sends no path), without its query and fragment, which that client does not send
// either, each said; quoted where a shell would read the address otherwise. Before, the
// advice for an address with a query (?token=xxxxx) said to put "your user and password" in
// place of its xxxxx, and printed a '&' raw, which a shell reads as the command's end.
func advised(fixed string) string {
	shown := hiddenUserinfo(fixed)
	var notes []string
	if strings.Contains(shown, "xxxxx@") && !strings.Contains(fixed, "xxxxx@") {
		notes = append(notes, "with your user and password in place of xxxxx")
	}
	host := strings.LastIndex(shown, "@") + 1
	if host == 0 {
		if i := strings.Index(shown, "://"); i >= 0 {
			host = i + len("://")
		}
	}
	if i := strings.IndexAny(shown[host:], "?#"); i >= 0 {
		shown = shown[:host+i]
		notes = append(notes, "without its query, which Nomad's API client does not send: a token goes in NOMAD_TOKEN, a proxy's credential in NOMAD_HTTP_AUTH")
	}
	if strings.Contains(shown[host:], "xxxxx") {
		notes = append(notes, "xxxxx stands for what volctl does not show of its path, which Nomad's API client does not send either")
	}
	// The value of an assignment is not globbed: the brackets of an IPv6 host need no quotes.
	word := shown
	if unbracketed := strings.NewReplacer("[", "a", "]", "a").Replace(shown); shellquote.Arg(unbracketed) != unbracketed {
		word = shellquote.Arg(shown)
	}
	if len(notes) == 0 {
		return "NOMAD_ADDR=" + word
	}
	return "NOMAD_ADDR=" + word + " (" + strings.Join(notes, "; ") + ")"
}

// speakable refuses an address the API client cannot speak to, before any request: one with no
// scheme (host:port, as Nomad prints the address it binds) is parsed as a scheme or a path and
// fails as "unsupported protocol scheme", which said() took for a Nomad not running, sending
// the user to look for one that was. The error says what NOMAD_ADDR must start with, and for
// one with no scheme what to write. shown is the address as messages may show it.
//
// One with a blank before or after it, or a control character, is named so first, quoted: it
// was told it "must start with http://" (a blank before it), printed raw (a newline), or got
// Go's "invalid port" (TestNomadAddressWithStrayTextIsNamed).
func speakable(address, shown string) error {
	if stray := spec.StrayText(address); stray != "" {
		fix := "write the address without it"
		if strings.TrimSpace(address) == "" {
			fix = "set it to Nomad's address, or unset it for http://127.0.0.1:4646"
		}
		return fmt.Errorf("NOMAD_ADDR=%q %s: %s", hiddenUserinfo(address), stray, fix)
	}
	scheme, _, found := strings.Cut(address, "://")
	if s := strings.ToLower(scheme); found && (s == "http" || s == "https" || s == "unix") {
		return nil
	}
	if s, rest, ok := strings.Cut(address, ":"); !found && ok && slices.Contains([]string{"http", "https", "unix"}, strings.ToLower(s)) {
		// The scheme with one '/' or none after it (http:nomad:4646, http:/nomad:4646, a
		// backslash for a slash): the advice was http:// before it all
		// (NOMAD_ADDR=http://http:nomad:4646), naming a host "http".
		fixed := s + "://" + strings.TrimLeft(rest, `/\`)
		if strings.EqualFold(s, "unix") {
			fixed = s + ":///" + strings.TrimLeft(rest, `/\`)
		}
		return fmt.Errorf("Nomad at %s: NOMAD_ADDR=%s must start with http://, https:// or unix://, two slashes after the scheme: %s",
			shown, shown, advised(fixed))
	}
	if !found { // shown is hiddenUserinfo's: user:password@host is not parsed as such
		return fmt.Errorf("Nomad at %s: NOMAD_ADDR=%s must start with http://, https:// or unix://: %s (https:// if Nomad's tls block enables TLS for its HTTP API)", shown, shown, advised("http://"+address))
	}
	return fmt.Errorf("Nomad at %s: NOMAD_ADDR=%s must start with http://, https:// or unix://", shown, shown)
}

// strayCredential refuses NOMAD_TOKEN (token) with stray text about it (spec.StrayText: a
// newline from $(cat FILE), a CR from a CRLF file, a blank before or after it), and
// NOMAD_HTTP_AUTH (auth) with a CR or LF, or a control character at its end (a password may
// begin or end with a blank, and hold a tab: basic auth sends it base64-encoded, and before a
// tab inside one was refused, TestNomadTabInHTTPAuthPasswordIsTaken),
// naming the variable, never its value. A token's control character failed every request in
// Go's words ("invalid header field value"), with advice to check that Nomad runs; a blank
// was sent on, and Nomad's refusal read as a token it does not know.
func strayCredential(token, auth string) error {
	if stray := spec.StrayText(token); stray != "" {
		return fmt.Errorf("NOMAD_TOKEN %s: set it to the token's secret ID without it", stray)
	}
	if last, _ := utf8.DecodeLastRuneInString(auth); strings.ContainsAny(auth, "\r\n") || (auth != "" && unicode.IsControl(last)) {
		return fmt.Errorf("NOMAD_HTTP_AUTH %s: set it to USER:PASSWORD without it", spec.StrayText(auth))
	}
	return nil
}

// hiddenUserinfo is address with what may be a user and password before its host (between
// its scheme, if any, and its last "@") as xxxxx, for an address that url.Parse cannot read
// and Redacted cannot hide: engine.ShownNomadAddress, which a handover mark's address is shown
// through too. The last "@" anywhere, not only before a '/', '?' or '#': those may be in the
// password (a generated one), and an "@" in a path, hidden by mistake, costs only a message's
// detail.
func hiddenUserinfo(address string) string { return engine.ShownNomadAddress(address) }

// httpClient is the api module's HTTP client (TLS 1.2 at least, HTTP/1, the TLS variables'
// certificates), except that it follows no redirect. Nomad's API answers where it is asked;
// a redirect would carry the ACL token (a header Go's client keeps across hosts) and a
// registration's secrets to another host, and take that host's answer for Nomad's: its 404
// for a volume would let `volctl nomad release` take back a volume Nomad has. The transport
// (boundedAnswers) ends a redirect before the client sees it; CheckRedirect stays, for any it
// did not.
//
// An address unix:///PATH dials only the socket (the api module's own client for it would
// bound nothing, nor tell Nomad's answers from others').
func httpClient(tlsConfig *api.TLSConfig, address string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if u, err := url.Parse(address); err == nil && u.Scheme == "unix" {
		tr.Proxy = nil
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", u.Path)
		}
	}
	tr.TLSHandshakeTimeout = 10 * time.Second
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	tr.ForceAttemptHTTP2 = false
	hc := &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		return &redirectError{to: req.URL.Redacted()}
	}}
	if err := configureTLS(hc, tlsConfig); err != nil { // on the *http.Transport
		return nil, err
	}
	hc.Transport = boundedAnswers{tr}
	return hc, nil
}

// configureTLS is api.ConfigureTLS, its errors naming the variable and the file they are about
// (NOMAD_CLIENT_KEY=PATH) and what that file must hold: the api module's name neither the file
// of a client certificate or key it cannot use ("tls: failed to find any PEM data in key
// input"), nor the one of the pair that is missing, nor the variable a CA path came from. The
// client pair is configured on its own first, so that an error is known to be its.
func configureTLS(hc *http.Client, t *api.TLSConfig) error {
	if t == nil {
		return nil
	}
	cert, key := "NOMAD_CLIENT_CERT="+t.ClientCert, "NOMAD_CLIENT_KEY="+t.ClientKey
	const pairFix = "NOMAD_CLIENT_CERT must name the PEM file of the client certificate, and NOMAD_CLIENT_KEY the PEM file of its private key"
	switch {
	case t.ClientCert != "" && t.ClientKey == "":
		return fmt.Errorf("%s, but NOMAD_CLIENT_KEY is not set: set it to the PEM file of that certificate's private key, or unset both", cert)
	case t.ClientKey != "" && t.ClientCert == "":
		return fmt.Errorf("%s, but NOMAD_CLIENT_CERT is not set: set it to the PEM file of that key's certificate, or unset both", key)
	case t.ClientCert != "":
		if err := api.ConfigureTLS(hc, &api.TLSConfig{ClientCert: t.ClientCert, ClientKey: t.ClientKey}); err != nil {
			var pe *fs.PathError
			msg := err.Error()
			switch {
			case errors.As(err, &pe) && pe.Path == t.ClientCert:
				return fmt.Errorf("%s: %w (%s)", cert, err, pairFix)
			case errors.As(err, &pe) && pe.Path == t.ClientKey, strings.Contains(msg, "key input"),
				strings.Contains(msg, "private key") && !strings.Contains(msg, "does not match"):
				return fmt.Errorf("%s: %w (%s)", key, err, pairFix)
			case strings.Contains(msg, "certificate input"), strings.HasPrefix(msg, "x509: "):
				return fmt.Errorf("%s: %w (%s)", cert, err, pairFix)
			}
			return fmt.Errorf("%s and %s: %w (NOMAD_CLIENT_KEY must name the private key of the certificate NOMAD_CLIENT_CERT names)", cert, key, err)
		}
	}
	err := api.ConfigureTLS(hc, t)
	switch {
	case err == nil:
		return nil
	case t.CACert != "": // read before NOMAD_CAPATH, which is then not read
		return fmt.Errorf("NOMAD_CACERT=%s: %w (it must name the PEM file of the CA certificate that signed Nomad's)", t.CACert, err)
	case t.CAPath != "":
		return fmt.Errorf("NOMAD_CAPATH=%s: %w (it must name a directory of PEM files of CA certificates, one of which signed Nomad's)", t.CAPath, err)
	}
	return err
}

// maxAnswer bounds what volctl reads of one answer from Nomad, decompressed: its largest, a
// volume with thousands of allocs, is a few MiB. The api module reads an error's body whole and
// inflates gzip itself, so an endless answer (or a gzip bomb) would otherwise be read into
// memory until the process dies.
var maxAnswer int64 = 64 << 20

// boundedAnswers inflates a gzip answer itself (the api module then sees a plain one) and
// ends every answer's body with an error past maxAnswer bytes.
type boundedAnswers struct{ next http.RoundTripper }

func (b boundedAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if a, ok := req.Context().Value(answerKey{}).(*answer); ok {
		a.got.Store(true)
		a.fromNomad = resp.Header.Get("X-Nomad-Index") != ""
		if a.fromNomad && a.seen != nil {
			a.seen.Store(true)
		}
		a.index, _ = strconv.ParseUint(resp.Header.Get("X-Nomad-Index"), 10, 64)
		a.retryAfter = resp.Header.Get("Retry-After")
	}
	if loc := resp.Header.Get("Location"); loc != "" && redirects(resp.StatusCode) {
		// The redirect volctl does not follow, here rather than at the client's CheckRedirect:
		// a Location Go cannot parse fails the client before it asks, in Go's words quoting
		// the Location whole (what it carried of the request too) as a failure to reach
		// Nomad, and a registration so answered was taken for one Nomad may have received.
		resp.Body.Close()
		to := hiddenUserinfo(loc)
		if u, err := req.URL.Parse(loc); err == nil {
			to = u.Redacted()
		}
		return nil, &redirectError{to: spec.Cut(to, 512)}
	}
	var r io.Reader = resp.Body
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		r = &lazyGzip{src: resp.Body}
		resp.Header.Del("Content-Encoding")
		resp.ContentLength, resp.Uncompressed = -1, true
	}
	resp.Body = &boundedBody{r: r, c: resp.Body, left: maxAnswer}
	return resp, nil
}

// redirects reports whether status is one Go's client follows a Location of.
func redirects(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// answer is what the transport noted of the answer to a request whose context carries it
// (under answerKey).
type answer struct {
	// fromNomad: the answer has the X-Nomad-Index header, which Nomad's HTTP API sets on every
	// answer to a query it ran, its 404 for a volume or plugin it does not have included. A 404
	// without it is not Nomad's: a proxy before it (an ingress with no route to Nomad answers
	// "404 page not found"), or something else at NOMAD_ADDR.
	fromNomad bool
	// index is the X-Nomad-Index header's value (0 without one): the Raft index of the state
	// Nomad answered from.
	index uint64
	// retryAfter is the answer's Retry-After header, as it is.
	retryAfter string
	// seen is the client's (Client.seen), set when Nomad answers.
	seen *atomic.Bool
	// connected: the request got a connection to write on (the transport calls GotConn before
	// it writes a byte), so it may have reached Nomad whole. A request that never got one (the
	// dial or the TLS handshake failed, or Ctrl-C came first) did not.
	connected atomic.Bool
	// got: an HTTP answer came, of any status (a leader question's that came is not the
	// command's failure to reach Nomad: Client.askLeader).
	got atomic.Bool
}

type answerKey struct{}

// lazyGzip inflates src, reading gzip's header at the first Read (an empty body is just
// empty).
type lazyGzip struct {
	src io.Reader
	zr  *gzip.Reader
}

func (g *lazyGzip) Read(p []byte) (int, error) {
	if g.zr == nil {
		zr, err := gzip.NewReader(g.src)
		if err != nil {
			return 0, err
		}
		g.zr = zr
	}
	return g.zr.Read(p)
}

type boundedBody struct {
	r    io.Reader
	c    io.Closer
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.left == 0 {
		var one [1]byte
		if n, err := io.ReadAtLeast(b.r, one[:], 1); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("Nomad's answer is larger than %d MiB: volctl reads no more of it", maxAnswer>>20)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.c.Close() }

// maxShown is how much of an error's body volctl shows.
const maxShown = 4 << 10

// redirectError is a redirect volctl did not follow; the registration it answered was not
// taken.
type redirectError struct{ to string }

func (e *redirectError) Error() string {
	return fmt.Sprintf("answered with a redirect to %s, which volctl does not follow (the token and the request would go there): set NOMAD_ADDR to the address Nomad's API answers at", e.to)
}

// notTheOneAsked says that the answer to the read of a Nomad object (what: "volume", "plugin")
// was not that object but one with got: not Nomad's answer, which is the object asked for or
// its 404, but what a proxy or gateway before it answered (a JSON message, a session page's
// JSON, a cached answer for another request). Taken for Nomad's copy, it would be "another
// volume by that ID" (whose advice is release --force), or an unhealthy plugin.
func (c *Client) notTheOneAsked(what, got string) string {
	return c.hideCreds(fmt.Sprintf("answered the read of the %s with one that is not it (%s): not Nomad's answer, which is the %s asked for or its 404, so volctl takes it for no word either way: NOMAD_ADDR must name Nomad's API, not a proxy's or a gateway's page", what, got, what))
}

// ErrNotFound matches a plugin or volume Nomad does not have.
var ErrNotFound = errors.New("not found in Nomad")

// isNotFound reports whether err is a 404, Nomad's or not.
func isNotFound(err error) bool {
	var ure api.UnexpectedResponseError
	if errors.As(err, &ure) && ure.HasStatusCode() {
		return ure.StatusCode() == http.StatusNotFound
	}
	return false
}

// notNomads is what volctl adds to a 404 that is not Nomad's (answer.fromNomad).
const notNomads = "a 404 without Nomad's X-Nomad-Index header, so not Nomad's word that it has none: a proxy's or another server's page (NOMAD_ADDR must name Nomad's API, and Nomad must be up behind it)"

// ErrRefused matches a registration Nomad refused: answered with an error that says it did not
// apply it (settled: a 4xx, or a 500 of its checks before applying). Any other error answer
// may come after Nomad took the volume (a raft apply that timed out and committed after), and
// is said to be that, not a refusal (HandOver asks); nor does a registration that got no
// answer (Nomad unreachable mid-request, the timeout, Ctrl-C, a gateway's 502, 503 or 504)
// match it.
var ErrRefused = errors.New("refused the registration")

// errNotSent matches a registration that never got a connection to Nomad (answer.connected):
// nothing of it reached Nomad, which cannot have taken it.
var errNotSent = errors.New("did not receive the registration")

// what Nomad said, without the api module's "Unexpected response code" preamble; ctx is the
// command's, to tell an interruption from the request's own timeout. clean, when set, is
// applied to the body before it is cut short, so that no part of a value it replaces is left
// at the cut.
func (c *Client) said(ctx context.Context, err error, clean func(string) string) string {
	var ure api.UnexpectedResponseError
	if errors.As(err, &ure) && ure.HasStatusCode() {
		body := c.hideCreds(strings.TrimSpace(ure.Body())) // a proxy's error page may echo the request's headers
		if clean != nil {
			body = clean(body)
		}
		if page, ok := htmlPage(body); ok {
			body = page
		}
		body = spec.Cut(body, maxShown)
		if body == "" {
			body = ure.StatusText()
		}
		if ure.StatusCode() == http.StatusBadRequest && strings.Contains(ure.Body(), "HTTP request to an HTTPS server") {
			// Go's TLS server (Nomad's) answers a plain request so.
			return fmt.Sprintf("%d: %s (Nomad there speaks HTTPS: NOMAD_ADDR must say https://, and NOMAD_CACERT name the CA that signed its certificate)", ure.StatusCode(), body)
		}
		return fmt.Sprintf("%d: %s%s", ure.StatusCode(), body, notNomadsStatus(ure.StatusCode()))
	}
	if fix := c.tlsFix(err); fix != "" {
		return err.Error() + " (" + fix + ")"
	}
	var syntax *json.SyntaxError
	var shape *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &shape) {
		return fmt.Sprintf("answered with what is not Nomad's JSON (%v): NOMAD_ADDR must name Nomad's API, not a web page or a proxy's", err)
	}
	var re *redirectError
	switch {
	case errors.As(err, &re): // where it points may hold what the request carried
		return c.hideCreds(re.Error())
	case ctx.Err() != nil:
		return fmt.Sprintf("interrupted before Nomad answered (%v)", context.Cause(ctx))
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer within %s (is Nomad, or a proxy before it, hung? NOMAD_ADDR says where it is)", c.timeout())
	case strings.Contains(err.Error(), "malformed HTTP"):
		// net/http's words (untyped) for an answer that is not HTTP/1: what listens there is
		// running, and is something else than Nomad's API.
		return fmt.Sprintf("%v: what answers there does not speak HTTP/1.1 as Nomad's API does (a gRPC server, such as a CSI plugin's socket, or another service): NOMAD_ADDR must name Nomad's HTTP API (by default http://127.0.0.1:4646)", err)
	case errors.Is(err, io.EOF) && c.seen != nil && c.seen.Load():
		// Nomad answered this command's earlier requests there: not a TLS mismatch or
		// another server, but Nomad gone part way.
		return fmt.Sprintf("%v: Nomad closed the connection without answering, having answered this command's earlier requests there: it stopped or restarted part way (or a proxy before it cut the connection); run the command again once it answers", err)
	case errors.Is(err, io.EOF):
		// It took the connection and closed it without a byte of an answer: something listens
		// there. A TLS server that is not Go's HTTP one (a TLS proxy or load balancer before
		// Nomad) does so with a plain request, where Go's answers a 400 (said above).
		fix := "something other than Nomad's HTTP API listens there, or Nomad restarted: NOMAD_ADDR must name Nomad's HTTP API"
		if u, perr := url.Parse(c.Address); perr == nil && strings.EqualFold(u.Scheme, "http") {
			fix = "a TLS server (Nomad's tls block enabling TLS for its HTTP API, or a TLS proxy before it) does so with a plain HTTP request: NOMAD_ADDR must say https://, and NOMAD_CACERT name the CA that signed its certificate; else " + fix
		}
		return fmt.Sprintf("%v: what listens there closed the connection without answering; %s", err, fix)
	case errors.Is(err, io.ErrUnexpectedEOF):
		// It answered, and the connection closed before the answer was whole.
		return fmt.Sprintf("its answer was cut short (%v): the connection closed before it was whole (Nomad restarting, or a proxy before it cutting it off); asking again may get it whole", err)
	}
	if c.seen != nil && c.seen.Load() {
		return err.Error() + " (Nomad answered this command's earlier requests there: it stopped or went out of reach part way; run the command again once it answers)"
	}
	return err.Error() + " (is Nomad running there? NOMAD_ADDR says where it is)"
}

// notNomadsStatus is what volctl adds to an error answer of status: for one Nomad's HTTP API
// never answers on the endpoints volctl asks, that something else at NOMAD_ADDR did (and what
// to change, when its cause is known); "" for one Nomad answers. Nomad 2.0.5 answers errors
// there with 400, 403, 404, 405, 429 (its limit of connections per client) and 500 (its wrap
// and errCodeFromHandler: a 409 only on its variables' endpoint), and 401 only on its Task API
// (the socket in a task's secrets dir) to a request without a token; a gateway's 502, 503 and
// 504 are said elsewhere (answered, busy). Before, a proxy's 409 was shown as Nomad refusing the
// registration, sending the user to Nomad's logs, which have nothing of it.
func notNomadsStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusTooManyRequests:
		return ""
	case http.StatusUnauthorized:
		return " (Nomad answers 401 only on its Task API, a task's NOMAD_ADDR=unix://.../api.sock, to a request without a token: set NOMAD_TOKEN there; else a proxy before Nomad asks for credentials: NOMAD_HTTP_AUTH=USER:PASSWORD gives them, as to the nomad CLI)"
	case http.StatusProxyAuthRequired:
		return " (Nomad's API answers no 407: the forward proxy HTTP_PROXY or HTTPS_PROXY names asks for credentials: put them in that variable's URL (http://USER:PASSWORD@HOST:PORT), or name Nomad's host in NO_PROXY to reach it directly)"
	case http.StatusRequestEntityTooLarge:
		return " (Nomad's API answers no 413: a proxy before Nomad refused the request as larger than its limit on a request's body size (nginx's client_max_body_size): raise that limit, or set NOMAD_ADDR to Nomad's own address)"
	}
	if status >= 400 && status < http.StatusInternalServerError {
		return fmt.Sprintf(" (Nomad's API answers no %d: a proxy, gateway or another service at NOMAD_ADDR answered, not Nomad; NOMAD_ADDR must name Nomad's API, and what stands before it must pass requests on as they are)", status)
	}
	return ""
}

// htmlPage words an answer's body that is a web page (a proxy's or load balancer's error page,
// a login form) by its title and what it means, instead of the page's markup: Nomad answers
// errors in plain text. ok is false for any other body.
func htmlPage(body string) (string, bool) {
	lower := strings.ToLower(body)
	if !strings.HasPrefix(lower, "<!doctype html") && !strings.HasPrefix(lower, "<html") {
		return "", false
	}
	title := ""
	if i := strings.Index(lower, "<title>"); i >= 0 {
		if j := strings.Index(lower[i:], "</title>"); j >= 0 {
			title = strings.Join(strings.Fields(body[i+len("<title>"):i+j]), " ")
		}
	}
	what := "a web page"
	if title != "" {
		what = fmt.Sprintf("a web page titled %q", spec.Cut(title, 120))
	}
	return what + ", not Nomad's answer (Nomad answers errors in plain text): a proxy or another web server answers at NOMAD_ADDR, or stands before Nomad and could not reach it", true
}

// tlsFix says what to set or change when err is a TLS mismatch between volctl and what
// answers at NOMAD_ADDR, which is running and answered: "" when it is not one. A check of
// Nomad's certificate that failed while NOMAD_SKIP_VERIFY is set to what is not read says so
// too: the user set it to skip that check.
func (c *Client) tlsFix(err error) string {
	fix := c.tlsMismatch(err)
	var (
		unknownCA x509.UnknownAuthorityError
		host      x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	if c.skipUnread != "" && (errors.As(err, &unknownCA) || errors.As(err, &host) || errors.As(err, &invalid)) {
		fix += fmt.Sprintf("; NOMAD_SKIP_VERIFY=%q is not read, and so the check is made: Nomad's tools take true or false (1 or 0) there", spec.Cut(c.skipUnread, 64))
	}
	return fix
}

// tlsMismatch is tlsFix but for NOMAD_SKIP_VERIFY.
func (c *Client) tlsMismatch(err error) string {
	var (
		unknownCA x509.UnknownAuthorityError
		host      x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
	)
	msg := err.Error()
	switch {
	case errors.As(err, &unknownCA) && c.trusts != "":
		return c.trusts + " does not hold the CA certificate that signed Nomad's: set it to the one that did (Nomad's tls block names it in ca_file)"
	case errors.As(err, &unknownCA):
		return "Nomad's certificate is signed by a CA volctl does not trust: set NOMAD_CACERT (or NOMAD_CAPATH) to the CA certificate that signed it; NOMAD_SKIP_VERIFY=true skips the check, and with it any proof that this is your Nomad"
	case errors.As(err, &host) && c.serverName != "":
		return fmt.Sprintf("NOMAD_TLS_SERVER_NAME=%s names a host Nomad's certificate is not for: set it to one it is for (Nomad's own certificates are for server.REGION.nomad and client.REGION.nomad), or unset it to check the host NOMAD_ADDR names", c.serverName)
	case errors.As(err, &host):
		return fmt.Sprintf("Nomad's certificate is not for %s: name one of the hosts it is for in NOMAD_ADDR, or set NOMAD_TLS_SERVER_NAME to one; Nomad's own certificates are for server.REGION.nomad and client.REGION.nomad", host.Host)
	case errors.As(err, &invalid):
		return "Nomad's certificate is not valid (" + invalid.Error() + "): it is renewed or fixed on Nomad's side"
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"), errors.As(err, &record):
		return "NOMAD_ADDR says https://, but what answers there speaks plain HTTP: say http:// in NOMAD_ADDR, or enable TLS in Nomad's tls block"
	case strings.Contains(msg, "remote error: tls: certificate required"), strings.Contains(msg, "remote error: tls: bad certificate"),
		strings.Contains(msg, "remote error: tls: unknown certificate authority"), strings.Contains(msg, "remote error: tls: certificate expired"):
		// Nomad's alert, refusing volctl's certificate (or its lack of one).
		return "Nomad requires a client certificate it trusts, as verify_https_client does: set NOMAD_CLIENT_CERT and NOMAD_CLIENT_KEY to one signed by the CA Nomad's tls block names"
	}
	return ""
}

// denied is what volctl adds to err when it is Nomad's 403: the ACL rule (need) the request
// needs of the token, the namespace ns it needs it in ("" for a rule of no namespace), and
// the rules it needs besides (also).
// Nomad answers "Permission denied" alike to a request without a token (its anonymous
// policy), with a token it does not know, and with one that has expired (a token with a TTL
// may expire between two requests of one command), so all of them are named. A namespaced
// capability is a namespace's, and a token's policy names namespaces by name (or a glob):
// Nomad answers so too in a namespace that does not exist, which no rule grants anything in
// unless a glob matches it, so that one is named too, and NOMAD_NAMESPACE when it names that
// one (a typo there reads as a policy to widen).
func (c *Client) denied(ctx context.Context, err error, need, ns string, also ...string) string {
	if !isDenied(err) {
		return ""
	}
	if c.goneToken(ctx, err) {
		// Not the policy: the token itself, which every request carries.
		return " (Nomad does not know NOMAD_TOKEN's token, or the token has expired: `nomad acl token self` says which; set NOMAD_TOKEN to a token Nomad has)"
	}
	where := ""
	if ns != "" {
		need += " in namespace " + ns
		if ns == c.Namespace {
			need += ", which NOMAD_NAMESPACE names"
		}
		where = fmt.Sprintf("; so it answers too when Nomad has no namespace %q (`%s` says whether it has)", ns, shellquote.Command("nomad namespace status", ns))
	}
	for _, a := range also {
		need += ", and " + a
	}
	if !c.token {
		return " (NOMAD_TOKEN is not set, and Nomad's anonymous policy does not grant " + need + ": set NOMAD_TOKEN to a token whose ACL policy does" + where + ")"
	}
	return " (NOMAD_TOKEN's ACL policy must grant " + need + "; Nomad answers so too for a token it does not know or that has expired: `nomad acl token self` says which" + where + ")"
}

// noRegion is what volctl adds to err when it is Nomad's answer that it knows no region by the
// name the request gave (region, "" for none): which region, and where the name came from.
func (c *Client) noRegion(err error, region string) string {
	var ure api.UnexpectedResponseError
	if region == "" || !errors.As(err, &ure) || !ure.HasStatusCode() || !strings.Contains(ure.Body(), "No path to region") {
		return ""
	}
	if region == c.Region {
		return fmt.Sprintf(" (Nomad there knows no region %q, which NOMAD_REGION names)", region)
	}
	return fmt.Sprintf(" (Nomad there knows no region %q, the one the volume was handed over in)", region)
}

// noNamespace is what volctl adds to err when it is Nomad's refusal of volume v's registration
// in namespace ns, which it does not have: which namespace, where the name came from, and the
// command that creates it (the volume's own namespace cannot change).
func (c *Client) noNamespace(err error, v spec.Volume, ns string) string {
	var ure api.UnexpectedResponseError
	if !errors.As(err, &ure) || !ure.HasStatusCode() || !strings.Contains(ure.Body(), " is in nonexistent namespace ") {
		return ""
	}
	return " (" + c.NoNamespaceWayOut(v.Namespace, ns, " and run the command again") + ")"
}

// NoNamespaceWayOut says of namespace ns, which Nomad lacks, where the registration of a volume
// of namespace volumeNS takes it from, and the way out that works, then said after the making of
// it: the namespace made, or for a volume of the default namespace that NOMAD_NAMESPACE sends
// there (namespaceFor), NOMAD_NAMESPACE unset. A volume's namespace does not change (create and
// register refuse it), so naming another is no way out; `nomad register --dry-run` advised it,
// and NOMAD_NAMESPACE for a volume whose spec names the namespace, which it does not move
// (TestDryRunMissingNamespaceAdvisesOnlyWhatWorks).
func (c *Client) NoNamespaceWayOut(volumeNS, ns, then string) string {
	create := "create it with `" + shellquote.Command("nomad namespace apply", ns) + "`" + then
	if ns != volumeNS && ns == c.Namespace {
		return fmt.Sprintf("Nomad there has no namespace %q, which NOMAD_NAMESPACE names for a volume of the default one: %s, or unset NOMAD_NAMESPACE to register it in the default namespace", ns, create)
	}
	return fmt.Sprintf("Nomad there has no namespace %q, which the volume's spec names: %s", ns, create)
}

// maxBelowCapacity is what volctl adds to err when it is Nomad's refusal of volume v's update
// whose capacity_max is below the capacity Nomad's copy has (CSIVolume.expandVolume): Nomad
// grew the volume past the capacity_max volctl has (Refused names it, and --dry-run says so).
// What works: the take-back records the size the plugin lists, and a registration after sends
// no capacity_max below it.
func maxBelowCapacity(err error, v spec.Volume) string {
	var ure api.UnexpectedResponseError
	if !errors.As(err, &ure) || !ure.HasStatusCode() || !strings.Contains(ure.Body(), "max requested capacity") {
		return ""
	}
	return fmt.Sprintf(" (Nomad's copy of the volume was grown, in Nomad, past volctl's capacity_max of %s, and Nomad refuses a capacity_max below a volume's capacity: Nomad serves its own copy, `%s` shows both; once the volume is deregistered in Nomad, `%s` records the size its plugin lists, and a registration after sends no capacity_max below it)",
		spec.FormatSize(v.CapacityMax), volctl("status", v.ID), volctl("release", v.ID))
}

// controllerUnreached is what volctl adds to err, Nomad's answer to a registration of v, when
// Nomad could not ask v's plugin's controller to validate it: "No path to node" (its servers
// have no connection to the client of the node that runs the controller: its agent stopped,
// or has not reconnected yet, as for half a minute after it restarts), "no healthy
// controllers" or "no CSI plugin named" (they, or the plugin's job, stopped since volctl
// looked). Nomad applied nothing, and the same
// command finishes it once the controller answers.
func controllerUnreached(err error, v spec.Volume) string {
	var ure api.UnexpectedResponseError
	if !errors.As(err, &ure) || !ure.HasStatusCode() {
		return ""
	}
	switch msg := leadersWords(ure.Body()); {
	case strings.HasPrefix(msg, "controller validate volume: No path to node"):
		return fmt.Sprintf(" (Nomad's servers have no connection to the Nomad client of the node that runs plugin %q's controller: that node's agent is not running, or has not reconnected yet, as for a minute after it restarts; `nomad node status` shows the nodes, and volctl does not retry: run the command again once that node's agent is back)",
			v.PluginID)
	case strings.HasPrefix(msg, "no CSI plugin named: "):
		return fmt.Sprintf(" (plugin %q does not run in Nomad now: its job stopped since volctl looked; `%s` shows it, and volctl does not retry: run its job, then run the command again)",
			v.PluginID, shellquote.Command("nomad plugin status", v.PluginID))
	case strings.HasPrefix(msg, "no healthy controllers for CSI plugin: "):
		return fmt.Sprintf(" (plugin %q has no healthy controller in Nomad now: its allocs stopped or are starting again; `%s` shows them, and volctl does not retry: run the command again once they are healthy)",
			v.PluginID, shellquote.Command("nomad plugin status", v.PluginID))
	}
	return ""
}

// busy is what volctl adds to err when it is a 429 or a 503 (Nomad's limit of connections
// per client, limits.http_max_conns_per_client, answers 429; a proxy's rate limit or a server
// not ready either): when to run the command again, as the answer's Retry-After says
// (a.retryAfter, in seconds or an HTTP date). volctl does not retry itself: a command that
// waited as long as the other side asks would hold the volume lock a registration holds all
// that time, and the command is safe to run again.
//
// So too Nomad's "No cluster leader" (a 500, or a proxy's 503): its servers are electing one,
// or too few are up for a quorum, and nothing is answered until one is elected.
func busy(err error, a *answer) string {
	var ure api.UnexpectedResponseError
	if !errors.As(err, &ure) || !ure.HasStatusCode() {
		return ""
	}
	if strings.Contains(ure.Body(), "No cluster leader") {
		return " (Nomad's servers have no leader: an election is under way, or too few servers are up for a quorum; `nomad operator raft list-peers` shows them, and volctl does not retry: run the command again once one is elected)"
	}
	if ure.StatusCode() != http.StatusTooManyRequests && ure.StatusCode() != http.StatusServiceUnavailable {
		return ""
	}
	when := "later"
	if s, err := strconv.ParseUint(a.retryAfter, 10, 32); err == nil {
		when = "in " + (time.Duration(s) * time.Second).String()
	} else if at, err := http.ParseTime(a.retryAfter); err == nil {
		when = "at " + at.UTC().Format(time.DateTime) + " UTC"
	}
	return " (Nomad, or a proxy before it, is overloaded or not ready, and volctl does not retry: run the command again " + when + ")"
}

// hideCreds replaces the credentials every request carries in s, something Nomad (or what
// answers for it) said (scrubAll).
func (c *Client) hideCreds(s string) string { return maskWords(scrubAll(s, c.creds), c.words) }

// maskWords replaces each of words in s, something Nomad or what answers for it said, where it
// stands as a word of its own, in any case of its ASCII letters: not inside a longer name,
// whose letters, digits, and '-', '_', '.' or '~' between two of them, go on before or after
// it ("ops-db", "devops", "ops.example" keep the user ops; "ops." at a sentence's end does
// not). A '%XX' or '\uXXXX' escape before it ends a word (a URL or JSON quoting the address:
// https%3A%2F%2Fops%40host), and so do its forms as a URL's query or path and JSON write it.
// The honest name that equals the user (admin) is masked too where it stands alone: volctl
// cannot tell a name from a password a person chose, and showing the one costs the access
// it gives, hiding the other one word of a message.
func maskWords(s string, words []string) string {
	if len(words) == 0 {
		return s
	}
	var forms []string
	for _, w := range words {
		for _, f := range []string{w, url.QueryEscape(w), url.PathEscape(w), jsonInner(w)} {
			if f = asciiLower(f); f != "" && !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	return replaceFolded(s, forms, func(lower string, i, n int) bool {
		return wordStarts(lower, i) && wordEnds(lower, i+n)
	})
}

// jsonInner is w as a JSON string writes it, without its quotes.
func jsonInner(w string) string {
	q, _ := json.Marshal(w)
	return string(q[1 : len(q)-1])
}

// asciiLower is s with its ASCII letters in lower case, each byte where it was.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// wordByte reports whether b is a letter or digit of a name (any byte of a non-ASCII rune).
func wordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80
}

// joiner reports whether b joins two parts of one name (ops-db, ops.example).
func joiner(b byte) bool { return b == '-' || b == '_' || b == '.' || b == '~' }

// MaskWords is maskWords, for a crash report, which the words a command's clients send
// (Words) are masked of as Nomad's answers are, whatever their length.
func MaskWords(s string, words []string) string { return maskWords(s, words) }

// wordStarts reports whether no name goes on before s[i:] (maskWords).
func wordStarts(s string, i int) bool {
	if i == 0 {
		return true
	}
	if i >= 3 && s[i-3] == '%' && isHex(s[i-2]) && isHex(s[i-1]) {
		return true
	}
	if i >= 6 && s[i-6] == '\\' && s[i-5] == 'u' && isHex(s[i-4]) && isHex(s[i-3]) && isHex(s[i-2]) && isHex(s[i-1]) {
		return true
	}
	if wordByte(s[i-1]) {
		return false
	}
	return !(joiner(s[i-1]) && i >= 2 && wordByte(s[i-2]))
}

// wordEnds reports whether no name goes on from s[i:] (maskWords).
func wordEnds(s string, i int) bool {
	if i == len(s) {
		return true
	}
	if wordByte(s[i]) {
		return false
	}
	return !(joiner(s[i]) && i+1 < len(s) && wordByte(s[i+1]))
}

func isHex(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }

// Hide is s, something Nomad or what answers for it said (a name in Nomad's copy of a volume),
// with the credentials every request carries replaced, as in Nomad's errors: for a message
// that quotes what Nomad answered.
func (c *Client) Hide(s string) string { return c.hideCreds(s) }

// scrubAll replaces each of vals (longest first) in s, something Nomad or what answers for it
// said, in every form csi.Scrubber finds a value in: as it is, and quoted by JSON or Go,
// percent-encoded, hex or base64. What answers at NOMAD_ADDR may quote the request's body (a
// WAF's or a gateway's refusal, a validation error quoting its input), which is JSON: a
// secret or password with a quote, a backslash, <, > or & is written there escaped
// ("pa\u0026ss"). A value shorter than spec.MinScrubLen, which the scrubber leaves, is
// replaced where it stands as a word of its own (maskWords).
func scrubAll(s string, vals []string) string {
	s = csi.Scrubber(vals)(s)
	var short []string
	for _, v := range vals {
		if v != "" && len(v) < spec.MinScrubLen {
			short = append(short, v)
		}
	}
	// Where it stands as a word of its own (maskWords): replaced inside every word, a mount
	// flag "ro" garbled each "error", "from" and "group" of Nomad's reply ("rpc
	// er[REDACTED]r"). A value of spec.MinFoldLen bytes or more the scrubber finds in any case
	// of its letters (what answers at NOMAD_ADDR may echo a request's header in another case: a
	// proxy that upper-cases a header's value in its error page, a gateway that lower-cases it),
	// as it does in a plugin's messages: one rule.
	return maskWords(s, short)
}

// replaceFolded replaces each of forms (lower-case ASCII) found in s in any case of its ASCII
// letters with spec.Redacted, longest first, so that a form holding another is replaced
// whole; where is, when not nil, asked whether the n bytes at i of s lowered may be replaced
// (maskWords: where they stand as a word).
func replaceFolded(s string, forms []string, where func(lower string, i, n int) bool) string {
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	lower := asciiLower(s) // byte for byte where s has them
	var b strings.Builder
	last := 0
	for i := 0; i < len(lower); {
		matched := 0
		for _, f := range forms {
			if strings.HasPrefix(lower[i:], f) && (where == nil || where(lower, i, len(f))) {
				matched = len(f)
				break
			}
		}
		if matched == 0 {
			i++
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(spec.Redacted)
		i += matched
		last = i
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// HideWords is s with the plain users sent to Nomad as the only credential masked where each
// stands as a word of its own (maskWords): for a command's output, whose values a scrubber of
// Credentials has scrubbed.
func (c *Client) HideWords(s string) string { return maskWords(s, c.words) }

// Words are the plain users sent to Nomad as the only credential (HideWords masks them), for
// a crash report, which is scrubbed of them wherever they are.
func (c *Client) Words() []string { return slices.Clone(c.words) }

// Credentials are the values hideCreds replaces (the ACL token, a basic auth password and its
// header's encoding), for a command to replace in Nomad's answers it prints.
func (c *Client) Credentials() []string { return slices.Clone(c.creds) }

// noteStopped notes err, the failure of the request about what (`volume "db"`), when it says
// that Nomad does not answer this command's requests for now, whatever they ask (stopsAll),
// unless one was noted before.
func (c *Client) noteStopped(ctx context.Context, err error, what string) {
	if c.stopped != nil && (stopsAll(err) || c.goneToken(ctx, err)) {
		why := fmt.Sprintf("did not answer the request about %s, or answered it busy (said above), and every other request would wait or fail the same", what)
		if isDenied(err) {
			why = fmt.Sprintf("refused the request about %s: it does not know NOMAD_TOKEN's token, or the token has expired (said above), and every other request carries it: `nomad acl token self` says which; set NOMAD_TOKEN to a token Nomad has", what)
		}
		c.stopped.CompareAndSwap(nil, &why)
	}
}

// stopsAll reports whether err, a request's failure, says that every other request of the
// command would fail so too, and the first ones wait as long: no HTTP answer (no connection,
// a TLS mismatch, no answer in time, Ctrl-C, an answer that is not Nomad's JSON or cut
// short), a redirect, a gateway's 502, 503 or 504, a 429 (Nomad's limit of connections per
// client, a proxy's rate limit), or Nomad's "No cluster leader" (which it says after waiting
// for one to be elected), or Nomad's 403 for a token it does not know or that has expired
// ("ACL token not found", "ACL token expired": a token with a TTL that ran out part way
// through a handover), which every request carries, unlike a "Permission denied" of one
// namespace's policy.
func stopsAll(err error) bool {
	var ure api.UnexpectedResponseError
	if !errors.As(err, &ure) || !ure.HasStatusCode() {
		return true
	}
	switch ure.StatusCode() {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case http.StatusForbidden:
		return tokenGone(ure.Body())
	}
	return strings.Contains(ure.Body(), "No cluster leader")
}

// tokenGone reports whether body, a 403's, is Nomad's word that it does not know the
// request's token or that the token expired (structs.ErrTokenNotFound, ErrTokenExpired), as
// Nomads before 2.0 said on every endpoint.
func tokenGone(body string) bool {
	return strings.Contains(body, "ACL token not found") || strings.Contains(body, "ACL token expired")
}

// tokenSelf is a client's answer, shared by its copies, to whether Nomad still has the
// request's token (goneToken): asked once, and once more after the expiration time that
// answer gave the token, if any; asked again, up to maxUnsettled times, while its answers
// settle nothing (mustAsk).
type tokenSelf struct {
	mu        sync.Mutex
	asked     bool
	askedAt   time.Time // when it was last asked
	expires   time.Time // the token's expiration time, as the last answer gave it; zero for none
	gone      bool
	unsettled int  // answers that settled nothing (settles): the next 403 asks again while fewer than maxUnsettled
	open      bool // the last answer settled nothing
}

// maxUnsettled bounds the questions to token/self whose answers settle nothing, so a Nomad
// failing that endpoint is asked it a few times a command, not once per volume.
const maxUnsettled = 3

// mustAsk reports whether a 403 at now asks token/self: never once Nomad said the token is
// gone; the first time; after an answer that settled nothing (a failure, or an OK given
// after the token's expiration time by volctl's clock, Nomad's behind it), up to
// maxUnsettled such answers; and once after the expiration time an answer before it gave.
func (ts *tokenSelf) mustAsk(now time.Time) bool {
	switch {
	case ts.gone:
		return false
	case !ts.asked:
		return true
	case ts.open:
		return ts.unsettled < maxUnsettled
	}
	return !ts.expires.IsZero() && now.After(ts.expires) && !ts.askedAt.After(ts.expires)
}

// settles reports whether token/self's answer, err, received at now, settles whether the
// token is gone: it does unless the request failed (no answer, or a 5xx other than an
// expired token's: Nomad electing a leader, a proxy's gateway error) or Nomad answered OK
// after the expiration time by volctl's clock (the clocks disagree: the token may expire any
// moment).
func (ts *tokenSelf) settles(err error, now time.Time) bool {
	if ts.gone {
		return true
	}
	if err == nil {
		return ts.expires.IsZero() || !now.After(ts.expires)
	}
	var ure api.UnexpectedResponseError
	return errors.As(err, &ure) && ure.HasStatusCode() && ure.StatusCode() < http.StatusInternalServerError
}

// goneToken reports whether err, a request's 403, is Nomad refusing a token it does not know
// or that has expired, not the token's policy refusing the request. Nomad 2.0.5 answers such a
// token a plain "Permission denied" on its volume and plugin endpoints (they resolve the token
// first, and answer its failure as ErrPermissionDenied), alike to a policy's refusal; only
// GET /v1/acl/token/self says "ACL token expired" (a 500) or refuses it (403). So, with a
// token set, the first such 403 of a command asks that once (tokenSelf): Nomad's own refusal
// there (403 "Permission denied"), or "ACL token expired" in any answer, means the token is
// gone; anything else a policy's refusal: an OK; a 404 "ACL token not found", which a workload
// identity (a task's JWT, no ACL token) gets; a 403 of a proxy in front of /v1/acl/. An older Nomad's 403 that says so itself (tokenGone) is not asked about.
// An OK that gives the token an expiration time (a token with a TTL) holds until then: a 403
// after it asks once more, since the token may have expired part way through the command
// (before, every later 403 was read as the policy's, each volume's error blaming the policy
// of a token Nomad no longer had, and the run went on asking). Measured by volctl's clock
// against Nomad's: with volctl's behind, a 403 in between still reads as the policy's; with
// volctl's ahead, the OK Nomad gives in between settles nothing, and a later 403 asks again
// (mustAsk), as after a failed question (a 500 while Nomad elects a leader).
func (c *Client) goneToken(ctx context.Context, err error) bool {
	var ure api.UnexpectedResponseError
	if !isDenied(err) || !errors.As(err, &ure) {
		return false
	}
	if tokenGone(ure.Body()) {
		return true
	}
	if !c.token || c.tokenSelf == nil {
		return false
	}
	ts := c.tokenSelf
	ts.mu.Lock()
	defer ts.mu.Unlock()
	now := time.Now()
	if !ts.mustAsk(now) {
		return ts.gone
	}
	ts.asked, ts.askedAt = true, now
	rctx, _, cancel := c.request(ctx)
	defer cancel()
	tok, _, err := c.api.ACLTokens().Self((&api.QueryOptions{Region: c.Region}).WithContext(rctx))
	if err == nil && tok != nil && tok.ExpirationTime != nil {
		ts.expires = *tok.ExpirationTime
	}
	var self api.UnexpectedResponseError
	// Nomad's own 403 (its body "Permission denied", or an older Nomad's "ACL token not
	// found"), or an expired token's 500: a 404 "ACL token not found" is a workload
	// identity (a task's NOMAD_TOKEN, a JWT without an ACL token), which Nomad knows; a
	// 403 of another body, a proxy refusing /v1/acl/ (TestNomadTokenSelfOfAnIdentityOrAProxyIsNoGoneToken).
	ts.gone = errors.As(err, &self) && self.HasStatusCode() &&
		(self.StatusCode() == http.StatusForbidden && (strings.Contains(self.Body(), "Permission denied") || tokenGone(self.Body())) ||
			strings.Contains(self.Body(), "ACL token expired"))
	ts.open = !ts.settles(err, time.Now())
	if ts.open {
		ts.unsettled++
	}
	return ts.gone
}

// Stopped is the error to report for a volume a command over many did not ask Nomad about,
// once a request of the client (or a copy) went unanswered or was answered busy (stopsAll):
// asking about each of the rest would wait out the timeout or fail the same (hours for a few
// hundred volumes against a Nomad that takes requests and never answers), a registration
// Nomad cannot apply would leave each volume marked with its outcome unsaid, and a Nomad
// rate-limiting volctl would be asked again for each. nil while Nomad answers.
func (c *Client) Stopped() error {
	if c == nil || c.stopped == nil || c.stopped.Load() == nil {
		return nil
	}
	return fmt.Errorf("Nomad at %s %s", c.Address, *c.stopped.Load())
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// answered reports whether err is an answer from Nomad itself: an HTTP status (or a redirect
// not followed), other than a gateway's saying it got none.
func answered(err error) bool {
	var ure api.UnexpectedResponseError
	var re *redirectError
	if errors.As(err, &re) {
		return true // the redirect was the answer: the request went no further
	}
	if !errors.As(err, &ure) || !ure.HasStatusCode() {
		return false
	}
	switch ure.StatusCode() {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return false
	}
	return true
}

// Namespace is the Nomad namespace a volume goes to: its own, unless that is the default and
// NOMAD_NAMESPACE names another. NOMAD_NAMESPACE=* (every namespace, to the nomad CLI's
// listings) names none: Nomad answers a read in namespace "*" with its 404 whatever it has,
// and refuses a registration there, so a volume is looked for where its spec says
// (WildcardNamespace refuses its registration).
func (c *Client) namespaceFor(v spec.Volume) string {
	if (v.Namespace == "" || v.Namespace == spec.DefaultNamespace) && c.Namespace != "" && c.Namespace != api.AllNamespacesNamespace {
		return c.Namespace
	}
	if v.Namespace == "" {
		return spec.DefaultNamespace
	}
	return v.Namespace
}

// WildcardNamespace is the error of a registration of v while NOMAD_NAMESPACE is "*", which
// names every namespace and so no one to put a volume of the default namespace in (nil for
// any other): the job volctl export nomad writes for it, which names no namespace, would not
// run there either (Nomad has no namespace "*"), and registering it in the default one would
// part the two.
func (c *Client) WildcardNamespace(v spec.Volume) error {
	if c.Namespace != api.AllNamespacesNamespace || v.Namespace != "" && v.Namespace != spec.DefaultNamespace {
		return nil
	}
	return fmt.Errorf("volume %q: NOMAD_NAMESPACE=* names every namespace, not one to register a volume of the default namespace in (Nomad has no namespace \"*\"): unset NOMAD_NAMESPACE to register it in the default namespace, or set it to the namespace its jobs run in", v.ID)
}

// pluginRead is the ACL rule reading a CSI plugin needs (registering a volume too).
const pluginRead = `the "plugin" policy "read"`

// PluginHealth is a CSI plugin as Nomad sees it.
type PluginHealth struct {
	ID                  string `json:"id"`
	Provider            string `json:"provider"`
	Version             string `json:"version"`
	ControllerRequired  bool   `json:"controller_required"`
	ControllersHealthy  int    `json:"controllers_healthy"`
	ControllersExpected int    `json:"controllers_expected"`
	NodesHealthy        int    `json:"nodes_healthy"`
	NodesExpected       int    `json:"nodes_expected"`
}

// Healthy reports whether the plugin can serve volumes: a healthy node, and a healthy
// controller when it needs one.
func (p PluginHealth) Healthy() bool {
	return p.NodesHealthy > 0 && (!p.ControllerRequired || p.ControllersHealthy > 0)
}

// Describe says how healthy the plugin is, for people.
func (p PluginHealth) Describe() string {
	s := fmt.Sprintf("nodes %d/%d healthy", p.NodesHealthy, p.NodesExpected)
	if p.ControllerRequired {
		s += fmt.Sprintf(", controllers %d/%d healthy", p.ControllersHealthy, p.ControllersExpected)
	}
	return s
}

// Plugin returns a CSI plugin's health in Nomad; an error matching ErrNotFound when Nomad has
// no such plugin, and ErrPermissionDenied when it refused the token (a 403).
func (c *Client) Plugin(ctx context.Context, id string) (PluginHealth, error) {
	rctx, a, cancel := c.request(ctx)
	defer cancel()
	p := &api.CSIPlugin{}
	_, err := c.api.Raw().Query(apiPath("/v1/plugin/csi/", id), p, (&api.QueryOptions{Region: c.Region}).WithContext(rctx))
	if err != nil {
		c.noteStopped(ctx, err, fmt.Sprintf("plugin %q", id))
		switch {
		case isNotFound(err) && a.fromNomad:
			return PluginHealth{}, fmt.Errorf("plugin %q: %w at %s", id, ErrNotFound, c.Address)
		case isNotFound(err):
			return PluginHealth{}, fmt.Errorf("plugin %q: Nomad at %s: %s: %s", id, c.Address, c.said(ctx, err, nil), notNomads)
		}
		out := fmt.Errorf("plugin %q: Nomad at %s: %s%s", id, c.Address, c.said(ctx, err, nil), c.denied(ctx, err, pluginRead, "")+c.noRegion(err, c.Region)+busy(err, a))
		if isDenied(err) {
			return PluginHealth{}, &deniedError{out}
		}
		return PluginHealth{}, out
	}
	if p.ID != id {
		return PluginHealth{}, fmt.Errorf("plugin %q: Nomad at %s %s", id, c.Address, c.notTheOneAsked("plugin", fmt.Sprintf("ID %q", p.ID)))
	}
	return PluginHealth{ID: p.ID, Provider: p.Provider, Version: p.Version, ControllerRequired: p.ControllerRequired,
		ControllersHealthy: p.ControllersHealthy, ControllersExpected: p.ControllersExpected,
		NodesHealthy: p.NodesHealthy, NodesExpected: p.NodesExpected}, nil
}

// PluginsOfDriver lists the IDs of the CSI plugins Nomad runs of driver provider (their
// GetPluginInfo name), in the client's region, sorted: for a volume whose plugin Nomad runs
// under another ID than volctl's. Nomad's words (the IDs) have the credentials sent to it
// replaced. A failure that stops every other request (no answer, a gone token) is noted for
// the command (noteStopped), as Plugin's is; a list answered without Nomad's X-Nomad-Index
// header (a proxy's or another server's page) is not Nomad's word of which plugins it runs,
// and is an error, not IDs to advise.
func (c *Client) PluginsOfDriver(ctx context.Context, provider string) ([]string, error) {
	rctx, a, cancel := c.request(ctx)
	defer cancel()
	var stubs []*api.CSIPluginListStub
	if _, err := c.api.Raw().Query("/v1/plugins?type=csi", &stubs, (&api.QueryOptions{Region: c.Region}).WithContext(rctx)); err != nil {
		c.noteStopped(ctx, err, "its CSI plugins")
		return nil, fmt.Errorf("Nomad at %s: its CSI plugins: %s", c.Address, c.said(ctx, err, nil))
	}
	if !a.fromNomad {
		return nil, fmt.Errorf("Nomad at %s: its CSI plugins: answered without Nomad's X-Nomad-Index header, so not as Nomad does (a proxy or a page answering for it: NOMAD_ADDR must name Nomad's API)", c.Address)
	}
	var ids []string
	for _, p := range stubs {
		if p != nil && p.Provider == provider && p.ID != "" {
			ids = append(ids, c.hideCreds(p.ID))
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// VolumeState is a CSI volume as Nomad has it.
type VolumeState struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
	// Name is the volume's name in Nomad, which Nomad refuses to change (Refused).
	Name        string       `json:"name"`
	ExternalID  string       `json:"external_id"`
	PluginID    string       `json:"plugin_id"`
	Provider    string       `json:"provider"`
	Schedulable bool         `json:"schedulable"`
	Plugin      PluginHealth `json:"plugin"`
	ReadAllocs  []string     `json:"read_allocs"`
	WriteAllocs []string     `json:"write_allocs"`
	// Allocs names the claiming allocs, with their job and mode.
	Allocs []AllocClaim `json:"allocs"`
	// Capabilities, mount options (MountFlags: how many flags Nomad answered, 1 for any
	// number, which it answers as one "[REDACTED]"), parameters, context and topology, to say
	// what a re-registration would change.
	Capabilities []spec.Capability `json:"capabilities"`
	FSType       string            `json:"fs_type,omitempty"`
	MountFlags   int               `json:"mount_flags,omitempty"`
	Parameters   map[string]string `json:"parameters,omitempty"`
	Context      map[string]string `json:"context,omitempty"`
	Topologies   []spec.Topology   `json:"topologies,omitempty"`
	// TopologyRequest is the topology_request Nomad's copy was registered with (nil: none),
	// which Nomad refuses to change once the volume has a topology (Refused).
	TopologyRequest *spec.TopologyRequest `json:"topology_request,omitempty"`
	CapacityMin     int64                 `json:"capacity_min,omitempty"`
	CapacityMax     int64                 `json:"capacity_max,omitempty"`
	// Capacity is the volume's capacity as Nomad has it (0: none known), the plugin's answer
	// to a creation or expansion Nomad made: a registration asking less keeps it.
	Capacity int64 `json:"capacity,omitempty"`
	// inUse is the access and attachment mode Nomad's claims hold the volume in (none while
	// it has none), which a registration's capabilities must keep (RefusedInUse).
	inUse spec.Capability
}

// AllocClaim is one Nomad alloc's claim on a volume.
type AllocClaim struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	JobID  string `json:"job_id"`
	Mode   string `json:"mode"` // read | write
	Status string `json:"client_status"`
}

// Stopped reports whether the alloc has stopped on its node (complete, failed or lost): its
// claim is one Nomad holds only until its unpublish of the volume succeeds.
func (a AllocClaim) Stopped() bool {
	return a.Status == "complete" || a.Status == "failed" || a.Status == "lost"
}

// Claims is how many allocs claim the volume in Nomad.
func (v VolumeState) Claims() int { return len(v.ReadAllocs) + len(v.WriteAllocs) }

// Volume returns a CSI volume from Nomad; an error matching ErrNotFound when Nomad has none by
// that ID in the namespace.
func (c *Client) Volume(ctx context.Context, id, namespace string) (VolumeState, error) {
	return c.VolumeIn(ctx, id, c.namespaceFor(spec.Volume{Namespace: namespace}), c.Region)
}

// NamespaceMissing reports whether Nomad, asked itself (its answer carries its index), says it
// has no namespace ns in region: a registration there is refused ("nonexistent namespace").
// Any other answer (the namespace, a token not allowed to read it, an error) says false: the
// registration says what Nomad makes of it.
func (c *Client) NamespaceMissing(ctx context.Context, ns, region string) bool {
	if ns == "" || ns == "default" {
		return false // Nomad's own, which it never lacks
	}
	rctx, a, cancel := c.request(ctx)
	defer cancel()
	var got api.Namespace
	_, err := c.api.Raw().Query(apiPath("/v1/namespace/", ns), &got, (&api.QueryOptions{Region: region}).WithContext(rctx))
	return err != nil && isNotFound(err) && a.fromNomad
}

// VolumeIn is Volume in exactly the namespace and region given (an empty region is the
// agent's own), whatever NOMAD_NAMESPACE and NOMAD_REGION say: where a volume was handed over.
func (c *Client) VolumeIn(ctx context.Context, id, ns, region string) (VolumeState, error) {
	rctx, a, cancel := c.request(ctx)
	defer cancel()
	v := &api.CSIVolume{}
	_, err := c.api.Raw().Query(apiPath("/v1/volume/csi/", id), v, (&api.QueryOptions{Namespace: ns, Region: region}).WithContext(rctx))
	if err != nil {
		c.noteStopped(ctx, err, fmt.Sprintf("volume %q", id))
		switch {
		case isNotFound(err) && a.fromNomad:
			return VolumeState{}, &indexedError{fmt.Errorf("volume %q (namespace %s): %w at %s", id, ns, ErrNotFound, c.Address), a.index}
		case isNotFound(err):
			return VolumeState{}, fmt.Errorf("volume %q: Nomad at %s: %s: %s", id, c.Address, c.said(ctx, err, nil), notNomads)
		}
		return VolumeState{}, fmt.Errorf("volume %q: Nomad at %s: %s%s", id, c.Address, c.said(ctx, err, nil), c.denied(ctx, err, "csi-read-volume", ns)+c.noRegion(err, region)+busy(err, a))
	}
	// Nomad answers a volume's read with that volume, in the namespace asked (one that names
	// none is an older Nomad's).
	if v.ID != id || ns != "" && v.Namespace != "" && v.Namespace != ns {
		return VolumeState{}, fmt.Errorf("volume %q: Nomad at %s %s", id, c.Address,
			c.notTheOneAsked("volume", fmt.Sprintf("ID %q, namespace %q (asked in namespace %s)", v.ID, v.Namespace, ns)))
	}
	out := VolumeState{ID: v.ID, Namespace: v.Namespace, Name: v.Name, ExternalID: v.ExternalID, PluginID: v.PluginID, Provider: v.Provider,
		Schedulable: v.Schedulable,
		Plugin: PluginHealth{ID: v.PluginID, Provider: v.Provider, ControllerRequired: v.ControllerRequired,
			ControllersHealthy: v.ControllersHealthy, ControllersExpected: v.ControllersExpected,
			NodesHealthy: v.NodesHealthy, NodesExpected: v.NodesExpected},
		ReadAllocs: sortedKeys(v.ReadAllocs), WriteAllocs: sortedKeys(v.WriteAllocs),
		Parameters: v.Parameters, Context: v.Context,
		CapacityMin: v.RequestedCapacityMin, CapacityMax: v.RequestedCapacityMax, Capacity: v.Capacity,
	}
	out.Allocs = []AllocClaim{}
	for _, a := range v.Allocations {
		if a == nil {
			continue
		}
		mode := ""
		if _, ok := v.WriteAllocs[a.ID]; ok {
			mode = "write"
		} else if _, ok := v.ReadAllocs[a.ID]; ok {
			mode = "read"
		}
		out.Allocs = append(out.Allocs, AllocClaim{ID: a.ID, Name: a.Name, JobID: a.JobID, Mode: mode, Status: a.ClientStatus})
	}
	for _, c := range v.RequestedCapabilities {
		if c != nil {
			out.Capabilities = append(out.Capabilities, spec.Capability{AccessMode: spec.AccessMode(c.AccessMode), AttachmentMode: spec.AttachmentMode(c.AttachmentMode)})
		}
	}
	if v.MountOptions != nil {
		out.FSType, out.MountFlags = v.MountOptions.FSType, len(v.MountOptions.MountFlags)
	}
	out.inUse = spec.Capability{AccessMode: spec.AccessMode(v.AccessMode), AttachmentMode: spec.AttachmentMode(v.AttachmentMode)}
	for _, t := range v.Topologies {
		if t != nil {
			out.Topologies = append(out.Topologies, spec.Topology{Segments: t.Segments})
		}
	}
	if tr := v.RequestedTopologies; tr != nil {
		out.TopologyRequest = &spec.TopologyRequest{Required: topologies(tr.Required), Preferred: topologies(tr.Preferred)}
	}
	return out, nil
}

// topologies are Nomad's topologies as volctl's (a nil one as one without segments, as Nomad
// compares them: CSITopology.Equal compares their segments' maps).
func topologies(ts []*api.CSITopology) []spec.Topology {
	var out []spec.Topology
	for _, t := range ts {
		var segs map[string]string
		if t != nil {
			segs = t.Segments
		}
		out = append(out, spec.Topology{Segments: segs})
	}
	return out
}

func sortedKeys(m map[string]*api.Allocation) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// APIVolume is a register spec as Nomad's API takes it, secrets and mount flags raw.
func (c *Client) APIVolume(v spec.Volume) *api.CSIVolume {
	out := &api.CSIVolume{
		ID: v.ID, Name: v.Name, ExternalID: v.ExternalID, Namespace: c.namespaceFor(v), PluginID: v.PluginID,
		Parameters: maps.Clone(v.Parameters), Context: maps.Clone(v.Context),
		RequestedCapacityMin: v.CapacityMin, RequestedCapacityMax: v.CapacityMax,
		// The size the plugin reported, as Nomad's own create records it: Nomad keeps a new
		// registration's, and with none (0) a later update in Nomad asking for no more than
		// the volume has was sent to the plugin as an expand, and refused for a plugin that
		// cannot expand ("expand is not implemented by this controller plugin").
		Capacity: v.Capacity,
	}
	if len(v.Secrets) > 0 {
		out.Secrets = api.CSISecrets(maps.Clone(v.Secrets.Plain()))
	}
	for _, cp := range v.Capabilities {
		out.RequestedCapabilities = append(out.RequestedCapabilities, &api.CSIVolumeCapability{
			AccessMode: api.CSIVolumeAccessMode(cp.AccessMode), AttachmentMode: api.CSIVolumeAttachmentMode(cp.AttachmentMode)})
	}
	// Always a mount_options, empty when there are none: Nomad stores an empty one at
	// registration and refuses, while the volume is in use, an update whose options differ
	// from it — and nil differs from empty.
	out.MountOptions = &api.CSIMountOptions{}
	if mo := v.MountOptions; mo != nil {
		out.MountOptions = &api.CSIMountOptions{FSType: mo.FSType, MountFlags: slices.Clone(mo.MountFlags.Plain())}
	}
	if tr := sentTopologyRequest(v); tr != nil {
		out.RequestedTopologies = &api.CSITopologyRequest{}
		for _, t := range tr.Required {
			out.RequestedTopologies.Required = append(out.RequestedTopologies.Required, &api.CSITopology{Segments: maps.Clone(t.Segments)})
		}
		for _, t := range tr.Preferred {
			out.RequestedTopologies.Preferred = append(out.RequestedTopologies.Preferred, &api.CSITopology{Segments: maps.Clone(t.Segments)})
		}
	}
	return out
}

// sentTopologyRequest is the topology_request a registration of v sends: nil when it has
// neither required nor preferred topologies.
func sentTopologyRequest(v spec.Volume) *spec.TopologyRequest {
	if tr := v.TopologyRequest; tr != nil && (len(tr.Required) > 0 || len(tr.Preferred) > 0) {
		return tr
	}
	return nil
}

// register registers (or, when Nomad has it already, updates) a volume: Nomad's warnings,
// and the X-Nomad-Index of its OK, the Raft index its write was applied at (0 when the answer
// had none). The error names the volume, the address and what Nomad said; it matches
// ErrRefused when Nomad refused it. HandOver is the registration of a handover, with its
// checks.
func (c *Client) register(ctx context.Context, v spec.Volume) (warnings string, index uint64, err error) {
	vol := c.APIVolume(v)
	rctx, a, cancel := c.request(ctx)
	defer cancel()
	resp := &api.CSIVolumeRegisterResponse{}
	wm, err := c.api.Raw().Write(apiPath("/v1/volume/csi/", vol.ID), &api.CSIVolumeRegisterRequest{Volumes: []*api.CSIVolume{vol}}, resp,
		(&api.WriteOptions{Namespace: vol.Namespace, Region: c.Region}).WithContext(rctx))
	if err != nil {
		c.noteStopped(ctx, err, fmt.Sprintf("volume %q", v.ID))
		said := scrub(c.said(ctx, err, func(s string) string { return scrub(s, v) }), v) + c.denied(ctx, err, "csi-write-volume", vol.Namespace, pluginRead) +
			c.noRegion(err, c.Region) + c.noNamespace(err, v, vol.Namespace) + maxBelowCapacity(err, v) + busy(err, a) + controllerUnreached(err, v)
		switch {
		case answered(err) && settled(err):
			return "", 0, &registerError{fmt.Errorf("volume %q: Nomad at %s %w: %s", v.ID, c.Address, ErrRefused, said), err}
		case answered(err):
			return "", 0, &registerError{fmt.Errorf("volume %q: Nomad at %s answered the registration with an error after which it may still apply it: %s", v.ID, c.Address, said), err}
		case !a.connected.Load():
			return "", 0, &registerError{fmt.Errorf("volume %q: Nomad at %s %w (no connection to it): %s", v.ID, c.Address, errNotSent, said), err}
		}
		return "", 0, &registerError{fmt.Errorf("volume %q: Nomad at %s did not answer the registration, which it may have taken: %s", v.ID, c.Address, said), err}
	}
	if !a.fromNomad {
		// Nomad sets X-Nomad-Index on its answer to every registration it ran: an OK without
		// it is a proxy's or a page's, not Nomad's word that it took the volume, which would
		// settle an earlier registration still in flight (engine.Registered). Nor is it a
		// refusal: the request may have gone on to Nomad.
		return "", 0, &registerError{fmt.Errorf("volume %q: Nomad at %s did not answer the registration, which it may have taken: what answered it OK did so without Nomad's X-Nomad-Index header, so not as Nomad does (a proxy or a page answering for it: NOMAD_ADDR must name Nomad's API)", v.ID, c.Address), errNotNomadsOK}
	}
	if resp != nil {
		warnings = resp.Warnings
	}
	if wm != nil {
		index = wm.LastIndex
	}
	return warnings, index, nil
}

// errNotNomadsOK is a registration answered OK without Nomad's X-Nomad-Index header.
var errNotNomadsOK = errors.New("answered OK without X-Nomad-Index")

// apiPath is the path of the API object of Nomad's under prefix with that ID, the ID escaped.
// The api module's CSIVolumes and CSIPlugins put an ID into the path as it is, and parse
// that as a URL: a "?" or "#" in the ID would end the path there (volume "db?x" asked for as
// "db", with "x" a query), a "%" would decode ("a%41" asked for as "aA") or fail to, so
// volctl would read another volume's answer, its 404 included, as this one's.
func apiPath(prefix, id string) string { return prefix + url.PathEscape(id) }

// indexedError is Nomad's answer err with the X-Nomad-Index it carried.
type indexedError struct {
	error
	index uint64
}

func (e *indexedError) Unwrap() error { return e.error }

// IndexOf is the X-Nomad-Index of the answer of Nomad's that err reports (its 404 for a
// volume), 0 when there is none.
func IndexOf(err error) uint64 {
	var ie *indexedError
	if errors.As(err, &ie) {
		return ie.index
	}
	return 0
}

// registerError is a failed registration: what volctl says (shown, secrets and credentials
// replaced), and the api module's error (cause, which may hold them), kept for HandOver to
// tell how the registration ended (refusedForCertain, settled).
type registerError struct{ shown, cause error }

func (e *registerError) Error() string   { return e.shown.Error() }
func (e *registerError) Unwrap() []error { return []error{e.shown, e.cause} }

// Is matches ErrUpdateRefused for a registration Nomad refused for what its copy has.
func (e *registerError) Is(target error) bool {
	return target == ErrUpdateRefused && (refusalOf(e.cause) == copyRefused || refusalOf(e.cause) == otherVolume)
}

// Changes lists what registering want would change in Nomad's copy have: field names, in a
// fixed order. It follows Nomad's update of a registered volume (CSIVolume.Register's
// Merge, and expandVolume for the capacity): capabilities and mount options are replaced by
// what is sent; the context and the capacity only when one is sent (a later Nomad keeps its
// own otherwise, and HandOver sends an earlier one, which cleared the context, its own back);
// the parameters never (Refused). Secrets are not compared (Nomad does not return them).
func Changes(have VolumeState, want spec.Volume) []string {
	var out []string
	if have.ExternalID != want.ExternalID {
		out = append(out, "external_id")
	}
	if have.PluginID != want.PluginID {
		out = append(out, "plugin_id")
	}
	if !sameCapabilities(have.Capabilities, want.Capabilities) {
		out = append(out, "capabilities")
	}
	fs, n := "", 0
	if want.MountOptions != nil {
		fs, n = want.MountOptions.FSType, len(want.MountOptions.MountFlags)
	}
	// Nomad answers a volume's mount flags, however many, as one "[REDACTED]" (its
	// CSIMountOptions.Sanitize): only whether there are any can be compared.
	if have.FSType != fs || (have.MountFlags > 0) != (n > 0) {
		out = append(out, "mount_options")
	}
	if len(want.Context) > 0 && !maps.Equal(have.Context, want.Context) {
		out = append(out, "context")
	}
	if (want.CapacityMin != 0 || want.CapacityMax != 0) && (have.CapacityMin != want.CapacityMin || have.CapacityMax != want.CapacityMax) {
		out = append(out, "capacity")
	}
	return out
}

// sameCapabilities compares two volumes' capabilities as a set, as Nomad uses them: its
// scheduler and claims ask whether a capability is among a volume's (CSIVolume's
// RequestedCapabilities), whatever their order or repeats.
func sameCapabilities(a, b []spec.Capability) bool {
	covers := func(xs, ys []spec.Capability) bool {
		for _, y := range ys {
			if !slices.Contains(xs, y) {
				return false
			}
		}
		return true
	}
	return covers(a, b) && covers(b, a)
}

// NotCompared lists what of want Nomad's answer to a read leaves out, so that Changes cannot
// compare it: its secrets (never answered) and its mount flags' values (answered as one
// "[REDACTED]": only whether there are any is compared).
func NotCompared(want spec.Volume) []string {
	var out []string
	if len(want.Secrets) > 0 {
		out = append(out, "secrets")
	}
	if want.MountOptions != nil && len(want.MountOptions.MountFlags) > 0 {
		out = append(out, "mount_flags")
	}
	return out
}

// Refused lists what Nomad refuses to change in a registered volume that registering want
// would (CSIVolume.Merge, "unable to update volume: ..."): its name, when want's differs
// ("volume name cannot be updated", as Nomad 2.0.5 answers an update of a volume registered
// there first under another name); its parameters, when want has some
// and they differ ("volume parameters cannot be updated"; none sent keeps Nomad's); its
// topology_request, once the volume has a topology, when the one sent is not the one Nomad's
// copy was registered with ("volume topology request update was not compatible with existing
// topology"; none sent differs from one, since Nomad keeps a registered volume's topology).
//
// And its capacity_max, when want's is below the capacity Nomad's copy has and the capacity
// range sent differs from the copy's ("max requested capacity ... less than or equal to
// current", CSIVolume.expandVolume, which compares the range only when it changes): Nomad's
// copy has more than volctl's record once Nomad grew the volume through the plugin, past the
// capacity_max volctl created it with.
func Refused(have VolumeState, want spec.Volume) []string {
	var out []string
	if want.Name != "" && have.Name != want.Name {
		out = append(out, "name")
	}
	if want.CapacityMax > 0 && have.Capacity > want.CapacityMax && (have.CapacityMin != want.CapacityMin || have.CapacityMax != want.CapacityMax) {
		out = append(out, "capacity_max")
	}
	if len(want.Parameters) > 0 && !maps.Equal(have.Parameters, want.Parameters) {
		out = append(out, "parameters")
	}
	if len(have.Topologies) > 0 && !sameTopologyRequest(have.TopologyRequest, sentTopologyRequest(want)) {
		out = append(out, "topology_request")
	}
	return out
}

// RefusedInUse lists what Nomad refuses to change in a registered volume its allocs claim that
// registering want would (CSIVolume.Merge): its mount options while it is in use ("can not
// update mount options while volume is in use"), when want's differ from its copy's as far as
// Nomad's answer shows them (the fs_type, whether there are mount flags); and its capabilities, when none of want's is the access and attachment
// mode its claims hold it in ("volume requested capabilities update was not compatible with
// existing capability in use"). A registration volctl sends while Nomad's allocs claim the
// volume is refused so, while --dry-run said it would update it.
func RefusedInUse(have VolumeState, want spec.Volume) []string {
	if have.Claims() == 0 {
		return nil
	}
	var out []string
	if have.inUse != (spec.Capability{}) && !slices.Contains(want.Capabilities, have.inUse) {
		out = append(out, "capabilities")
	}
	if slices.Contains(Changes(have, want), "mount_options") {
		out = append(out, "mount_options")
	}
	return out
}

// Kept lists what Nomad's copy have has otherwise than want and keeps whatever a registration
// of want sends, without refusing it (Changes lists what it would change, Refused what it
// refuses to): its topology, when it has none and want's registration sends required ones.
// Nomad takes a registered volume's topology (Topologies) from the topology_request of its
// first registration only; an update's is compared with it when there is one (Refused) and
// otherwise dropped (CSIVolume.Merge), so a copy registered without one keeps none, and Nomad
// places the volume's allocs on any node, where volctl's plugin says it is reachable on these.
// Only `nomad volume deregister` and a registration anew give it one.
func Kept(have VolumeState, want spec.Volume) []string {
	if tr := sentTopologyRequest(want); len(have.Topologies) == 0 && tr != nil && len(tr.Required) > 0 {
		return []string{"topology"}
	}
	return nil
}

// sameTopologyRequest compares two topology requests as Nomad does (CSITopologyRequest.Equal):
// none and one (even empty) differ; otherwise required and preferred topologies pair up in
// order, by their segments.
func sameTopologyRequest(a, b *spec.TopologyRequest) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.EqualFunc(a.Required, b.Required, sameSegments) && slices.EqualFunc(a.Preferred, b.Preferred, sameSegments)
}

// scrub replaces the volume's secret values and mount flags in what Nomad said: an error that
// echoes the request must not print them. The flags as the plugin path takes them (csi's
// requestValues, store.Tx.SecretValues): mount(8)'s own words are no secret
// (spec.ShownMountFlag: masked, "dev" garbled every "/dev/..." and "sync" every "fsync";
// recheck39b), and
// a password inside a flag is a value of its own (spec.MountFlagSecrets: a parser's error
// quotes it alone).
func scrub(msg string, v spec.Volume) string {
	var vals []string
	for _, s := range v.Secrets.Plain() {
		vals = append(vals, s)
	}
	if v.MountOptions != nil {
		for _, f := range v.MountOptions.MountFlags.Plain() {
			// A word shorter than spec.MinScrubLen ("ro") is masked where it stands alone, as
			// before (maskWords, TestNomadShortMountFlagIsMaskedAsAWordOnly): it garbles no word.
			if len(f) < spec.MinScrubLen || !spec.ShownMountFlag(f) {
				vals = append(append(vals, f), spec.MountFlagSecrets(f)...)
			}
		}
	}
	// Longest first, so a value that contains another is replaced whole.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	return scrubAll(msg, vals)
}

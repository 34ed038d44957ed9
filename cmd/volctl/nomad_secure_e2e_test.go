package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// secureNomad is what a world's agent runs with when its HTTP API has TLS (verify_https_client:
// a client certificate signed by the test's CA required) and ACLs: the files of the test's CA,
// the agent's certificate and a client one, and the management token the test bootstraps the
// ACLs with. A nil one is an agent without either.
type secureNomad struct {
	dir                           string
	caFile, certFile, keyFile     string // the agent's
	clientCertFile, clientKeyFile string
	token                         string // the management token's secret
	client                        *http.Client
	// minTTL, when set, is the agent's acl.token_min_expiration_ttl ("1s"), for tokens that
	// expire within a test.
	minTTL string
}

// newSecureNomad makes a CA, the agent's certificate (for server.global.nomad, localhost and
// 127.0.0.1, as Nomad's own `nomad tls cert create -server` makes) and a client certificate,
// under dir.
func newSecureNomad(t *testing.T, dir string) *secureNomad {
	t.Helper()
	s := &secureNomad{dir: dir}
	now := time.Now()
	// issue makes a key and a certificate of tmpl for it, signed by parent's key (its own for
	// the CA: parent nil), and writes both under dir as NAME.pem and NAME-key.pem.
	issue := func(tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (cert *x509.Certificate, key *ecdsa.PrivateKey, certFile, keyFile string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		if cert, err = x509.ParseCertificate(der); err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		name := tmpl.Subject.CommonName
		certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		writePEM(t, certFile, "CERTIFICATE", der)
		writePEM(t, keyFile, "EC PRIVATE KEY", kder)
		return cert, key, certFile, keyFile
	}
	ca, caKey, caFile, _ := issue(&x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil, nil)
	s.caFile = caFile
	leaf := func(serial int64, name string, dns []string, ips []net.IP, usage ...x509.ExtKeyUsage) (certFile, keyFile string) {
		_, _, certFile, keyFile = issue(&x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			DNSNames: dns, IPAddresses: ips, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: usage}, ca, caKey)
		return certFile, keyFile
	}
	s.certFile, s.keyFile = leaf(2, "server.global.nomad", []string{"server.global.nomad", "localhost"}, []net.IP{net.ParseIP("127.0.0.1")},
		x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	s.clientCertFile, s.clientKeyFile = leaf(3, "cli.global.nomad", []string{"cli.global.nomad"}, nil, x509.ExtKeyUsageClientAuth)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	pair, err := tls.LoadX509KeyPair(s.clientCertFile, s.clientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	s.client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	s.token = randomUUID(t)
	return s
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func randomUUID(t *testing.T) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// agentConfig is the agent configuration's acl and tls blocks ("" for none).
func (s *secureNomad) agentConfig() string {
	if s == nil {
		return ""
	}
	ttl := ""
	if s.minTTL != "" {
		ttl = fmt.Sprintf("\n  token_min_expiration_ttl = %q", s.minTTL)
	}
	return fmt.Sprintf(`acl {
  enabled = true%s
}
tls {
  http                = true
  ca_file             = %q
  cert_file           = %q
  key_file            = %q
  verify_https_client = true
}
`, ttl, s.caFile, s.certFile, s.keyFile)
}

// env is what the nomad CLI (and volctl, as Nomad's users run it) needs to reach the agent with
// the management token.
func (s *secureNomad) env() []string {
	if s == nil {
		return nil
	}
	return append(s.tlsEnv(), "NOMAD_TOKEN="+s.token)
}

// tlsEnv is the TLS variables alone.
func (s *secureNomad) tlsEnv() []string {
	return []string{"NOMAD_CACERT=" + s.caFile, "NOMAD_CLIENT_CERT=" + s.clientCertFile, "NOMAD_CLIENT_KEY=" + s.clientKeyFile}
}

// do sends the test's own request to the agent, with the management token and the client
// certificate when the agent is secured.
func (s *secureNomad) do(req *http.Request) (*http.Response, error) {
	if s == nil {
		return http.DefaultClient.Do(req)
	}
	req.Header.Set("X-Nomad-Token", s.token)
	return s.client.Do(req)
}

// bootstrap bootstraps the agent's ACLs with the management token once it has a leader.
func (s *secureNomad) bootstrap(w *nomadWorld) {
	if s == nil {
		return
	}
	w.poll("the ACL bootstrap", 60*time.Second, func() bool {
		req, err := http.NewRequest(http.MethodPost, w.agentAddr+"/v1/acl/bootstrap", strings.NewReader(fmt.Sprintf(`{"BootstrapSecret": %q}`, s.token)))
		if err != nil {
			w.t.Fatal(err)
		}
		resp, err := s.client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// secureVolume is a volume of the test's in-memory plugin "mem", with a secret.
const secureVolume = `id          = "db"
name        = "db"
type        = "csi"
plugin_id   = "mem"
external_id = "ext-db"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
secrets {
  password = "s3cret-Passw0rd-volctl"
}
`

// handoverPolicy grants what a handover needs and nothing more, as docs/troubleshooting.md
// gives it: read and write CSI volumes in the default namespace, read plugins; no node read
// (so not /v1/agent/members).
const handoverPolicy = `namespace "default" {
  capabilities = ["csi-read-volume", "csi-write-volume"]
}
plugin {
  policy = "read"
}
`

// TestNomadWithACLsAndTLS runs the bridge against a real Nomad as its users run it in
// production: ACLs on, TLS on its HTTP API with client certificates required (certificates
// the test makes), and a token whose policy grants what a handover needs and no more
// (handoverPolicy: no node read). With the TLS variables and that token, status, the plan
// and the handover work, and the plan of a volume Nomad has another of fails as the
// registration does (exit 4), as JSON too, and so does one of a volume Nomad has under
// another name (registered there first), whose name Nomad refuses to change; the plan and
// the update of a volume registered there first with a secret volctl's copy lacks say that
// Nomad's secrets are replaced by none, as Nomad then validates it with none; a token of csi-write-volume alone is refused the handover,
// named csi-read-volume (Nomad's write does not include it); each TLS and ACL mistake —
// no NOMAD_CACERT (NOMAD_SKIP_VERIFY then works), no client certificate, http:// for an
// https API, no token, a token Nomad does not know, an unknown NOMAD_REGION, a
// NOMAD_NAMESPACE Nomad does not have — is named with what to set; the note that volctl
// could not tell whether Nomad erases secrets is given; no output shows the volume's secret
// or a token; Nomad's deregister, then volctl nomad release, takes it back.
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestNomadWithACLsAndTLS(t *testing.T) {
	if os.Getenv("NOMAD_BIN") == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to run the bridge against a real Nomad with ACLs and TLS")
	}
	w := makeNomadWorld(t, 3*time.Minute)
	w.secure = newSecureNomad(t, w.dir)

	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "n1"
	mem := csitest.NewMemPlugin(cfg)
	for _, ext := range []string{"ext-db", "ext-twin", "ext-nomads-twin", "ext-named", "ext-first"} {
		mem.AddVolume(csi.Volume{ID: ext, CapacityBytes: 1 << 20})
	}
	// The secrets of the last ControllerValidateVolumeCapabilities of each volume, by external
	// ID: Nomad sends its copy's, merged with a registration's, at each registration.
	var mu sync.Mutex
	validated := map[string]map[string]string{}
	record := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*csipb.ValidateVolumeCapabilitiesRequest); ok {
			mu.Lock()
			validated[r.GetVolumeId()] = maps.Clone(r.GetSecrets())
			mu.Unlock()
		}
		return handler(ctx, req)
	}
	socket := w.serveMemAndStart(mem, record, "start nomad agent -dev with ACLs and TLS")

	w.stepTo("run plugin mem in Nomad; tokens for a handover, and for csi-write-volume alone")
	w.runLinkedPlugins("mem-plugin", socket, []string{"mem"})
	token := func(name, policy string) string {
		t.Helper()
		w.writeFile(name+".hcl", policy)
		w.nomad("acl", "policy", "apply", name, filepath.Join(w.dir, name+".hcl"))
		var tok struct{ SecretID string }
		if err := json.Unmarshal([]byte(w.nomad("acl", "token", "create", "-name", name, "-policy", name, "-json")), &tok); err != nil || tok.SecretID == "" {
			t.Fatalf("acl token create %s: %v", name, err)
		}
		return tok.SecretID
	}
	handover := token("handover", handoverPolicy)
	writeOnly := token("write-only", strings.Replace(handoverPolicy, `"csi-read-volume", `, "", 1))
	readOnly := token("read-only", strings.Replace(handoverPolicy, `, "csi-write-volume"`, "", 1))

	w.stepTo("volctl registers db, twin and named locally; Nomad has another twin, and named under another name")
	w.writeFile("db.hcl", secureVolume)
	w.writeFile("twin.hcl", strings.NewReplacer(`"db"`, `"twin"`, "ext-db", "ext-twin").Replace(secureVolume))
	w.writeFile("nomads-twin.hcl", strings.NewReplacer(`"db"`, `"twin"`, "ext-db", "ext-nomads-twin").Replace(secureVolume))
	w.volctl(0, "plugin", "register", "--id", "mem", "--socket", socket)
	w.volctl(0, "volume", "register", filepath.Join(w.dir, "db.hcl"))
	w.volctl(0, "volume", "register", filepath.Join(w.dir, "twin.hcl"))
	w.nomad("volume", "register", filepath.Join(w.dir, "nomads-twin.hcl"))
	named := strings.NewReplacer(`"db"`, `"named"`, "ext-db", "ext-named").Replace(secureVolume)
	w.writeFile("named.hcl", named)
	w.writeFile("nomads-named.hcl", strings.Replace(named, `name        = "named"`, `name        = "nomads-name"`, 1))
	w.volctl(0, "volume", "register", filepath.Join(w.dir, "named.hcl"))
	w.nomad("volume", "register", filepath.Join(w.dir, "nomads-named.hcl"))
	// first: registered in Nomad first with a secret; volctl's copy has none.
	first := strings.NewReplacer(`"db"`, `"first"`, "ext-db", "ext-first").Replace(secureVolume)
	w.writeFile("nomads-first.hcl", first)
	w.writeFile("first.hcl", first[:strings.Index(first, "secrets {")])
	w.nomad("volume", "register", filepath.Join(w.dir, "nomads-first.hcl"))
	w.volctl(0, "volume", "register", filepath.Join(w.dir, "first.hcl"))

	secrets := []string{"s3cret-Passw0rd-volctl", handover, writeOnly, readOnly, w.secure.token}
	user := append(w.secure.tlsEnv(), "NOMAD_TOKEN="+handover)
	run := func(code int, env []string, args ...string) string {
		t.Helper()
		w.env = env
		defer func() { w.env = nil }()
		out := w.volctl(code, args...)
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("volctl %s shows a secret or token (%.8s...):\n%s", strings.Join(args, " "), s, out)
			}
		}
		return out
	}
	expect := func(out string, want ...string) {
		t.Helper()
		for _, s := range want {
			if !strings.Contains(out, s) {
				t.Errorf("%s\nwant it to say %q", out, s)
			}
		}
	}
	without := func(env []string, drop ...string) []string {
		var out []string
		for _, kv := range env {
			if !slices.Contains(drop, strings.SplitN(kv, "=", 2)[0]) {
				out = append(out, kv)
			}
		}
		return out
	}

	w.stepTo("TLS and ACL mistakes, each named with what to set")
	expect(run(1, without(user, "NOMAD_CACERT"), "nomad", "status", "db"), "signed by a CA volctl does not trust", "NOMAD_CACERT")
	expect(run(0, append(without(user, "NOMAD_CACERT"), "NOMAD_SKIP_VERIFY=true"), "nomad", "status", "db"), "db ")
	// Another CA's certificate in NOMAD_CACERT, and a NOMAD_TLS_SERVER_NAME Nomad's
	// certificate is not for: each named, with the address.
	other := newSecureNomad(t, t.TempDir())
	expect(run(1, append(without(user, "NOMAD_CACERT"), "NOMAD_CACERT="+other.caFile), "nomad", "status", "db"),
		"Nomad at "+w.agentAddr, "NOMAD_CACERT="+other.caFile+" does not hold the CA certificate that signed Nomad's")
	expect(run(1, append(user, "NOMAD_TLS_SERVER_NAME=nomad.example.com"), "nomad", "status", "db"),
		"Nomad at "+w.agentAddr, "NOMAD_TLS_SERVER_NAME=nomad.example.com names a host Nomad's certificate is not for")
	expect(run(0, append(user, "NOMAD_TLS_SERVER_NAME=server.global.nomad"), "nomad", "status", "db"), "db ")
	expect(run(1, without(user, "NOMAD_CLIENT_CERT", "NOMAD_CLIENT_KEY"), "nomad", "status", "db"), "NOMAD_CLIENT_CERT and NOMAD_CLIENT_KEY")
	w.nomadAddr = strings.Replace(w.agentAddr, "https://", "http://", 1)
	expect(run(1, user, "nomad", "status", "db"), "NOMAD_ADDR must say https://")
	w.nomadAddr = w.agentAddr
	expect(run(1, without(user, "NOMAD_TOKEN"), "nomad", "status", "db"), "NOMAD_TOKEN is not set", "csi-read-volume in namespace default")
	expect(run(1, append(without(user, "NOMAD_TOKEN"), "NOMAD_TOKEN="+randomUUID(t)), "nomad", "status", "db"), "nomad acl token self")
	// A deleted token: Nomad 2.0.5 answers its volume reads a plain "Permission denied", as
	// it answers a policy's refusal; token/self tells them apart, and the rest are not asked.
	var gone struct{ AccessorID, SecretID string }
	if err := json.Unmarshal([]byte(w.nomad("acl", "token", "create", "-name", "gone", "-policy", "handover", "-json")), &gone); err != nil || gone.SecretID == "" {
		t.Fatalf("acl token create gone: %v", err)
	}
	w.nomad("acl", "token", "delete", gone.AccessorID)
	secrets = append(secrets, gone.SecretID)
	out := run(1, append(without(user, "NOMAD_TOKEN"), "NOMAD_TOKEN="+gone.SecretID), "nomad", "status", "db", "twin", "named")
	expect(out, "does not know NOMAD_TOKEN's token, or the token has expired", ": not asked")
	if strings.Contains(out, "policy must grant") {
		t.Errorf("nomad status with a deleted token:\n%s\nwant it not to blame the token's policy", out)
	}
	expect(run(1, append(user, "NOMAD_REGION=nosuch"), "nomad", "status", "db"), `knows no region "nosuch", which NOMAD_REGION names`)
	expect(run(1, append(user, "NOMAD_NAMESPACE=nosuch"), "nomad", "register", "db"),
		"csi-read-volume in namespace nosuch, which NOMAD_NAMESPACE names", "`nomad namespace status nosuch`")
	expect(run(1, append(without(user, "NOMAD_TOKEN"), "NOMAD_TOKEN="+writeOnly), "nomad", "register", "db"), "csi-read-volume in namespace default")
	// A token that may read volumes but not write them: the registration is refused, named,
	// and the volume not left marked (volctl's to claim, as Nomad has it not).
	expect(run(1, append(without(user, "NOMAD_TOKEN"), "NOMAD_TOKEN="+readOnly), "nomad", "register", "db"), "csi-write-volume in namespace default")
	var marked struct{ Handover json.RawMessage }
	if out := w.volctl(0, "volume", "status", "db", "--json"); json.Unmarshal([]byte(out), &marked) != nil || marked.Handover != nil {
		t.Errorf("volume db after a registration NOMAD_TOKEN may not write: %s, want it not marked handed over", out)
	}

	w.stepTo("the plan and the handover with the TLS variables and the handover token")
	expect(run(0, user, "nomad", "status", "db"), "db ")
	expect(run(0, user, "nomad", "register", "db", "--dry-run"), `Would register volume "db"`, `Note: volume "db" has secrets`, `"node" policy "read"`)
	expect(run(4, user, "nomad", "register", "twin", "--dry-run"), `Nomad's volume "twin" is another one`, "would not go through")
	var plans []struct {
		ID        string   `json:"id"`
		Action    string   `json:"action"`
		WouldFail []string `json:"would_fail"`
	}
	// The JSON is stdout, which run puts before stderr's notes.
	if err := json.NewDecoder(strings.NewReader(run(4, user, "nomad", "register", "db", "twin", "--dry-run", "--json"))).Decode(&plans); err != nil || len(plans) != 2 ||
		plans[0].Action != "register" || len(plans[0].WouldFail) != 0 || plans[1].Action != "another" || len(plans[1].WouldFail) != 1 {
		t.Errorf("the plan of db and twin as JSON: %+v, %v; want db registered, twin another volume, which would stop it", plans, err)
	}
	run(4, user, "nomad", "register", "twin")
	// Nomad refuses to change a registered volume's name: the plan, status and the
	// registration say so alike.
	expect(run(4, user, "nomad", "register", "named", "--dry-run"), "does not change a registered volume's name", "would not go through")
	expect(run(0, user, "nomad", "status", "named", "-t", `{{range .}}{{range .differs}}{{.}} {{end}}{{end}}`), "name")
	expect(run(4, user, "nomad", "register", "named"), "volume name cannot be updated", "Nomad keeps its copy")
	// Nomad does not show a copy's secrets, and its update takes the ones sent, none
	// included: the plan and the registration say so of a volume registered there first.
	expect(run(0, user, "nomad", "register", "first", "--dry-run"), "Nomad does not show its copy's secrets", "would replace them with volctl's, which are none")
	expect(run(0, user, "nomad", "register", "first"), `Updated volume "first"`, "the registration replaced them with volctl's, which are none")
	mu.Lock()
	if got := validated["ext-first"]; len(got) != 0 {
		t.Errorf("Nomad validated volume first with secrets %v after volctl's registration without any; the note says it takes none", slices.Collect(maps.Keys(got)))
	}
	mu.Unlock()
	expect(run(0, user, "nomad", "register", "db"), `Registered volume "db"`, `Note: volume "db" has secrets`)
	var st []struct {
		Registered bool `json:"registered"`
		HandedOver bool `json:"handed_over"`
	}
	if err := json.Unmarshal([]byte(run(0, user, "nomad", "status", "db", "--json")), &st); err != nil || len(st) != 1 || !st[0].Registered || !st[0].HandedOver {
		t.Errorf("nomad status db --json after the handover: %+v, %v; want it registered and handed over", st, err)
	}

	w.stepTo("deregister in Nomad; volctl nomad release takes it back")
	w.nomad("volume", "deregister", "db")
	expect(run(0, user, "nomad", "release", "db"), `Took volume "db" back`)

	w.stepTo("stop the plugin's job and the agent; nothing left running")
	w.nomad("job", "stop", "-detach", "mem-plugin")
	w.stopAgent()
	w.checkClean()
}

// TestNomadTokenExpiringMidRunIsNamed runs `volctl nomad register` of four volumes with a token
// of a 3 s TTL against a real Nomad with ACLs: volume a's namespace is not in the token's
// policy (a 403 of the policy, while the token is good: token/self answers it, with its
// expiration time), b's registration takes until the token has expired (the plugin's
// validation waits), and c and d come after. Nomad 2.0.5 answers the expired token's requests
// a plain 403 "Permission denied", as it answers the policy's refusal. Before, token/self's
// first answer held for the whole command: b's read-back, c and d were each refused and
// blamed on the token's policy, every one asked. Now the first 403 after the expiration time
// asks token/self again, which says the token expired: the run stops there, c and d not asked.
//
// Opt-in: NOMAD_BIN names a Nomad binary. No mounts.
func TestNomadTokenExpiringMidRunIsNamed(t *testing.T) {
	if os.Getenv("NOMAD_BIN") == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to run the bridge against a real Nomad whose token expires part way through a run")
	}
	w := makeNomadWorld(t, 3*time.Minute)
	w.secure = newSecureNomad(t, w.dir)
	w.secure.minTTL = "1s"

	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "n1"
	mem := csitest.NewMemPlugin(cfg)
	for _, ext := range []string{"ext-a", "ext-b", "ext-c", "ext-d"} {
		mem.AddVolume(csi.Volume{ID: ext, CapacityBytes: 1 << 20})
	}
	var mu sync.Mutex
	var slowUntil time.Time // b's validation by Nomad waits until then
	record := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*csipb.ValidateVolumeCapabilitiesRequest); ok && r.GetVolumeId() == "ext-b" {
			mu.Lock()
			wait := time.Until(slowUntil)
			mu.Unlock()
			time.Sleep(wait)
		}
		return handler(ctx, req)
	}
	socket := w.serveMemAndStart(mem, record, "start nomad agent -dev with ACLs, TLS and a token TTL as short as 1s")
	w.runLinkedPlugins("mem-plugin", socket, []string{"mem"})
	w.writeFile("handover.hcl", handoverPolicy)
	w.nomad("acl", "policy", "apply", "handover", filepath.Join(w.dir, "handover.hcl"))

	w.stepTo("volctl registers a (namespace other), b, c and d locally")
	w.volctl(0, "plugin", "register", "--id", "mem", "--socket", socket)
	for _, id := range []string{"a", "b", "c", "d"} {
		v := strings.NewReplacer(`"db"`, `"`+id+`"`, "ext-db", "ext-"+id).Replace(secureVolume)
		if id == "a" {
			v += "namespace = \"other\"\n"
		}
		w.writeFile(id+".hcl", v)
		w.volctl(0, "volume", "register", filepath.Join(w.dir, id+".hcl"))
	}

	w.stepTo("volctl nomad register a b c d with a token of a 3s TTL, expiring during b's registration")
	var tok struct {
		SecretID       string
		ExpirationTime time.Time
	}
	if err := json.Unmarshal([]byte(w.nomad("acl", "token", "create", "-name", "short", "-policy", "handover", "-ttl", "3s", "-json")), &tok); err != nil || tok.SecretID == "" || tok.ExpirationTime.IsZero() {
		t.Fatalf("acl token create -ttl 3s: %+v, %v", tok, err)
	}
	mu.Lock()
	slowUntil = tok.ExpirationTime.Add(time.Second)
	mu.Unlock()
	w.env = append(w.secure.tlsEnv(), "NOMAD_TOKEN="+tok.SecretID)
	out := w.volctl(1, "nomad", "register", "a", "b", "c", "d")
	w.env = nil
	if time.Now().Before(tok.ExpirationTime) {
		t.Fatalf("the run ended before the token expired (%s): %s", tok.ExpirationTime, out)
	}
	for _, want := range []string{`volume "a"`, "csi-read-volume in namespace other", "does not know NOMAD_TOKEN's token, or the token has expired", `volumes "c", "d": not asked`} {
		if !strings.Contains(out, want) {
			t.Errorf("volctl nomad register a b c d, the token expiring during b's registration:\n%s\nwant it to say %q", out, want)
		}
	}
	if strings.Contains(out, "in namespace default") {
		t.Errorf("volctl nomad register a b c d:\n%s\nwant no refusal after the token expired blamed on its policy (which grants namespace default)", out)
	}
	if strings.Contains(out, tok.SecretID) {
		t.Errorf("volctl nomad register shows the token")
	}

	w.stepTo("stop the plugin's job and the agent; nothing left running")
	w.nomad("job", "stop", "-detach", "mem-plugin")
	w.stopAgent()
	w.checkClean()
}

// serveMemAndStart serves mem, through record, at the world's mem.sock, and starts the agent
// (step names the step) for volctl to talk to: the socket.
func (w *nomadWorld) serveMemAndStart(mem *csitest.MemPlugin, record grpc.UnaryServerInterceptor, step string) string {
	w.t.Helper()
	socket := filepath.Join(w.dir, "mem.sock")
	csitest.ServeAt(w.t, socket, csitest.WithServer(mem), csitest.WithInterceptor(record))
	w.stepTo(step)
	w.startAgent()
	w.nomadAddr = w.agentAddr
	return socket
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
)

// NOMAD_ADDR with the token as a query key with no value (?TOKEN=) and in its path
// (/v1/TOKEN/): every place the address reaches showed it (register's text and --dry-run
// --json, nomad status and its --json, volume status --json's handover, the events, the
// handover mark in the state file, a release's error and its advice from another address).
// None does now (engine.HiddenNomadPathAndQuery), each naming the address with xxxxx there;
// the volume is still handed over to, and taken back from, the host written.
func TestNomadAddressSecretInPathOrKeyIsShownNowhere(t *testing.T) {
	const secret = "s3cretTOKEN9"
	h := nomadHarness(t)
	n := newFakeNomad(t)
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "")
	addr := n.srv.URL + "/v1/" + secret + "/?" + secret + "="
	shown := n.srv.URL + "/v1/xxxxx/?xxxxx"
	client := func() (*nomad.Client, error) { return nomad.NewClient(addr) }
	// Another address of the same Nomad (localhost for 127.0.0.1), with the token in its path.
	elsewhere := func() (*nomad.Client, error) {
		return nomad.NewClient(strings.Replace(n.srv.URL, "127.0.0.1", "localhost", 1) + "/" + secret)
	}
	var all strings.Builder
	run := func(what string, f func(ios *iostreams.IOStreams) error, wantErr bool) {
		t.Helper()
		ios, _, out, errOut := iostreams.Test()
		err := f(ios)
		if (err != nil) != wantErr {
			t.Fatalf("%s: %v\n%s%s", what, err, out, errOut)
		}
		all.WriteString(out.String() + errOut.String())
		if err != nil {
			all.WriteString(err.Error())
		}
	}
	run("nomad register --dry-run --json", func(ios *iostreams.IOStreams) error {
		return nomadRegisterRun(h.ctx, &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{"db"}, DryRun: true, Exporter: exportFlags{JSON: true}})
	}, false)
	run("nomad register", func(ios *iostreams.IOStreams) error {
		return nomadRegisterRun(h.ctx, &NomadRegisterOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{"db"}})
	}, false)
	for _, json := range []bool{false, true} {
		run("nomad status", func(ios *iostreams.IOStreams) error {
			return nomadStatusRun(h.ctx, &NomadStatusOptions{IO: ios, Engine: h.engine, Nomad: client, Exporter: exportFlags{JSON: json}})
		}, false)
		run("volume status db", func(ios *iostreams.IOStreams) error {
			return volumeStatusRun(h.ctx, &VolumeStatusOptions{IO: ios, Engine: h.engine, Now: time.Now, ID: "db", Exporter: exportFlags{JSON: json}})
		}, false)
	}
	run("nomad release from another address", func(ios *iostreams.IOStreams) error {
		return nomadReleaseRun(h.ctx, &NomadReleaseOptions{IO: ios, Engine: h.engine, Nomad: elsewhere, Volumes: []string{"db"}})
	}, true)
	info, err := h.e.Volume(h.ctx, "db")
	if err != nil || info.Handover == nil {
		t.Fatalf("volume db is not handed over: %v", err)
	}
	all.WriteString(info.Handover.Address + "\n" + info.Handover.TakeBackCommands())
	n.mu.Lock()
	clear(n.vols) // nomad volume deregister db
	n.mu.Unlock()
	run("nomad release", func(ios *iostreams.IOStreams) error {
		return nomadReleaseRun(h.ctx, &NomadReleaseOptions{IO: ios, Engine: h.engine, Nomad: client, Volumes: []string{"db"}})
	}, false)
	run("events --json", func(ios *iostreams.IOStreams) error {
		return eventsRun(h.ctx, &EventsOptions{IO: ios, Engine: h.engine, Now: time.Now, Exporter: exportFlags{JSON: true}})
	}, false)
	s := all.String()
	if strings.Contains(s, secret) {
		t.Errorf("the address's secret is shown:\n%s", s)
	}
	for _, want := range []string{"Nomad at " + shown, `"nomad_address":"` + shown, "taken back from Nomad at " + shown, "localhost:" + strings.Split(n.srv.URL, ":")[2] + "/xxxxx"} {
		if !strings.Contains(strings.ReplaceAll(s, `": "`, `":"`), want) {
			t.Errorf("the address is not named as %s:\n%s", want, s)
		}
	}
	// Nor is it in the state file, where the mark and the events are kept.
	files, _ := filepath.Glob(filepath.Join(h.state, "*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s holds the address's secret", f)
		}
	}
}

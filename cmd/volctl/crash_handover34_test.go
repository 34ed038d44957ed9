package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// A `volctl nomad register` killed (SIGKILL) once its handover mark is committed, before the
// registration is sent to Nomad (failpoint handover:marked): Nomad has nothing, and the mark,
// unsettled, cannot tell that from a registration on its way. A local claim is refused naming
// the registration again as what finishes it; the release is refused on Nomad's 404, saying the
// same; the registration again registers the volume in Nomad (the first it gets) and settles
// the mark (chaos34: round 33 paused in the tests' callback, never killed inside the command).
func TestCrashNomadRegisterOnceMarked(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t, failpointsTag)
	env := newHostEnv(t)
	env.createVolume("db", spec.SingleNodeWriter)
	fake := &killNomad{volumes: map[string]map[string]any{}, taken: make(chan struct{}), hold: make(chan struct{}), answer: true}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	nomadEnv := []string{"NOMAD_ADDR=" + srv.URL, "NOMAD_TOKEN=", "NOMAD_NAMESPACE=", "NOMAD_REGION="}

	out, err := env.runBinary(bin, append([]string{engine.FailpointEnv + "=handover:marked"}, nomadEnv...), "nomad", "register", "db")
	if !killed(err) {
		t.Fatalf("nomad register with failpoint handover:marked: %v (want killed there)\n%s", err, out)
	}
	fake.mu.Lock()
	puts := fake.puts
	fake.mu.Unlock()
	if puts != 0 {
		t.Fatalf("Nomad got %d registrations from a volctl killed before it sent one", puts)
	}
	claimOut, err := env.run(nomadEnv, "volume", "claim", "db", "--alloc", "local-0")
	if code := exitCode(err); code != 4 || !strings.Contains(claimOut, "volctl nomad register db") {
		t.Fatalf("claim after the kill: exit %d\n%s\nwant exit 4 naming the registration again as what finishes it", code, claimOut)
	}
	relOut, err := env.run(nomadEnv, "nomad", "release", "db")
	if code := exitCode(err); code != 4 || !strings.Contains(relOut, "volctl nomad register db") {
		t.Fatalf("release with Nomad not having the volume and the mark unsettled: exit %d\n%s\nwant exit 4 naming the registration again", code, relOut)
	}
	again, err := env.run(nomadEnv, "nomad", "register", "db")
	if err != nil {
		t.Fatalf("register again: %v\n%s", err, again)
	}
	fake.mu.Lock()
	n, puts := len(fake.volumes), fake.puts
	fake.mu.Unlock()
	if n != 1 || puts != 1 {
		t.Fatalf("Nomad has %d volume(s) after %d registrations, want 1 after 1\n%s", n, puts, again)
	}
	var st struct {
		Handover *struct {
			Unsettled bool `json:"unsettled"`
		} `json:"handover"`
	}
	if err := json.Unmarshal([]byte(env.ok("volume", "status", "db", "--json")), &st); err != nil || st.Handover == nil || st.Handover.Unsettled {
		t.Fatalf("volume status after the registration again: %+v (%v), want handed over, settled", st, err)
	}
}

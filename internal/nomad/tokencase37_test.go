package nomad

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// NOMAD_TOKEN, or a basic auth password, echoed by what answers at NOMAD_ADDR in another case
// than it was sent: a proxy that upper-cases a header's value in its error page, a gateway that
// lower-cases it, as it is or percent-encoded. The scrubber looked for each credential in its
// own case only, and the token was shown whole, its hex digits the token to whoever reads them.
// Each credential of spec.MinFoldLen bytes or more is found in any case now.
func TestNomadCredentialEchoedInAnotherCaseIsNotShown(t *testing.T) {
	const token = "5f1c8a2e-3b4d-4e6f-8a9b-0c1d2e3f4a5b"
	const password = "Tr0ub4dor-x9"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pw, _ := r.BasicAuth()
		got := r.Header.Get("X-Nomad-Token")
		http.Error(w, "DENIED: X-NOMAD-TOKEN "+strings.ToUpper(got)+" (x-nomad-token="+url.QueryEscape(strings.ToUpper(got))+"); password "+strings.ToLower(pw)+", "+strings.ToUpper(pw)+"; volume Db not found", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("NOMAD_TOKEN", token)
	t.Setenv("NOMAD_HTTP_AUTH", "ops:"+password)
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Plugin(context.Background(), "p")
	if err == nil || !strings.Contains(err.Error(), "DENIED") {
		t.Fatalf("error %v, want the 403", err)
	}
	low := strings.ToLower(err.Error())
	for _, cred := range []string{token, password, "5f1c8a2e", "tr0ub4dor"} {
		if strings.Contains(low, strings.ToLower(cred)) {
			t.Errorf("the reply shows %s in another case: %v", cred, err)
		}
	}
	if !strings.Contains(err.Error(), "volume Db not found") {
		t.Errorf("the rest of the reply is garbled: %v", err)
	}
}

// The honest case: a password shorter than spec.MinFoldLen that an honest reply holds as a word in
// another case ("Volume" for the password "volume") is left where its case differs: masked in
// its own case as before, and Nomad's word kept.
func TestNomadShortPasswordInAnotherCaseIsNomadsWord(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `Volume "db" not found in namespace Default`, http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_HTTP_AUTH", "ops:volume")
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Plugin(context.Background(), "p")
	if err == nil || !strings.Contains(err.Error(), `Volume "db" not found in namespace Default`) {
		t.Errorf("an honest reply is masked: %v", err)
	}
}

// A plain user credential (maskWords) glued to a name by '_' or '.' in a reply is part of that
// name (the volume "opensesame_db", the host "opensesame.example", the file "db.opensesame"),
// kept as Nomad said it, as one glued by '-' is: volctl cannot tell the user in a name from the
// name, and masking it garbles an honest reply; where it stands alone, at a sentence's end, in
// quotes or between underscores of its own, it is masked.
func TestMaskWordsKeepsAUserGluedToANameByUnderscoreOrDot(t *testing.T) {
	for in, want := range map[string]string{
		"volume opensesame_db":       "volume opensesame_db",
		"db_opensesame, opensesame.": "db_opensesame, [REDACTED].",
		"host opensesame.example":    "host opensesame.example",
		"file db.opensesame":         "file db.opensesame",
		`user "opensesame"_`:         `user "[REDACTED]"_`,
		"__opensesame__ OPENSESAME.": "__[REDACTED]__ [REDACTED].",
	} {
		if got := maskWords(in, []string{"opensesame"}); got != want {
			t.Errorf("maskWords(%q) = %q, want %q", in, got, want)
		}
	}
}

// A volume of the corpus's hostpath demo, whose mount flag is "ro": a value shorter than
// spec.MinScrubLen was replaced inside every word of what Nomad said, so a registration's
// 500 read "rpc er[REDACTED]r: ... fr[REDACTED]m", Nomad's words garbled. It is masked where
// it stands as a word of its own (the request's JSON echoed, a flag list), and Nomad's words
// are kept.
func TestNomadShortMountFlagIsMaskedAsAWordOnly(t *testing.T) {
	v := spec.Volume{ID: "db", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"ro"}}}
	got := scrub(`rpc error: volume from group "ro" rejected: MountFlags ["ro"], ro`, v)
	if want := `rpc error: volume from group "[REDACTED]" rejected: MountFlags ["[REDACTED]"], [REDACTED]`; got != want {
		t.Errorf("scrubbed as\n%s\nwant\n%s", got, want)
	}
}

package nomad

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// A user-only credential that is a plain word (NOMAD_ADDR=https://opensesame@host, a
// gateway's password given as the user, lower-case and under 16 characters: not userKey)
// was hidden in the address but shown wherever what answers at NOMAD_ADDR echoed it: a
// proxy's refusal quoting the URL, the basic auth user, or the Authorization header decoded.
// It is masked now wherever it stands as a word of its own, in any case and as a URL or JSON
// writes it; inside a longer name (the volume "opensesame-db", "devops" for the user ops)
// it is Nomad's word and kept (TestNomadPlainUserOnlyDoesNotGarbleNomadsWords).
func TestNomadPlainUserCredentialIsMaskedInNomadsReplies(t *testing.T) {
	for _, secret := range []string{"opensesame", "admin", "pw9"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			user, pw, _ := r.BasicAuth()
			echo := "https://" + user + "@" + r.Host + r.URL.Path
			http.Error(w, "denied: user "+user+", password "+pw+"; "+echo+" ("+url.QueryEscape(echo)+`) {"user":"`+strings.ToUpper(user)+`"} for volume `+user+"-db.", http.StatusForbidden)
		}))
		t.Setenv("NOMAD_TOKEN", "")
		t.Setenv("NOMAD_HTTP_AUTH", "")
		cl, err := NewClient(strings.Replace(srv.URL, "http://", "http://"+secret+"@", 1))
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.Plugin(context.Background(), "p")
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "403: denied") {
			t.Fatalf("user %s: error %v, want the 403", secret, err)
		}
		msg := strings.ToLower(strings.ReplaceAll(err.Error(), secret+"-db", ""))
		if strings.Contains(msg, secret) {
			t.Errorf("user %s: the reply shows it: %v", secret, err)
		}
		if !strings.Contains(err.Error(), "volume "+secret+"-db") {
			t.Errorf("user %s: a name holding it is garbled: %v", secret, err)
		}
		if n := strings.Count(err.Error(), "[REDACTED]"); n < 4 {
			t.Errorf("user %s: %d masks, want one for each echo: %v", secret, n, err)
		}
	}
}

// maskWords, where a plain user stands as a word of its own and where it is part of a name.
func TestMaskWordsBoundaries(t *testing.T) {
	for in, want := range map[string]string{
		"user opensesame.":                     "user [REDACTED].",
		"OpenSesame denied":                    "[REDACTED] denied",
		"https://opensesame@h":                 "https://[REDACTED]@h",
		"https%3A%2F%2Fopensesame%40h":         "https%3A%2F%2F[REDACTED]%40h",
		`{"u":"\u0022opensesame\u0022"}`:       `{"u":"\u0022[REDACTED]\u0022"}`,
		"opensesame:":                          "[REDACTED]:",
		"volume opensesame-db, opensesame.dev": "volume opensesame-db, opensesame.dev",
		"devopensesame, opensesame2":           "devopensesame, opensesame2",
		"-opensesame- _opensesame_":            "-[REDACTED]- _[REDACTED]_",
	} {
		if got := maskWords(in, []string{"opensesame"}); got != want {
			t.Errorf("maskWords(%q) = %q, want %q", in, got, want)
		}
	}
}

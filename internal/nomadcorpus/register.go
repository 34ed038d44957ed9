package nomadcorpus

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
)

// Sent is what `nomad volume register FILE` did against a stand-in for Nomad's API: the path
// and body of the first request it sent to create or update something (none when the CLI
// refused the file itself), and the CLI's output and error.
type Sent struct {
	Path string
	Body []byte // nil: nothing sent
	Out  []byte
	Err  error
}

// Register runs bin's `nomad volume register file` against an httptest server that records the
// first PUT or POST and answers every request with an empty JSON object, as Nomad's API answers
// a registration. The CLI parses the file before it sends anything, so a file it refuses
// sends nothing.
func Register(bin, file string) Sent {
	type put struct {
		path string
		body []byte
	}
	got := make(chan put, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPut || r.Method == http.MethodPost {
			select {
			case got <- put{r.URL.Path, body}:
			default:
			}
		}
		w.Header().Set("X-Nomad-Index", "1")
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	cmd := exec.Command(bin, "volume", "register", file)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+srv.URL, "NOMAD_TOKEN=", "NOMAD_NAMESPACE=", "NOMAD_REGION=")
	out, err := cmd.CombinedOutput()
	s := Sent{Out: out, Err: err}
	select {
	case p := <-got:
		s.Path, s.Body = p.path, p.body
	default:
	}
	return s
}

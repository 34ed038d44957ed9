package nomad

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// Server is one of a Nomad cluster's servers, as its gossip says: its name and its build
// (version.VersionNumber(): "1.10.5", "1.10.7+ent", "2.0.0-beta.1").
type Server struct {
	Name  string `json:"name"`
	Build string `json:"build"`
}

// Servers lists the servers of the cluster Nomad at the client's address belongs to, in the
// client's region (GET /v1/agent/members: the ACL policy must grant node read). Each server's
// build is the "build" tag it gossips.
func (c *Client) Servers(ctx context.Context) ([]Server, error) {
	// A question beside the command's own requests, as the leader and peers questions are:
	// bounded by askAfterFailure, not a request's minute, which a hung /v1/agent/members held
	// each `nomad register` and `nomad status` for (TestNomadServersQuestionHasTheQuestionsBound).
	q := c.question()
	rctx, a, cancel := q.request(ctx)
	defer cancel()
	var out api.ServerMembers
	if _, err := q.api.Raw().Query("/v1/agent/members", &out, (&api.QueryOptions{Region: q.Region}).WithContext(rctx)); err != nil {
		q.noteStopped(ctx, err, "its servers")
		if isDenied(err) {
			return nil, &deniedError{fmt.Errorf("Nomad at %s: its servers: %s%s", q.Address, q.said(ctx, err, nil), q.denied(ctx, err, `the "node" policy "read"`, ""))}
		}
		return nil, fmt.Errorf("Nomad at %s: its servers: %s%s", q.Address, q.said(ctx, err, nil), q.denied(ctx, err, `the "node" policy "read"`, "")+q.noRegion(err, q.Region)+busy(err, a))
	}
	region := c.Region
	if region == "" {
		region = out.ServerRegion // the agent's own
	}
	var servers []Server
	for _, m := range out.Members {
		// Every federated region's servers gossip; the volume's state is its region's.
		if m != nil && m.Status != "left" && (region == "" || m.Tags["region"] == "" || m.Tags["region"] == region) {
			servers = append(servers, Server{Name: m.Name, Build: m.Tags["build"]})
		}
	}
	slices.SortFunc(servers, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	return servers, nil
}

// ErrPermissionDenied matches the error of a request Nomad refused the token (its 403).
var ErrPermissionDenied = errors.New("permission denied")

// deniedError is an error of Nomad's 403 (ErrPermissionDenied).
type deniedError struct{ error }

func (e *deniedError) Is(target error) bool { return target == ErrPermissionDenied }

// isDenied reports whether err is a 403.
func isDenied(err error) bool {
	var ure api.UnexpectedResponseError
	return errors.As(err, &ure) && ure.HasStatusCode() && ure.StatusCode() == http.StatusForbidden
}

// ErasesSecretsOnEvents reports whether a Nomad server of build redacts a CSI volume's secrets
// and mount flags in its state when it encodes the volume for an event-stream subscriber
// (hashicorp/nomad#27176, issue #26766): every release before 1.11.1, but for the Enterprise
// ones fixed the same day (1.10.7 and 1.8.19 onwards in those lines). Each subscriber to topic
// CSIVolume (or *) that receives a volume's event — a registration makes one — leaves the
// volume without its secrets and with "[REDACTED]" for its mount flags, which Nomad then sends
// its plugin. A build volctl cannot read is not said to.
func ErasesSecretsOnEvents(build string) bool {
	core, meta, _ := strings.Cut(build, "+")
	core, _, _ = strings.Cut(core, "-") // a prerelease of a version has its fixes
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return false
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return false
		}
		v[i] = n
	}
	switch {
	case v[0] == 0:
		return true
	case v[0] > 1 || v[1] > 11 || v[1] == 11 && v[2] >= 1:
		return false
	}
	ent := slices.Contains(strings.Split(meta, "."), "ent")
	return !(ent && (v[1] == 10 && v[2] >= 7 || v[1] == 8 && v[2] >= 19))
}

// ErasingServers lists the servers of servers whose build erases secrets on events
// (ErasesSecretsOnEvents), as "NAME (BUILD)".
func ErasingServers(servers []Server) []string {
	var out []string
	for _, s := range servers {
		if ErasesSecretsOnEvents(s.Build) {
			out = append(out, fmt.Sprintf("%s (%s)", s.Name, s.Build))
		}
	}
	return out
}

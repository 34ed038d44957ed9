package nomad

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/nomad/nomadtest"
)

// What /v1/status/peers answers is what anything at NOMAD_ADDR answers there: only a list of
// server addresses, bounded, is taken as a cluster's servers (sorted, without repeats); any
// other answer (an error, a proxy's page, a list with a blank, a comma, which the mark would
// split, a control character, or past the bounds) is none, and nothing is compared. Two sets
// are two clusters only when both are known and share no server.
func TestPeersAreTakenOnlyAsAListOfServers(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", peerLen+1)
	many := make([]string, mostPeers+1)
	for i := range many {
		many[i] = fmt.Sprintf("10.0.0.%d:4647", i)
	}
	for _, tc := range []struct {
		name   string
		status int
		body   any
		want   []string
	}{
		{"three servers", 200, []string{"10.0.0.3:4647", "10.0.0.1:4647", "10.0.0.1:4647"}, []string{"10.0.0.1:4647", "10.0.0.3:4647"}},
		{"none", 200, []string{}, nil},
		{"a proxy's 404", 404, "404 page not found", nil},
		{"a comma", 200, []string{"10.0.0.1:4647,10.0.0.2:4647"}, nil},
		{"a blank", 200, []string{"10.0.0.1:4647 "}, nil},
		{"a control character", 200, []string{"10.0.0.1:4647\x1b[2J"}, nil},
		{"an address too long", 200, []string{long}, nil},
		{"too many", 200, many, nil},
		{"not a list", 200, map[string]string{"a": "b"}, nil},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/status/peers" {
				http.Error(w, "unexpected", http.StatusTeapot)
				return
			}
			if s, ok := tc.body.(string); ok {
				http.Error(w, s, tc.status)
				return
			}
			json.NewEncoder(w).Encode(tc.body)
		}))
		c, err := NewClient(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Peers(context.Background(), ""); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Peers %q, want %q", tc.name, got, tc.want)
		}
		srv.Close()
	}
	for _, tc := range []struct {
		recorded, now []string
		other         bool
	}{
		{[]string{"a:1", "b:1"}, []string{"c:1"}, true},
		{[]string{"a:1", "b:1"}, []string{"b:1", "c:1"}, false},
		{nil, []string{"c:1"}, false},
		{[]string{"a:1"}, nil, false},
	} {
		if got := OtherCluster(tc.recorded, tc.now); got != tc.other {
			t.Errorf("OtherCluster(%q, %q) = %v, want %v", tc.recorded, tc.now, got, tc.other)
		}
	}
}

// What stays unseen (docs/architecture.md, "One orchestrator at a time"): a balancer that routes
// /v1/status/ to one cluster and the volume API to another. The handover's leader and server
// questions reach the first cluster, its registration the second; when the balancer then
// routes the volume API to the first too, the take-back's read gets that cluster's 404, past
// the mark's index, and nothing volctl asks ties it to a cluster: it is taken as Nomad's word.
// This test holds the documented limit; a fix that sees it changes both.
func TestSplitBalancerGoesUnseen(t *testing.T) {
	a := nomadtest.NewCluster("10.0.1.1:4647", 10, 900000)
	a.Peers = []string{"10.0.1.1:4647"}
	b := nomadtest.NewCluster("10.0.2.1:4647", 20, 800000)
	b.Peers = []string{"10.0.2.1:4647"}
	done, err := handOverDB(t, nomadtest.Split(t, a, b))
	if err != nil || !b.Has("db") || a.Has("db") || !slices.Equal(done.Peers, a.Peers) {
		t.Fatalf("handover through the split balancer: %+v, %v (in b %v, in a %v)", done, err, b.Has("db"), a.Has("db"))
	}
	c, err := NewClient(nomadtest.Split(t, a, a))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.VolumeOfOneCluster(context.Background(), "db", "default", "", done.Peers); !errors.Is(err, ErrNotFound) {
		t.Errorf("the take-back through the split balancer, rerouted: %v; the documented limit is that it reads as Nomad's 404", err)
	}
}

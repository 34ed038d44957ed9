package csi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// BenchmarkClient measures one round trip per RPC through the client (timeouts, interceptor,
// translation) against MemPlugin over a real unix socket.
func BenchmarkClient(b *testing.B) {
	w := newWorld(b)
	calls := w.calls()
	ctx := context.Background()
	for _, rpc := range csi.RPCs {
		call := calls[rpc]
		b.Run(rpc, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := call(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScrub measures the plugin-message scrubber (csi.Scrubber) with 40 secrets of 20
// to 40 bytes: building it (the engine builds one for each message, record or value it shows),
// and scrubbing a message that holds none of them, one with a URL and base64 in it that holds
// none either, one that echoes two, and one of several lines, a plugin's dump of its request
// with base64 broken into lines, that holds none (the lines joined again: unwrappedView), and a
// quoted dump with escapes and an ANSI colour that holds none (read as shown: shownView), and
// one with control bytes' escapes too (\n, \t: read again with them carried out).
func BenchmarkScrub(b *testing.B) {
	var secrets []string
	for i := range 40 {
		secrets = append(secrets, fmt.Sprintf("secret-%02d-%s", i, strings.Repeat("x/y+z", i%5)))
	}
	clean := "rpc error: NodeStageVolume: volume vol-1 could not be staged at /var/lib/volctl/staging/vol-1: mount failed: exit status 32"
	urlish := "GET https://api.example.com/v1/volumes/vol-1?token=c2VjcmV0&zone=eu%2Dwest%2D1 Authorization: Basic dXNlcjpwYXNzd29yZA=="
	echo := clean + " (" + secrets[3] + ", " + secrets[27] + ")"
	lines := clean + ":\n  request:\n    volume_id: vol-1\n    data: |\n      dXNlcjpwYXNzd29yZA==dXNlcjpwYXNzd29yZA==dXNlcjpwYXNzd29yZA==dXNl\n      cjpwYXNzd29yZA==\n  stderr: mount: wrong fs type\n"
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			csi.Scrubber(secrets)
		}
	})
	scrub := csi.Scrubber(secrets)
	// A quoted dump of a request with escapes and a colour in it, that holds none: read as it is
	// shown (shownView).
	quoted := clean + `: {"volume_id": "vol-1", "name": "caf\u00e9 \"db\"", "path": "C:\\data"} ` + "\x1b[31mfailed\x1b[0m"
	// The same with control bytes' escapes (a Go %q of stderr): read too with them carried out
	// (controlsDrawn).
	quotedControls := quoted + ` stderr: "mount: wrong fs type\n\tdmesg(1) may have more\r\n"`
	for _, c := range []struct{ name, msg string }{{"clean", clean}, {"url", urlish}, {"echo", echo}, {"lines", lines}, {"quoted", quoted}, {"quotedcontrols", quotedControls}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				scrub(c.msg)
			}
		})
	}
}

// BenchmarkScrubberBuild works out the forms of 1,000 and of 16,000 distinct secret values (a
// state whose volumes each have their own), reporting the build's cost per value: flat as the
// values grow. Each value's case-folded forms were checked against every fold before them in a
// list: 22–24 µs a value at 16,000 values, against 3–5 µs now (2026-12-06):
//
//	go test ./internal/csi -run '^$' -bench ScrubberBuild -benchtime 5x -count 2
func BenchmarkScrubberBuild(b *testing.B) {
	for _, n := range []int{1000, 16000} {
		values := make([]string, n)
		for i := range values {
			values[i] = fmt.Sprintf("secret-value-%06d-%x", i, i*7919)
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				csi.Scrubber(values)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/value")
		})
	}
}

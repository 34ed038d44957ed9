package engine

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

type stringer string

func (s stringer) String() string { return string(s) }

// The engine's log, and the agent's (RedactLogger), never write a secret value the state
// holds, wherever in a record it is: the message, a string, an error, a Stringer, an attribute
// added with With, one in a group. The engine words some messages from data a plugin returned
// (a node ID, a topology), which a hostile plugin may have echoed a secret into.
func TestLogRecordsAreScrubbedOfKnownSecrets(t *testing.T) {
	t.Parallel()
	const secret = "logecho-s3cret-2b7d"
	var buf bytes.Buffer
	for _, h := range []slog.Handler{
		slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}),
		slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}),
	} {
		hr := newHarness(t, nil)
		sv := volume("db", capab(spec.SingleNodeWriter))
		sv.Secrets = spec.Secrets{"token": secret}
		hr.create(sv)
		hr.e.log = hr.e.RedactLogger(slog.New(h)) // as Open does with Config.Logger
		l := hr.e.log
		l.Warn("node "+secret+" lacks the topology", "node", "n-"+secret, "err", errors.New("zone "+secret),
			"any", stringer(secret), "grp", slog.GroupValue(slog.String("in", secret)))
		l.With("plugin", secret).Info("plain", "n", 1)
		l.With("plugin", secret).WithGroup("g").Info("grouped", "v", secret)
		l.WithGroup("g").With("w", secret).Debug("grouped with")
		// The agent wraps the logger it is given the same way.
		hr.e.RedactLogger(slog.New(h)).Info("agent: " + secret)
	}
	out := buf.String()
	if strings.Contains(out, secret) {
		t.Errorf("the log holds the secret:\n%s", out)
	}
	if n := strings.Count(out, "[REDACTED]"); n < 20 {
		t.Errorf("only %d [REDACTED] in the log, the records did not all reach it:\n%s", n, out)
	}
}

// The engine's log asks for a scrubber per record; one built for the same values is reused
// (building one for a thousand values takes milliseconds), and a value added to the state
// meanwhile is never missed: a new list of values builds a new scrubber.
func TestRedactorReusesItsScrubberUntilTheValuesChange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := volume("db", capab(spec.SingleNodeWriter))
	sv.Secrets = spec.Secrets{"token": "first-s3cret"}
	h.create(sv)
	var buf bytes.Buffer
	l := h.e.RedactLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	for range 5 {
		l.Info("first-s3cret")
	}
	if n := h.e.scrubbers.builds; n != 1 {
		t.Errorf("5 log records with the same secrets built %d scrubbers, want 1", n)
	}
	sv = volume("db2", capab(spec.SingleNodeWriter))
	sv.Secrets = spec.Secrets{"token": "second-s3cret"}
	h.create(sv)
	l.Info("first-s3cret second-s3cret")
	if out := buf.String(); strings.Contains(out, "s3cret") {
		t.Errorf("the log holds a secret:\n%s", out)
	}
	if n := h.e.scrubbers.builds; n != 2 {
		t.Errorf("after a secret was added, %d scrubbers built in all, want 2", n)
	}
}

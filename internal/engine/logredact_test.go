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

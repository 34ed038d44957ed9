package csi_test

// recheck37: a secret whose parts stand in the bytes with nothing but an escape sequence
// between them, which a terminal draws on two rows no drawn view joins (the second half a row
// up, or on a line inserted above): whoever reads the bytes (--json, the event log, the
// agent's log, a file) reads the secret with a sequence inside it.

import "testing"

func TestScrubSkipsTheSequencesBetweenASecretsParts(t *testing.T) {
	t.Parallel()
	drawsWhole(t, []struct{ name, echoed string }{
		// Before, each was shown, while the same halves around CUD ("\x1b[B") were masked.
		{"cursor up (CUU)", "hunter2-\x1b[As3cret"},
		{"cursor up quoted", `hunter2-\u001b[As3cret`},
		{"cursor up as cat -v shows it", "hunter2-^[[As3cret"},
		{"reverse index (ESC M)", "hunter2-\x1bMs3cret"},
		{"reverse index as a C1 control", "hunter2-\u008ds3cret"},
		{"insert line (IL)", "hunter2-\x1b[Ls3cret"},
		{"cursor up, then a colour", "hunter2-\x1b[3A\x1b[1;31ms3cret\x1b[0m"},
		// A bare carriage return between the halves is joined as a line break (scrub36); a
		// colour's reset before it hid it from that join.
		{"colour reset, then a bare carriage return", "hunter2-\x1b[0m\rs3cret"},
		{"colour reset, then a bare carriage return, quoted", `hunter2-\u001b[0m\rs3cret`},
	})
	// Honest text with sequences between words, and a move along the line that draws blanks as
	// spaces would (TestScrubFindsAValueAsATerminalDrawsIt's "moved forward past the end"):
	// kept, as a plugin's real multi-line error with base64 IDs in colour is.
	drawsOtherwise(t, []struct{ msg, shown string }{
		{"hunter2-\x1b[5Cs3cret", "hunter2-     s3cret"},
		{"hunter2-\x1b[A\x1b[20Gs3cret", "a row up, column 20"},
		{"\x1b[31mrpc error\x1b[0m: volume \x1b[1maHVudGVyMi0=\x1b[0m\n  snapshot \x1b[1mczNjcmV0\x1b[0m not found\x1b[A\r\x1b[K",
			"rpc error: volume aHVudGVyMi0=, snapshot czNjcmV0 not found"},
		{"copying hunter2 files\x1b[A\rdone: s3cret-free", "done: s3cret-free, over the line above"},
	})
}

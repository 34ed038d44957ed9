package csi_test

import "testing"

// TestPluginMessageBegunInASecretShowsNoPartOfIt is
// TestPluginMessageCutByThePluginInASecretShowsNoPartOfIt at the other end: a plugin that keeps
// the end of a text alone (the tail of a mount helper's stderr, "..." + out[-40:], the second
// half of a secret split across two errors, its first error ending "token=" and the first half)
// begins its message, or what follows an ellipsis, with the secret's last bytes, which no
// search for the whole value finds. The stretch there that ends a word and one of the secret's
// forms is scrubbed. Before, "…cr3t-SENTINEL-4711 rejected" was shown, all but two bytes of the
// secret. An honest message keeps its words: a beginning that ends no secret, two bytes of one
// (minScrubLen), a secret's tail inside a longer word, or one in the middle of the message
// where nothing says a text was cut.
func TestPluginMessageBegunInASecretShowsNoPartOfIt(t *testing.T) {
	t.Parallel()
	tail := sentinelSecret[2:] // "cr3t-SENTINEL-4711"
	stagedMessagesShownAs(t, []struct{ msg, want string }{
		{"…" + tail + " rejected", "…[REDACTED] rejected"},
		{tail + " rejected", "[REDACTED] rejected"},
		{sentinelSecret[len(sentinelSecret)-3:] + ": no such key", "[REDACTED]: no such key"},
		{"\"" + tail + "\" was refused", "\"[REDACTED]\" was refused"},
		{"stderr: ..." + tail + "\n", "stderr: ...[REDACTED]\n"},
		{"stderr: ..." + tail + ", exit status 32", "stderr: ...[REDACTED], exit status 32"},
		// Honest beginnings stay: no secret ends them, two bytes only, a tail in a longer
		// word, or one where no cut is said to be.
		{"volume vol-1 is not staged", "volume vol-1 is not staged"},
		{sentinelSecret[len(sentinelSecret)-2:] + " retries left", sentinelSecret[len(sentinelSecret)-2:] + " retries left"},
		{tail + "x rejected", tail + "x rejected"},
		{"staging... please wait", "staging... please wait"},
		{"rejected: " + tail, "rejected: " + tail},
	})
}

// Package nomadaddr shows a Nomad address as volctl shows it everywhere (messages, notes,
// --json, a handover mark, the event log): what may be a credential hidden. It is a leaf
// package so that the store's migration 0020, which rewrites the addresses an older volctl
// recorded raw, shows them as the engine does.
package nomadaddr

import (
	"strings"
	"unicode"
)

// Hidden stands for a user and password in an address volctl shows.
const Hidden = "xxxxx"

// Shown is a Nomad address as volctl shows it: what may be a user and password
// before its host (between its scheme and its last "@") as xxxxx. A mark records the address
// NOMAD_ADDR's client shows, its credential hidden, but an older volctl recorded one with a
// key-only user (http://KEY@host) as it was: every message, note and --json field naming the
// mark's address showed the key. The user is no place (SameNomadAddress ignores it).
//
// What follows its host is hidden too (HiddenPathAndQuery).
func Shown(addr string) string {
	start := 0
	if i := strings.Index(addr, "://"); i >= 0 {
		start = i + len("://")
	}
	if at := strings.LastIndex(addr[start:], "@"); at >= 0 {
		addr = addr[:start] + Hidden + addr[start+at:]
	}
	return HiddenPathAndQuery(addr)
}

// InMessage is msg, an event's message as the log keeps it, with the address after
// each "Nomad at " (the words every event naming a Nomad address writes it after) shown as
// Shown shows it. An older volctl wrote the address as it showed it then: with a
// key-only user, a query's token, a token as a query key or path segment (before round 34), a
// lower-case secret (?opensesame=, before round 35); the log keeps 10,000 events, and `volctl events`, its --json and the dashboard showed them as
// written (TestOldEventsShowNoNomadAddressSecret). The address runs to the next blank (an
// address volctl takes has none), less one mark of the message's own after it (the ':' of
// "taken back from Nomad at ADDR: why", the ',' of "Nomad at ADDR, whose"). What volctl
// writes now is shown so already, and stays as it is.
func InMessage(msg string) string {
	const at = "Nomad at "
	if !strings.Contains(msg, at) {
		return msg
	}
	var b strings.Builder
	for {
		i := strings.Index(msg, at)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		i += len(at)
		b.WriteString(msg[:i])
		msg = msg[i:]
		end := strings.IndexFunc(msg, unicode.IsSpace)
		if end < 0 {
			end = len(msg)
		}
		addr, mark := msg[:end], ""
		if n := len(addr); n > 0 && strings.ContainsRune(":,;.)", rune(addr[n-1])) {
			addr, mark = addr[:n-1], addr[n-1:]
		}
		if strings.Contains(addr, "://") {
			addr = Shown(addr)
		}
		b.WriteString(addr + mark)
		msg = msg[end:]
	}
}

// HiddenPathAndQuery is addr with what may be a secret after its host as xxxxx: each
// value of its query, each key of it and each segment of its path that is not one of the
// words shown (plainWord: a key that is the token itself, ?TOKEN= or ?TOKEN, a gateway's
// /v1/TOKEN/, a lower-case ?opensesame=), a fragment, and anything after the host and port
// that no URL has there (;TOKEN, \TOKEN).
// NOMAD_ADDR=http://nomad:4646/?token=SECRET, as some gateways take a token, was shown as it is
// in every message, note and --json field naming the address, and recorded so in a handover
// mark (TestNomadAddressQueryIsNotShown); so was a token as a query key or in the path until
// round 34 (TestNomadAddressKeyOrPathSecretIsNotShown). Nomad's API client sends an address's
// scheme, user, host and port only (no path, no query): a token there reaches neither Nomad
// nor a proxy before it, and belongs in NOMAD_TOKEN (or NOMAD_HTTP_AUTH), and an address
// shown with xxxxx there reaches the same Nomad as written. Nomad's and gateways' words are
// kept, to say what was written (?region=xxxxx, /nomad/). A unix:// address's path is its
// socket's, kept whole. The host begins after the last '@' (one in a password that url.Parse
// cannot read is hidden with it).
func HiddenPathAndQuery(addr string) string {
	start, unix := 0, false
	if i := strings.Index(addr, "://"); i >= 0 {
		start, unix = i+len("://"), strings.EqualFold(addr[:i], "unix")
	}
	if at := strings.LastIndex(addr[start:], "@"); at >= 0 {
		start += at + 1
	}
	// The host and port: the characters a host name, an IP address (IPv6 in brackets, its zone
	// after a '%') and a port are written with.
	end := strings.IndexFunc(addr[start:], func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(".-_:[]%", r))
	})
	if end < 0 {
		return addr
	}
	end += start
	var b strings.Builder
	b.WriteString(addr[:end])
	rest := addr[end:]
	path := rest[:strings.IndexAny(rest+"?", "?#")]
	rest = rest[len(path):]
	switch {
	case unix || path == "":
		b.WriteString(path)
	case path[0] != '/':
		// Not a URL's: ;TOKEN or \TOKEN after the port, refused as no URL, shown so (;xxxxx).
		// Blanks and control characters are kept, for the error that names them
		// (TestNomadAddressWithStrayTextIsNamed).
		inRun, hidden := false, false
		for _, r := range path {
			switch {
			case unicode.IsSpace(r) || unicode.IsControl(r):
				b.WriteRune(r)
				inRun = false
			case !inRun:
				b.WriteRune(r)
				inRun, hidden = true, false
			case !hidden:
				b.WriteString(Hidden)
				hidden = true
			}
		}
	default:
		for i, seg := range strings.Split(path, "/") {
			if i > 0 {
				b.WriteByte('/')
			}
			if seg == "" || plainWord(seg) {
				b.WriteString(seg)
			} else {
				b.WriteString(Hidden)
			}
		}
	}
	query, frag, hasFrag := "", "", false
	if rest != "" && rest[0] == '?' {
		query, frag, hasFrag = strings.Cut(rest[1:], "#")
		b.WriteByte('?')
		for i, part := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			switch k, v, ok := strings.Cut(part, "="); {
			case part == "":
			case !ok || !plainWord(k): // a part with no '=' may be the token itself, as may a key
				b.WriteString(Hidden)
			case v != "":
				b.WriteString(k + "=" + Hidden)
			default:
				b.WriteString(part)
			}
		}
	} else if rest != "" {
		frag, hasFrag = rest[1:], true
	}
	if hasFrag {
		b.WriteByte('#')
		if frag != "" {
			b.WriteString(Hidden)
		}
	}
	return b.String()
}

// plainWord reports whether s, a query key or a path segment of a Nomad address, is shown as
// it is: one of the words an address to Nomad or a gateway before it is written with
// (addressWords: Nomad's API path words and query parameters, a gateway's usual prefix and
// credential keys), an API version (v1), a key of one or two letters (?t=), or the xxxxx
// volctl shows in place of what it hides. Anything else may be the secret: round 34 showed
// any lower-case word (?opensesame=, /opensesame/, a password a person chose) and hid
// /cluster1/; no rule tells a chosen word from a word, and the path and query are never sent
// (Nomad's API client sends the scheme, user, host and port only), so showing them serves only
// a person's recognition of the address, which the host and port give: what is not one of
// these is xxxxx (TestNomadAddressWordSecretIsShownNowhere).
func plainWord(s string) bool {
	if s == Hidden || addressWords[s] {
		return true
	}
	if len(s) <= 2 && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz") == "" {
		return s != ""
	}
	return len(s) > 1 && len(s) <= 3 && s[0] == 'v' && strings.Trim(s[1:], "0123456789") == ""
}

// addressWords are the path segments and query keys a Nomad address is shown with
// (plainWord): Nomad's own query parameters, and the words of a gateway's prefix and of the
// keys gateways take a credential in (the key is shown, its value never).
var addressWords = map[string]bool{
	// Nomad's query parameters (api.QueryOptions, api.WriteOptions).
	"region": true, "namespace": true, "stale": true, "index": true, "wait": true, "prefix": true,
	"filter": true, "per_page": true, "next_token": true, "reverse": true, "type": true,
	// A gateway's prefix.
	"nomad": true, "nomad-api": true, "api": true, "ui": true, "proxy": true,
	// Credential keys.
	"token": true, "access_token": true, "api_key": true, "apikey": true, "key": true, "auth": true,
}

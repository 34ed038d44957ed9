package cli

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

// TestSpecTextRefusalSaysWhereAndWhy: a spec saved as UTF-16 (Windows editors and PowerShell's
// `>` write it) was refused as "not a text file (a NUL byte at offset 3)", which names neither
// the encoding nor what to do, and a NUL in a text file was placed by its byte offset only.
// The refusal names the encoding its byte order mark (or its NULs between ASCII) give away and
// says to save it as UTF-8; a NUL elsewhere is placed by line and column as diagnostics are.
func TestSpecTextRefusalSaysWhereAndWhy(t *testing.T) {
	utf16le := func(s string, bom bool) []byte {
		var b []byte
		if bom {
			b = append(b, 0xff, 0xfe)
		}
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u), byte(u>>8))
		}
		return b
	}
	utf16be := func(s string) []byte {
		b := []byte{0xfe, 0xff}
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u>>8), byte(u))
		}
		return b
	}
	const spec = "id = \"db\"\r\ntype = \"csi\"\r\n"
	for _, tt := range []struct {
		name string
		src  []byte
		want []string
	}{
		{"utf-16le with bom", utf16le(spec, true), []string{"UTF-16", "save it as UTF-8"}},
		{"utf-16le without bom", utf16le(spec, false), []string{"UTF-16", "save it as UTF-8"}},
		{"utf-16be", utf16be(spec), []string{"UTF-16", "save it as UTF-8"}},
		{"utf-32le", []byte{0xff, 0xfe, 0, 0, 'i', 0, 0, 0}, []string{"UTF-32", "save it as UTF-8"}},
		{"utf-16le with accents", utf16le("# Volumen für die Datenbank\r\nid = \"db\"\r\n", false), []string{"UTF-16 (little-endian", "save it as UTF-8"}},
		{"utf-16be of one character", []byte{0, 'i'}, []string{"UTF-16 (big-endian", "save it as UTF-8"}},
		// Binary that starts as UTF-16 might: a tar archive of a file named "a", a NUL and a
		// byte under 0x80, an ASCII byte and a NUL.
		{"tar archive", append([]byte("a"), make([]byte, 511)...), []string{"not a text file", "line 1, column 2"}},
		{"nul and a byte", []byte("\x00\x01binary data \x00\x02 and more"), []string{"not a text file", "line 1, column 1"}},
		{"ascii and a nul", []byte("P\x00\x03\x04\x14\x00\x00\x00\x08\x00\x00\x00"), []string{"not a text file", "line 1, column 2"}},
		{"nul on line 3", []byte("id = \"db\"\ntype = \"csi\"\nname\x00 = \"x\"\n"), []string{"line 3, column 5", "NUL"}},
	} {
		err := checkSpecText(tt.src)
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tt.name, err, w)
			}
		}
	}
	if err := checkSpecText([]byte(spec)); err != nil {
		t.Errorf("a UTF-8 spec with CRLF line endings refused: %v", err)
	}
}

// TestSpecFileThatIsASocketSaysSo: readSpecFile has a word for a socket ("is a socket, not a
// spec file") that it never said: opening a Unix socket fails first (ENXIO), and the refusal
// read "no such device or address", as if the path were missing.
func TestSpecFileThatIsASocketSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugin.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = readSpecFile(path)
	if err == nil || !strings.Contains(err.Error(), "is a socket, not a spec file") {
		t.Errorf("reading a socket as a spec: %v, want it named a socket", err)
	}
}

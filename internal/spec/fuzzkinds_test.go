package spec

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseAnyKind feeds Parse, which tells a file's kind from its top level, arbitrary bytes:
// plugin and group specs meet the fuzzer here (FuzzParseVolume parses volumes only). It must
// never panic; a File is returned exactly when there is no error; its diagnostics point inside
// the file; every plugin it accepts passes the rules a plugin built from flags is held to
// (Validate: a safe ID, the sockets its type takes, each a path, absolute, short enough, in
// whichever form it was written, spec.SocketEndpoint); a second parse gives the same result.
func FuzzParseAnyKind(f *testing.F) {
	for _, dir := range []string{filepath.Join("..", "..", "fixtures", "valid"), filepath.Join("..", "..", "fixtures", "invalid")} {
		for _, path := range specFiles(f, dir) {
			src, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	for _, kind := range Kinds {
		src, _ := Example(kind)
		f.Add(src)
	}
	for _, socket := range []string{"unix:///run/csi/a.sock", "unix:/run/a.sock", "unix://csi/csi.sock", "tcp://127.0.0.1:1", "localhost:1", "/run/a:b.sock", "unix:", "/a\nb"} {
		f.Add([]byte("plugin \"p\" {\n  type = \"monolith\"\n  socket = " + hclString(socket) + "\n}\n"))
	}

	f.Fuzz(func(t *testing.T, src []byte) {
		p := NewParser()
		file, diags := p.Parse("fuzz.hcl", src, VerbAny)
		checkParseResult(t, p, src, diags, file != nil)
		if file != nil {
			for _, pl := range file.Plugins {
				if err := pl.Validate(); err != nil {
					t.Fatalf("accepted plugin %+v, which Validate refuses: %v", pl, err)
				}
				for _, s := range []string{pl.Socket, pl.ControllerSocket, pl.NodeSocket} {
					if strings.HasPrefix(strings.ToLower(s), "unix:") {
						t.Fatalf("accepted plugin %q with socket %q, a URL kept as a path", pl.ID, s)
					}
				}
			}
			if file.Volume != nil {
				checkSoundVolume(t, file.Volume)
			}
		}
		file2, diags2 := NewParser().Parse("fuzz.hcl", src, VerbAny)
		if !reflect.DeepEqual(file, file2) {
			t.Fatalf("second parse differs:\n%+v\n%+v", file, file2)
		}
		if a, b := renderPlain(p, diags), renderPlain(p, diags2); a != b {
			t.Fatalf("second parse reports differently:\n%s\n---\n%s", a, b)
		}
	})
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportedMethodsHaveCallers is TestExportsAreUsed by type rather than by name: an exported
// function or method of any package of volctl's own (internal/..., the test helper packages
// aside) that no code of volctl uses — called, taken as a value, called through an interface
// the type satisfies, or there to satisfy an interface of a library (json.Marshaler, a CSI
// server) — is used only by tests: it moves to the tests or goes. A name that something else
// shares (a field, another type's method) does not count as a use here.
func TestExportedMethodsHaveCallers(t *testing.T) {
	t.Parallel()
	if ranWithoutRace(t) { // source read, nothing to race
		return
	}
	// Exported for the tests of other packages, which cannot reach a _test.go file; each says why.
	allowed := map[string]string{
		"hostpath.Plugin.VolumePath": "the csi and engine tests find a volume's directory with it",
		"store.Tx.History":           "the store's, engine's and volctl's tests read freed claims with it (no command lists them)",
		"store.Store.Stats":          "the engine's tests count the commits an operation costs (docs/architecture.md, Checkpoints)",
		"store.Store.RowsRead":       "the engine's tests count the rows a read costs (events --follow's polls)",
		// The command asks what its create did (CreateVolumeOutcome); every package's tests
		// make their volumes with the create that does not say.
		"engine.Engine.CreateVolume":   "every package's tests create volumes with it (CreateVolumeOutcome without the outcome)",
		"engine.Engine.ExpandVolume":   "every package's tests expand volumes with it (ExpandVolumeFrom without the volume as it was)",
		"engine.Engine.RegisterVolume": "every package's tests register volumes with it (RegisterVolumeOutcome without the outcome)",
		"engine.Engine.CreateSnapshot": "every package's tests snapshot volumes with it (CreateSnapshotOutcome without the outcome)",
		"engine.Engine.RegisterPlugin": "every package's tests register plugins with it (RegisterPluginOutcome without the outcome)",
		// The streams a command's tests give it: gh's iostreams.Test. Moving them to a helper
		// package needs a constructor System would share, and touches every command's tests.
		"iostreams.Test":                      "every package's tests build buffered streams with it",
		"iostreams.IOStreams.SetTTY":          "tests act as a terminal with it",
		"iostreams.IOStreams.SetColorEnabled": "tests turn colour on with it",
		"iostreams.IOStreams.SetWidth":        "tests fix the terminal width with it",
	}
	// Packages that exist to be shared with the test doubles: a use by csitest counts.
	sharedWithDoubles := map[string]string{
		"github.com/volctl/volctl/internal/csi/internal/wire": "the one mapping to the CSI messages: the client encodes what csitest's plugins decode, and the reverse",
	}
	// Methods the standard library and gRPC find through interfaces of their own making
	// (errors.Is, errors.Unwrap, status.FromError), which no declared interface type names.
	forLibraries := map[string]bool{"Is": true, "As": true, "Unwrap": true, "GRPCStatus": true}

	pkgs := loadModule(t)
	// declared: every exported function, and exported method of a named type, of the checked packages.
	declared := map[*types.Func]string{}
	for _, p := range pkgs {
		if p.testDouble || !strings.Contains(p.path, "/internal/") { // every package of volctl's own
			continue
		}
		scope := p.types.Scope()
		for _, name := range scope.Names() {
			switch obj := scope.Lookup(name).(type) {
			case *types.Func:
				if obj.Exported() {
					declared[obj] = p.types.Name() + "." + name
				}
			case *types.TypeName:
				named, ok := obj.Type().(*types.Named)
				if !ok {
					continue
				}
				for m := range named.Methods() {
					if m.Exported() {
						declared[m] = p.types.Name() + "." + name + "." + m.Name()
					}
				}
			}
		}
	}
	// used: every function or method the code of volctl refers to; through an interface, the
	// interface's method, resolved below.
	used := map[*types.Func]bool{}
	var viaInterface []*types.Func
	for _, p := range pkgs {
		for _, obj := range p.info.Uses {
			fn, ok := obj.(*types.Func)
			if !ok {
				continue
			}
			fn = fn.Origin()
			if p.testDouble {
				if fn.Pkg() != nil && sharedWithDoubles[fn.Pkg().Path()] != "" {
					used[fn] = true
				}
				continue
			}
			used[fn] = true
			if recv := fn.Signature().Recv(); recv != nil && types.IsInterface(recv.Type()) {
				viaInterface = append(viaInterface, fn)
			}
		}
	}
	libraryInterfaces := externalInterfaces(pkgs)
	for fn, name := range declared {
		if used[fn] || allowed[name] != "" {
			continue
		}
		recv := fn.Signature().Recv()
		if recv != nil && (forLibraries[fn.Name()] || satisfies(recv.Type(), fn.Name(), viaInterface, libraryInterfaces)) {
			continue
		}
		t.Errorf("%s is used only by tests: move it to the tests, or use it", name)
	}
	for name := range allowed {
		found := false
		for _, d := range declared {
			found = found || d == name
		}
		if !found {
			t.Errorf("allowed %s is not declared any more: drop it from the list", name)
		}
	}
}

// satisfies reports whether the method called name of recv is there for an interface: one whose
// method volctl calls (viaInterface), or one of a library's.
func satisfies(recv types.Type, name string, viaInterface []*types.Func, libraries []*types.Interface) bool {
	if p, ok := recv.(*types.Pointer); ok {
		recv = p.Elem()
	}
	implements := func(iface *types.Interface) bool {
		return types.Implements(recv, iface) || types.Implements(types.NewPointer(recv), iface)
	}
	for _, m := range viaInterface {
		if m.Name() == name && implements(m.Signature().Recv().Type().Underlying().(*types.Interface)) {
			return true
		}
	}
	for _, iface := range libraries {
		for m := range iface.Methods() {
			if m.Name() == name && implements(iface) {
				return true
			}
		}
	}
	return false
}

// externalInterfaces lists the interfaces declared by the packages volctl imports that are not
// its own (encoding/json's Marshaler, the CSI servers, database/sql/driver's Conn, ...).
func externalInterfaces(pkgs []*modulePackage) []*types.Interface {
	seen := map[*types.Package]bool{}
	var out []*types.Interface
	var visit func(p *types.Package)
	visit = func(p *types.Package) {
		if seen[p] {
			return
		}
		seen[p] = true
		for _, name := range p.Scope().Names() {
			if tn, ok := p.Scope().Lookup(name).(*types.TypeName); ok && tn.Exported() {
				if iface, ok := tn.Type().Underlying().(*types.Interface); ok && iface.NumMethods() > 0 {
					out = append(out, iface)
				}
			}
		}
		for _, imp := range p.Imports() {
			visit(imp)
		}
	}
	own := map[*types.Package]bool{}
	for _, p := range pkgs {
		own[p.types] = true
	}
	for _, p := range pkgs {
		for _, imp := range p.types.Imports() {
			if !own[imp] {
				visit(imp)
			}
		}
	}
	return out
}

// modulePackage is one of volctl's packages, type-checked from its non-test files.
type modulePackage struct {
	path       string
	types      *types.Package
	info       *types.Info
	testDouble bool // testSupport's packages: test code by purpose
}

// loadModule type-checks every package of the module from source, and the packages it imports
// from the export data `go list -export` builds.
func loadModule(t *testing.T) []*modulePackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-export", "-json=ImportPath,Dir,GoFiles,Export,Module", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	type listed struct {
		ImportPath, Dir, Export string
		GoFiles                 []string
		Module                  *struct{ Path string }
	}
	var all []listed
	exports := map[string]string{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		all = append(all, p)
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	gc := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, errors.New("no export data for " + path)
		}
		return os.Open(exports[path])
	})
	own := map[string]*types.Package{}
	imp := importerFunc(func(path string) (*types.Package, error) {
		if p, ok := own[path]; ok {
			return p, nil
		}
		return gc.Import(path)
	})
	var pkgs []*modulePackage
	for _, p := range all { // -deps lists a package after everything it imports
		if p.Module == nil || p.Module.Path != "github.com/volctl/volctl" {
			continue
		}
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
		tp, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, files, info)
		if err != nil {
			t.Fatalf("type-checking %s: %v", p.ImportPath, err)
		}
		own[p.ImportPath] = tp
		pkgs = append(pkgs, &modulePackage{path: p.ImportPath, types: tp, info: info,
			testDouble: testSupport(p.ImportPath)})
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package of the module")
	}
	return pkgs
}

// testSupport reports whether a package of volctl's is there for tests only: the packages
// the design test's testOnlyPackages names (the CSI and Nomad test doubles, the pty opener,
// the schema database's copier, the process whose first thread ends, ...) and what lives
// below them, and the Nomad corpus locator.
func testSupport(path string) bool {
	for _, p := range append([]string{"internal/nomadcorpus"}, testOnlyPackages...) {
		if strings.HasSuffix(path, "/"+p) || strings.Contains(path, "/"+p+"/") {
			return true
		}
	}
	return false
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

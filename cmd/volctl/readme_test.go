package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeBlocks returns the README's ```sh blocks, each as its lines.
func readmeBlocks(t *testing.T) [][]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]string
	var cur []string
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case !in && line == "```sh":
			in, cur = true, nil
		case in && line == "```":
			in = false
			blocks = append(blocks, cur)
		case in:
			cur = append(cur, line)
		}
	}
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d sh blocks; want the setup block and the tour", len(blocks))
	}
	return blocks
}

// command is a README line without its trailing "# comment".
func command(line string) string {
	if i := strings.Index(line, "  #"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// TestReadmeTestCommandIsCI: .ci/run runs exactly the README's test command.
func TestReadmeTestCommandIsCI(t *testing.T) {
	t.Parallel()
	setup := readmeBlocks(t)[0]
	if len(setup) != 2 {
		t.Fatalf("README setup block: want the build line and the test line, got %q", setup)
	}
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var ciTest, ciVet string
	for _, l := range strings.Split(string(ci), "\n") {
		switch {
		case strings.HasPrefix(l, "go test "):
			ciTest = strings.TrimSpace(l)
		case strings.HasPrefix(l, "go vet "):
			ciVet = strings.TrimSpace(l)
		}
	}
	if got := command(setup[1]); got != ciTest {
		t.Errorf("README test command %q, .ci/run runs %q", got, ciTest)
	}
	// The vet builds its packages with the test command's build flags, so the tests link
	// what it built: vetted without them, every package was compiled twice, a cold CI
	// building 175 s more (BENCHMARKS.md, round 70).
	gcflags := regexp.MustCompile(`-gcflags='[^']*'`).FindString(ciTest)
	if ciVet == "" || !strings.Contains(ciVet, " -race ") || gcflags == "" || !strings.Contains(ciVet, gcflags) {
		t.Errorf(".ci/run's vet %q does not take the test command's -race and %s", ciVet, gcflags)
	}
}

// TestReadmeFirstCommandRunsAsRootAndWithSudo runs the README's first line under sh with a
// stand-in go (which builds a bin/volctl that records how it ran), once with no sudo on PATH
// (root in a container or a CI runner) and once with a sudo that records its use.
func TestReadmeFirstCommandRunsAsRootAndWithSudo(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to run the README's command with:", err)
	}
	line := command(readmeBlocks(t)[0][0])
	for _, withSudo := range []bool{false, true} {
		dir := t.TempDir()
		fakeBin := filepath.Join(dir, "fakebin")
		if err := os.Mkdir(fakeBin, 0o755); err != nil {
			t.Fatal(err)
		}
		write := func(name, body string) {
			if err := os.WriteFile(filepath.Join(fakeBin, name), []byte("#!"+sh+"\n"+body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, tool := range []string{"mkdir", "chmod"} { // all the stand-in go needs
			path, err := exec.LookPath(tool)
			if err != nil {
				t.Skip("no", tool, "for the stand-in go:", err)
			}
			if err := os.Symlink(path, filepath.Join(fakeBin, tool)); err != nil {
				t.Fatal(err)
			}
		}
		write("go", `mkdir -p bin && printf '#!`+sh+`\necho "volctl $*" >> ran\n' > bin/volctl && chmod +x bin/volctl`+"\n")
		if withSudo {
			write("sudo", `echo sudo >> ran; exec "$@"`+"\n")
		}
		cmd := exec.Command(sh, "-c", line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+fakeBin+":/nonexistent")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sudo on PATH: %v; README's first command %q: %v\n%s", withSudo, line, err, out)
		}
		ran, _ := os.ReadFile(filepath.Join(dir, "ran"))
		want := "volctl quickstart\n"
		if withSudo {
			want = "sudo\n" + want
		}
		if string(ran) != want {
			t.Errorf("sudo on PATH: %v; README's first command ran %q, want %q", withSudo, ran, want)
		}
	}
}

// TestReadmeTourPutsVolctlOnPath: the tour calls bare volctl, which go build -o bin/volctl
// does not put on PATH; a step before the first one must.
func TestReadmeTourPutsVolctlOnPath(t *testing.T) {
	t.Parallel()
	bareVolctl := regexp.MustCompile(`^(\S+=\S+\s+)*volctl\s|\$\(volctl\s`)
	onPath := false
	for _, l := range readmeBlocks(t)[1] {
		c := command(l)
		if strings.HasPrefix(c, "export PATH=") && strings.Contains(c, "$PWD/bin") {
			onPath = true
		}
		if bareVolctl.MatchString(c) {
			if !onPath {
				t.Fatalf("the tour runs %q before any step puts bin/volctl on PATH", c)
			}
			return
		}
	}
	t.Fatal("the tour runs no volctl command")
}

// TestReadmeTourIsScripted: every volctl command of the README's tour, and every `volctl ...`
// the paragraphs after it quote (up to the exit codes), is run by testdata/script/
// readme_tour.txtar, the tour's in its order, with the tour's /tmp/volctl-tour as $WORK/tour.
// A command the README changes, or adds, fails here until the script runs it as written; the
// script holds each command to what the README says it does. `volctl tui` and `volctl agent`
// are left to tui.txtar and agent.txtar: a dashboard and a daemon.
func TestReadmeTourIsScripted(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "script", "readme_tour.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	// The script's commands, without what runs them: "exec", "exitcode N", "! exec".
	runner := regexp.MustCompile(`^(\[[^]]+\] )*(! )?(exec|exitcode [0-9]+) `)
	var ran []string
	for _, l := range strings.Split(string(raw), "\n") {
		if loc := runner.FindStringIndex(l); loc != nil {
			ran = append(ran, strings.TrimSuffix(strings.TrimSpace(l[loc[1]:]), " &hp&"))
		}
	}
	asScripted := func(c string) string { return strings.ReplaceAll(c, "/tmp/volctl-tour", "$WORK/tour") }

	blocks := readmeBlocks(t)
	next := 0 // the tour's commands run in its order
	for _, line := range blocks[1] {
		c := command(line)
		i := strings.Index(c, "volctl ")
		if i < 0 || strings.HasPrefix(c, "export ") {
			continue
		}
		c = asScripted(strings.TrimSuffix(strings.TrimSuffix(c[i:], " &"), ")")) // TARGET=$(volctl ...)
		j := slices.Index(ran[next:], c)
		if j < 0 {
			t.Errorf("README tour runs %q; readme_tour.txtar does not, after %q", c, ran[max(next-1, 0)])
			continue
		}
		next += j + 1
	}

	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	after := string(readme)
	after = after[strings.LastIndex(after, strings.Join(blocks[1][len(blocks[1])-2:], "\n")):]
	after, _, _ = strings.Cut(after, "\nExit codes:")
	quoted := regexp.MustCompile("`(volctl [^`]+)`").FindAllStringSubmatch(strings.ReplaceAll(after, "\n", " "), -1)
	if len(quoted) < 10 {
		t.Fatalf("the paragraphs after the README's tour quote %d volctl commands; want the groups', snapshots', export's and handover's", len(quoted))
	}
	for _, q := range quoted {
		c := asScripted(q[1])
		if c == "volctl tui" || c == "volctl agent" {
			continue
		}
		if !slices.ContainsFunc(ran, func(r string) bool { return r == c || strings.HasPrefix(r, c+" ") }) {
			t.Errorf("README quotes `%s` after its tour; readme_tour.txtar does not run it", q[1])
		}
	}
}

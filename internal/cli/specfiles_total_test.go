package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestSpecFilesTogetherAreBounded: each spec file is bounded (1 MiB), but a command given many
// (`volctl register specs/*`, a directory of logs by mistake) read and held them all, and the
// parser a copy of each: 300 files of 1 MiB took 1.7 GB and five minutes to say they were
// invalid. Past maxSpecFilesSize together, reading stops, nothing is parsed or done, and the
// error names the bound, the file that passed it and what to do.
func TestSpecFilesTogetherAreBounded(t *testing.T) {
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("f%d.hcl", i)
	}
	file := []byte("#" + strings.Repeat("x", maxSpecSize-2) + "\n")
	for _, command := range []string{"volume register", "plugin register"} {
		t.Run(command, func(t *testing.T) {
			reads := 0
			read := func(string) ([]byte, error) { reads++; return file, nil }
			ios, _, _, errOut := iostreams.Test()
			var err error
			if command == "plugin register" {
				_, err = (&PluginRegisterOptions{IO: ios, ReadFile: read, Files: names}).plugins(context.Background())
			} else {
				o := &VolumeSubmitOptions{IO: ios, ReadFile: read, Verb: spec.VerbRegister, Files: names}
				_, err = parseVolumeSpecs(context.Background(), o, command)
			}
			if err == nil || ExitCode(err) != ExitUsage {
				t.Fatalf("err = %v (exit %d), want a usage error", err, ExitCode(err))
			}
			want := fmt.Sprintf("%s: the 100 spec files hold more than %d MiB together", command, maxSpecFilesSize>>20)
			checkHolds(t, "the error", err.Error(), []string{want, "f32.hcl", "in several commands", "nothing was registered"}, nil)
			if reads > maxSpecFilesSize/maxSpecSize+1 {
				t.Errorf("%d files read, want reading to stop at the one past the bound", reads)
			}
			if errOut.Len() > 0 {
				t.Errorf("stderr = %.200q, want nothing parsed", errOut)
			}
		})
	}
}

// TestValidateHoldsOneFileAtATime: validate reads its files one at a time and may be given any
// number, but it kept every file it had parsed (the parser's copy, for diagnostics' snippets):
// 40 files of 1 MiB held 250 MB, 1,000 would hold 6 GB. What it holds is one file's, however
// many it is given: the heap does not grow from the second file read to the last.
func TestValidateHoldsOneFileAtATime(t *testing.T) {
	line := "# " + strings.Repeat("x", 97) + "\n"
	// Half the bound each: what a file held is the same at any size (twice the file), and 512
	// KiB parses in half the CPU of 1 MiB under the race detector.
	file := []byte(strings.Repeat(line, maxSpecSize/2/len(line)))
	names := make([]string, 6)
	for i := range names {
		names[i] = fmt.Sprintf("f%d.hcl", i)
	}
	var heap []uint64 // at each read
	read := func(string) ([]byte, error) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = append(heap, ms.HeapAlloc)
		return file, nil
	}
	ios, _, _, _ := iostreams.Test()
	ios.ErrOut = io.Discard
	err := validateRun(context.Background(), &ValidateOptions{IO: ios, ReadFile: read, Files: names})
	if ExitCode(err) != ExitUsage {
		t.Fatalf("validate: %v (exit %d), want exit 2", err, ExitCode(err))
	}
	// Each file parsed was held on the old code (a parser shared by all: 2,050 KiB from the
	// second read to the last, at 512 KiB a file); one file's is at most 1.5 MiB.
	if grown := int64(heap[len(heap)-1]) - int64(heap[1]); grown > 3<<19 {
		t.Errorf("validate held %d KiB more at file %d than at file 2, want what one file takes", grown>>10, len(names))
	}
}

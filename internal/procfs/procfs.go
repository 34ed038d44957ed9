// Package procfs reads what /proc says of a process whose first thread may have exited.
//
// A process's first thread can exit while its other threads run on (a C program whose main
// calls pthread_exit; any multi-threaded process killed, whose threads end one by one). /proc
// then shows /proc/<pid> as a zombie, and the attributes the threads share, read through it,
// as nothing: its ns/ links cannot be read, its mountinfo fails with EINVAL, its fd directory
// is empty, its environ and cmdline are empty or unreadable. They are still there, read
// through a thread that runs: /proc/<pid>/task/<tid>/.
package procfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Dir is the directory under root (/proc; a test's tree) through which what the threads of
// process pid share is read: root/<pid> unless its first thread is a zombie (stat state Z)
// and another thread runs, then that thread's root/<pid>/task/<tid>. root/<pid> when /proc
// says neither (gone, unreadable, a test's tree without stat files): reading through it then
// fails or answers as it always did.
func Dir(root string, pid int) string {
	dir := filepath.Join(root, strconv.Itoa(pid))
	if f, err := StatFields(filepath.Join(dir, "stat")); err != nil || len(f) == 0 || f[0] != "Z" {
		return dir
	}
	if tid, ok := RunningThread(root, pid); ok {
		return filepath.Join(dir, "task", tid)
	}
	return dir
}

// RunningThread returns a thread of process pid other than its first that runs (is no
// zombie), as its /proc task directory names it, and whether there is one.
func RunningThread(root string, pid int) (tid string, ok bool) {
	dir := filepath.Join(root, strconv.Itoa(pid), "task")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	for _, en := range entries {
		if en.Name() == strconv.Itoa(pid) {
			continue
		}
		if f, err := StatFields(filepath.Join(dir, en.Name(), "stat")); err == nil && len(f) > 0 && f[0] != "Z" && f[0] != "X" {
			return en.Name(), true
		}
	}
	return "", false
}

// StatFields reads a /proc stat file's fields from the third (the state) on.
func StatFields(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: parse after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("%s: malformed", path)
	}
	return strings.Fields(s[i+1:]), nil
}

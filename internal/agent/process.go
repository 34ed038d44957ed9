package agent

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/procfs"
	"github.com/volctl/volctl/internal/spec"
)

// maxLogSize is the size past which a plugin's log is rotated (to .log.1): when it is started,
// and while it runs (trimLog, every logCheckInterval).
var maxLogSize int64 = 10 << 20

// logCheckInterval is how often the agent checks the size of its plugins' logs.
var logCheckInterval = time.Second

// process is a plugin process the agent may signal: one it started, or one an earlier agent
// started and left running (adopted through its pid file).
type process struct {
	pid       int
	startTick uint64    // /proc/<pid>/stat starttime, which tells a reused pid from ours
	started   time.Time // when this agent started or adopted it
	child     bool      // started by this agent: Wait reaps it
	daemon    bool      // the daemon a plugin's process left serving its socket (daemonOf)
	pgid      int       // its process group when it does not lead one (a daemon's), else 0: pid's
	instance  string    // the token in the plugin's environment (instanceEnv), which its daemon inherits
	// execDigest is execDigestOf the declaration the process was started with (its daemon's,
	// the process's that left it), recorded in its pid file: "" when unknown (a pid file of an
	// older agent), which is taken for the declared one.
	execDigest string
	// served are the sockets it was started to serve (the declaration's Type, Socket,
	// ControllerSocket and NodeSocket, recorded in its pid file), nil when unknown (an older
	// agent's pid file): a publish through them holds their publish lock, which a stop of the
	// process waits for, the plugin as stored naming other sockets since (mountsHeld).
	served *spec.Plugin
	exited chan struct{}

	mu  sync.Mutex
	err error // Wait's answer, for a child
}

// execSockets are the socket paths of a supervised plugin.
func execSockets(sp spec.Plugin) []string {
	var out []string
	for _, s := range []string{sp.Socket, sp.ControllerSocket, sp.NodeSocket} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// execEndpoint is the socket handed to the plugin in CSI_ENDPOINT: its one socket, or for a
// monolith declared with split sockets, the controller's (a plugin serving two sockets from one
// process reads its own flags for the second).
func execEndpoint(sp spec.Plugin) string { return execSockets(sp)[0] }

// socketsLive reports whether something accepts connections on every socket.
func socketsLive(paths []string) bool {
	for _, p := range paths {
		c, err := net.DialTimeout("unix", p, time.Second)
		if err != nil {
			return false
		}
		c.Close()
	}
	return len(paths) > 0
}

func socketsExist(paths []string) bool { return len(missingSockets(paths)) == 0 }

// missingSockets are the paths of paths where no file is.
func missingSockets(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			out = append(out, p)
		}
	}
	return out
}

// afterStart runs right after a plugin's process is started, before anything records it: the
// crash test kills the agent there.
var afterStart = func() {}

// beforeFollowDaemon runs when a plugin's process has exited, before the agent looks for the
// daemon it left: the crash test kills the agent there.
var beforeFollowDaemon = func(socket string) {}

// startProcess starts a plugin from its exec block: in its own process group (a terminal's
// ^C or the agent's death does not reach it), with CSI_ENDPOINT set to its socket, and its
// output appended to <state>/logs/<id>.log. Its pid goes to <state>/run/<id>.pid before the
// plugin's command runs (starthelper.go): a plugin whose process cannot be recorded is not
// started.
func startProcess(sp spec.Plugin, runDir, logDir string) (*process, error) {
	logPath := filepath.Join(logDir, sp.ID+".log")
	if st, err := os.Stat(logPath); err == nil && st.Size() > maxLogSize {
		_ = os.Rename(logPath, logPath+".1")
	}
	f, err := openStateFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return nil, fmt.Errorf("plugin log: %w", err)
	}
	defer f.Close() // the child has its own descriptor
	logf := func(format string, args ...any) {
		fmt.Fprintf(f, "%s volctl agent: "+format+"\n", append([]any{time.Now().Format(time.RFC3339)}, args...)...)
	}
	// The exec block's env is secret; its command and args are not (they are printed in plain
	// by `plugin status` too), and they are what an operator needs to read this log.
	logf("starting %s %s", sp.Exec.Command, strings.Join(sp.Exec.Args, " "))

	// The command is looked up here, so that one that cannot run fails the start, as it did
	// when the agent executed it directly.
	path, err := exec.LookPath(sp.Exec.Command)
	if err != nil {
		logf("%v", err)
		return nil, err
	}
	env, dropped := trustedPATH(pluginEnv(os.Environ(), sp))
	for _, pr := range dropped {
		logf("left %s out of the plugin's PATH: it %s, so another user could put there a program the plugin runs as uid %d "+
			"(make it root's and writable by root alone, or take it out of the agent's PATH or the exec block's env)",
			spec.QuoteName(pr.Path), pr.Why, os.Geteuid())
	}
	// Checked once, on the PATH the plugin gets: a script's #!/usr/bin/env NAME is looked up
	// there, never in the directories trustedPATH left out.
	// The environment first: its variables named, with the script's own $ORIGIN; then the
	// program, whose loader's check expands $ORIGIN to the ELF program's directory.
	if err := untrustedEnv(sp.Exec.Command, path, env); err != nil {
		logf("%v", err)
		return nil, err
	}
	if err := untrustedProgram(sp.Exec.Command, path, env); err != nil {
		logf("%v", err)
		return nil, err
	}
	wd, _ := os.Getwd() // the plugin's: it inherits the agent's
	if err := untrustedArgs(sp.Exec.Command, path, sp.Exec.Args, env, wd); err != nil {
		logf("%v", err)
		return nil, err
	}
	goAhead, send, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting plugin: %w", err)
	}
	defer send.Close() // unless sent the go-ahead, the process exits without running the plugin
	execErr, execErrW, err := os.Pipe()
	if err != nil {
		goAhead.Close()
		return nil, fmt.Errorf("starting plugin: %w", err)
	}
	defer execErr.Close()
	cmd := exec.Command(startHelperBin)
	cmd.Args = append([]string{startHelperArg0, path, sp.Exec.Command}, sp.Exec.Args...)
	instance := newInstance()
	cmd.Env = append(env, startHelperEnv+"=1", instanceEnv+"="+instance)
	cmd.ExtraFiles = []*os.File{goAhead, execErrW} // fds 3 and 4: starthelper.GoAheadFD, ExecErrFD
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	childMu.Lock() // reapOrphans leaves it to cmd.Wait, even if it exits at once
	err = cmd.Start()
	if err == nil {
		ownedChildren[cmd.Process.Pid] = true
	}
	childMu.Unlock()
	goAhead.Close()
	execErrW.Close()
	if err != nil {
		logf("%v", err)
		return nil, err
	}
	p := &process{pid: cmd.Process.Pid, started: time.Now(), child: true, instance: instance, execDigest: execDigestOf(sp), served: socketsOf(sp), exited: make(chan struct{})}
	p.startTick, _ = procStartTick(p.pid)
	afterStart()
	crash.Go(func() {
		err := cmd.Wait()
		childMu.Lock()
		delete(ownedChildren, p.pid)
		childMu.Unlock()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.exited)
	})
	// Without its pid file a later agent could neither stop nor adopt the plugin: it would take
	// it for one no agent started, or start a second one on its socket. Such a plugin is not
	// started (the process exits at the end of the pipe) and the start is retried.
	err = giveCoreLimit(p.pid)
	if err == nil {
		err = writePidFile(runDir, sp.ID, p)
	}
	if err != nil {
		logf("%v: not starting the plugin", err)
		send.Close()
		p.wait(5 * time.Second)
		return nil, err
	}
	_, err = send.Write([]byte{'y'})
	if err == nil {
		err = readExecErr(execErr, path)
	}
	if err != nil {
		logf("%v", err)
		p.stop(5 * time.Second)
		removePidFile(runDir, sp.ID, p.pid)
		return nil, err
	}
	return p, nil
}

// readExecErr reads what the start helper says of its exec of path: nothing (its end closed
// on exec) when the plugin's command runs, else why it could not run it.
func readExecErr(r *os.File, path string) error {
	_ = r.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, err := io.ReadAll(io.LimitReader(r, 4096))
	switch {
	case err != nil:
		return fmt.Errorf("starting plugin: %s: %w", path, err)
	case len(b) > 0:
		return fmt.Errorf("exec %s: %s", path, b)
	}
	return nil
}

// trimLog rotates a running plugin's log that grew past maxLogSize. The plugin holds the file
// open (its stdout and stderr, which must outlive the agent, so no pipe through it), so the
// file cannot be renamed away: its newest maxLogSize bytes are copied to .log.1, after a line
// saying how much older output was dropped, and the file truncated, which its writers,
// appending, follow. What the plugin writes between the copy and the truncation is lost.
// Without this a plugin flooding its output filled the file system the store is on; copying
// all of it, a flood faster than the checks left .log.1 as large as the flood.
func trimLog(path string) error {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() <= maxLogSize {
		return nil
	}
	src, err := openStateFile(path, os.O_RDWR)
	if err != nil {
		return err
	}
	defer src.Close()
	return trimOpen(src, path+".1")
}

// trimOpen is trimLog for the log open as src, rotated to the path rotated. When the newest
// output cannot be kept there for lack of room (the file system is full, or the quota used up)
// or rotated is not a regular file, the log is emptied all the same (dropAll): its bound comes
// first, since it shares the store's file system, and before, a full disk kept the log at its
// size, the space the rotation exists to give back never given
// (TestTrimLogOnAFullDiskGivesTheSpaceBack). Any other failure (rotated's directory gone, no
// file descriptor left for a moment) keeps the log for the next check
// (TestTrimLogKeepsTheLogWhenOnlyItsRotationFails).
func trimOpen(src *os.File, rotated string) error {
	st, err := src.Stat()
	if err != nil || st.Size() <= maxLogSize {
		return err
	}
	dst, err := openStateFile(rotated, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		var nr notRegularError
		if noRoom(err) || errors.As(err, &nr) {
			return dropAll(src, st.Size(), err)
		}
		return err // the log kept: the next check rotates it once the cause is gone
	}
	if drop := st.Size() - maxLogSize; drop > 0 {
		fmt.Fprintf(dst, "%s volctl agent: %d bytes of earlier output dropped: the log grew past %d bytes between two checks\n",
			time.Now().Format(time.RFC3339), drop, maxLogSize)
		_, err = src.Seek(drop, io.SeekStart)
	}
	if err == nil {
		_, err = io.Copy(dst, io.LimitReader(src, min(st.Size(), maxLogSize)))
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(rotated) // a part of the output, its newest lines missing: none is clearer
		if noRoom(err) {
			return dropAll(src, st.Size(), err)
		}
		return err
	}
	return src.Truncate(0)
}

// noRoom reports whether err is a file system's, or a quota's, lack of room.
func noRoom(err error) bool { return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) }

// dropAll empties the log src, of size bytes, whose output could not be kept (why), and says
// so in it, on a line appended as the plugin's writes are, after any the plugin made since.
func dropAll(src *os.File, size int64, why error) error {
	if err := src.Truncate(0); err != nil {
		return errors.Join(why, fmt.Errorf("emptying the log %s: %w", src.Name(), err))
	}
	if flags, err := unix.FcntlInt(src.Fd(), unix.F_GETFL, 0); err == nil {
		if _, err := unix.FcntlInt(src.Fd(), unix.F_SETFL, flags|unix.O_APPEND); err == nil {
			fmt.Fprintf(src, "%s volctl agent: %d bytes of output dropped: the log grew past %d bytes and its newest output could not be kept: %v\n",
				time.Now().Format(time.RFC3339), size, maxLogSize, why)
		}
	}
	return fmt.Errorf("%w (the plugin's log was emptied instead, %d bytes of its output dropped, to keep it within %d bytes on the state dir's file system)", why, size, maxLogSize)
}

// orphanedLog opens the file a running plugin writes its output to when the log's path no
// longer names it: the log was removed, or replaced by a symlink, a named pipe or another file,
// while no agent ran, and the plugin, adopted, writes on to the file it was started with, which
// the kernel names "<path> (deleted)". Nothing at the path is followed: the file is reached
// through the plugin's own descriptor (/proc/<pid>/fd/1, else 2), and only a regular file with
// no name left is returned. nil when the plugin writes to no such file.
func orphanedLog(pid int, path string) (*os.File, error) {
	for _, fd := range []int{1, 2} {
		link := fmt.Sprintf("/proc/%d/fd/%d", pid, fd)
		if target, err := os.Readlink(link); err != nil || target != path+" (deleted)" {
			continue
		}
		f, err := os.OpenFile(link, os.O_RDWR|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink != 0 {
			f.Close()
			continue
		}
		return f, nil
	}
	return nil, nil
}

// UntrustedCommand is why the agent would not run plugin sp's exec block's command
// (untrustedProgram), looked up in this process's PATH, or nil: nil too when it is not found
// here, where the agent, with its own PATH, may find it. `plugin register` warns with it,
// before any agent refuses.
func UntrustedCommand(sp spec.Plugin) error {
	path, err := exec.LookPath(sp.Exec.Command)
	if err != nil {
		return nil
	}
	env, _ := trustedPATH(pluginEnv(os.Environ(), sp))
	if err := untrustedEnv(sp.Exec.Command, path, env); err != nil {
		return err
	}
	if err := untrustedProgram(sp.Exec.Command, path, env); err != nil {
		return err
	}
	return untrustedArgs(sp.Exec.Command, path, sp.Exec.Args, env, "") // the agent's working directory is not this one
}

// MissingCommand is why the agent could not start plugin sp's exec block's command when it
// is a path (it holds a slash): not there, or not executable, wherever the agent runs on this
// host, as its PATH does not come into it (a command named alone is looked up in the agent's
// PATH, which may differ from this process's: nil). `plugin register` warns with it: before,
// a command mistyped was registered in silence, and the agent failed to start it at each try.
func MissingCommand(sp spec.Plugin) error {
	if sp.Exec == nil || !filepath.IsAbs(sp.Exec.Command) {
		return nil // a relative path is the agent's working directory's
	}
	_, err := exec.LookPath(sp.Exec.Command)
	return err
}

// cannotStart is why the agent could not start plugin sp's exec block as declared now (its
// command not found on the agent's PATH, or one it refuses to run: UntrustedCommand), nil
// when it could: looked at before a process running an outdated exec block is stopped for it.
func cannotStart(sp spec.Plugin) error {
	if _, err := exec.LookPath(sp.Exec.Command); err != nil {
		return err
	}
	return UntrustedCommand(sp)
}

// loaderEnv are the variables of a plugin's environment that name files or directories the
// plugin loads code from (ld.so(8): LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH; iconv's GCONV_PATH;
// a #!/bin/bash plugin's BASH_ENV, which the shell runs first (sh's ENV, which only an
// interactive shell runs, and PYTHONSTARTUP, which only an interactive Python does, are
// checked where a shell or python is the program run: startupFiles); the module paths of
// Python, Perl, Ruby and Node: PYTHONPATH, PYTHONHOME, PYTHONUSERBASE (whose site-packages Python
// searches), PERL5LIB, PERLLIB (perl's when PERL5LIB is unset), RUBYLIB, NODE_PATH), reads its
// settings from (LOCPATH's locales, HOSTALIASES' host names, TZDIR's time zones) or writes
// (LD_DEBUG_OUTPUT, MALLOC_TRACE), each with the separators of its list. None passes from the
// agent's environment (passedEnv); the exec block's env may set them. PERL5OPT's and RUBYOPT's -I,
// PERL5OPT's -Mlib=, RUBYOPT's -r of a path and NODE_OPTIONS' --require, --import and --loader
// name them within options (optionPaths).
//
// So are those that have the program load code one step aside, or read what decides whom it
// trusts: the JVM's CLASSPATH (and, within JAVA_TOOL_OPTIONS, _JAVA_OPTIONS and
// JDK_JAVA_OPTIONS, the options that load code: javaOptionPaths), Lua's LUA_PATH and LUA_CPATH
// templates and LUA_INIT's @file (luaPaths), Ruby's GEM_PATH and GEM_HOME, Python's
// PYTHONPYCACHEPREFIX (whose compiled modules it loads), OpenSSL's OPENSSL_CONF (which loads
// engines and providers), OPENSSL_MODULES and OPENSSL_ENGINES, git's GIT_EXEC_PATH, GIT_SSH,
// GIT_ASKPASS (and SSH_ASKPASS), GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM (a config runs commands)
// and GIT_TEMPLATE_DIR (hooks), ld.so's LD_PROFILE_OUTPUT (written); the trust anchors of
// TLS, which a plugin's calls to its cloud carry its credentials through: SSL_CERT_FILE and
// SSL_CERT_DIR (OpenSSL's and Go's), NODE_EXTRA_CA_CERTS, CURL_CA_BUNDLE, REQUESTS_CA_BUNDLE,
// GIT_SSL_CAINFO, GIT_SSL_CAPATH, AWS_CA_BUNDLE (and the JVM's -Djavax.net.ssl.trustStore=);
// and the cloud configurations that name the endpoint, the credentials or a credential_process
// command: AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE, KUBECONFIG,
// GOOGLE_APPLICATION_CREDENTIALS. These are a list, not every variable any program reads:
// docs/agent.md says which. A variable read only interactively (ENV, PYTHONSTARTUP: see
// startupFiles), or holding a shell command (GIT_SSH_COMMAND), is not checked here.
var loaderEnv = map[string]string{
	"LD_PRELOAD": ": ", "LD_AUDIT": ":", "LD_LIBRARY_PATH": ":;", "GCONV_PATH": ":", "LOCPATH": ":",
	"HOSTALIASES": "", "LD_DEBUG_OUTPUT": "", "MALLOC_TRACE": "", "LD_PROFILE_OUTPUT": "",
	"BASH_ENV": "", "PYTHONPATH": ":", "PYTHONHOME": ":", "PYTHONUSERBASE": "", "PERL5LIB": ":",
	"PERLLIB": ":", "RUBYLIB": ":", "NODE_PATH": ":", "TZDIR": "",
	"CLASSPATH": ":", "GEM_PATH": ":", "GEM_HOME": "", "PYTHONPYCACHEPREFIX": "",
	"OPENSSL_CONF": "", "OPENSSL_MODULES": "", "OPENSSL_ENGINES": "",
	"GIT_EXEC_PATH": "", "GIT_SSH": "", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "GIT_CONFIG_GLOBAL": "",
	"GIT_CONFIG_SYSTEM": "", "GIT_TEMPLATE_DIR": "",
	"SSL_CERT_FILE": "", "SSL_CERT_DIR": ":", "NODE_EXTRA_CA_CERTS": "", "CURL_CA_BUNDLE": "", "REQUESTS_CA_BUNDLE": "",
	"GIT_SSL_CAINFO": "", "GIT_SSL_CAPATH": "", "AWS_CA_BUNDLE": "",
	"AWS_CONFIG_FILE": "", "AWS_SHARED_CREDENTIALS_FILE": "", "KUBECONFIG": ":", "GOOGLE_APPLICATION_CREDENTIALS": "",
}

// homeEnv are the variables of loaderEnv whose readers (the AWS SDKs) expand a leading ~/ to
// the home directory: HOME's, of the plugin's environment.
var homeEnv = map[string]bool{"AWS_CONFIG_FILE": true, "AWS_SHARED_CREDENTIALS_FILE": true}

// javaOptionsEnv are the variables the JVM (or its launcher: JDK_JAVA_OPTIONS) reads options from.
var javaOptionsEnv = map[string]bool{"JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true, "JDK_JAVA_OPTIONS": true}

// isLuaEnv says whether k is one of Lua's path variables (LUA_PATH, LUA_CPATH, each also with
// its version, LUA_PATH_5_4) or its LUA_INIT.
func isLuaEnv(k string) bool {
	for _, p := range []string{"LUA_PATH", "LUA_CPATH", "LUA_INIT"} {
		if k == p || strings.HasPrefix(k, p+"_5_") {
			return true
		}
	}
	return false
}

// defaultTZDir is where glibc looks a time zone named by a relative name up, TZDIR unset.
const defaultTZDir = "/usr/share/zoneinfo"

// untrustedEnv refuses to run command, found at path, with env when a path env names for the
// loader, the C library, the shell, an interpreter's modules, the locale or the time zone is one
// another user controls (pathtrust.Source): theirs or writable by them, on a way they control,
// not made yet where they may make it, or relative (the plugin's working directory). A library
// they put there runs in the plugin as the agent's user (root), as a program of theirs in PATH
// would; a locale, time zone or hosts file of theirs is read by it. A name without a slash in
// LD_PRELOAD or LD_AUDIT is looked up in the library directories (the system's,
// LD_LIBRARY_PATH's: checked), a locale named without a leading slash in the system's, a time
// zone in TZDIR (checked) unless ".." takes it out. ld.so's $ORIGIN (the program's directory),
// $LIB and $PLATFORM are expanded in LD_LIBRARY_PATH as in a RUNPATH (pathtrust.LibraryDir), and
// in LD_PRELOAD and LD_AUDIT to each name ld.so may give them (pathtrust.LoaderNames). A BASH_ENV that the shell would expand ($, `) is
// refused: what it names cannot be told before the shell runs it. An empty single path
// (BASH_ENV=, TZDIR=, ...) names nothing: bash and glibc take it as unset.
func untrustedEnv(command, path string, env []string) error {
	origin := filepath.Dir(path)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		origin = filepath.Dir(real)
	}
	tzdir := defaultTZDir
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TZDIR="); ok && v != "" {
			tzdir = v
		}
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		var names []string
		switch seps, ok := loaderEnv[k]; {
		case k == "BASH_ENV" && strings.ContainsAny(v, "$`"):
			return fmt.Errorf("command %s: not run: the plugin's environment's %s holds what the shell expands ($ or `) before it runs the file it names, "+
				"so what a shell plugin runs first cannot be checked: name the file by a plain absolute path, or take %s out of the exec block's env",
				spec.QuoteName(command), k, k)
		case runEnv[k]:
			if err := untrustedRun(command, k, v, env); err != nil {
				return err
			}
		case ok && seps == "":
			if rest, ok := strings.CutPrefix(v, "~/"); ok && homeEnv[k] {
				v = "~" // relative, refused, unless HOME names where the SDK looks
				for _, e := range env {
					if home, ok := strings.CutPrefix(e, "HOME="); ok && filepath.IsAbs(home) {
						v = filepath.Join(home, rest)
					}
				}
			}
			if v != "" {
				names = []string{v}
			}
		case k == "LD_LIBRARY_PATH":
			names = pathtrust.LibraryPathEntries(v) // an empty entry is the working directory
		case k == "CLASSPATH":
			if v != "" {
				names = strings.Split(v, ":") // so is one here ("a.jar:", "a.jar::b.jar")
			}
		case ok:
			names = strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(seps, r) })
			if k == "LD_PRELOAD" || k == "LD_AUDIT" {
				var expanded []string
				for _, n := range names {
					if strings.Contains(n, "/") {
						expanded = append(expanded, pathtrust.LoaderNames(n, origin)...)
					}
				}
				names = expanded
			}
		case k == "PERL5OPT" || k == "RUBYOPT" || k == "NODE_OPTIONS":
			readings, err := envOptionReadings(command, k, v)
			if err != nil {
				return err
			}
			for _, p := range readings {
				if p.inspector != "" {
					return inspectorError(command, p.inspector, "the plugin's environment's NODE_OPTIONS gives")
				}
				names = append(names, optionPaths(k, p)...)
			}
		case javaOptionsEnv[k]:
			names = javaOptionPaths(k, v)
		case isLuaEnv(k):
			names = luaPaths(k, v)
		case k == "LANG" || k == "LANGUAGE" || strings.HasPrefix(k, "LC_"):
			for _, n := range strings.Split(v, ":") {
				if strings.HasPrefix(n, "/") { // glibc loads a locale named by its absolute path
					names = append(names, n)
				}
			}
		case k == "TZ":
			n := strings.TrimPrefix(v, ":")
			if strings.HasPrefix(n, "/") {
				names = []string{n}
			} else if slices.Contains(strings.Split(n, "/"), "..") {
				names = []string{filepath.Join(tzdir, n)} // glibc reads it there, .. and all
			}
		}
		for _, n := range names {
			var pr *pathtrust.Problem
			if k == "LD_LIBRARY_PATH" {
				pr = pathtrust.LibraryDir(n, origin)
			} else {
				pr = pathtrust.Source(n)
			}
			if pr != nil {
				fix := "make it and every directory on the way root's and writable by root alone (chown root, chmod go-w)"
				if !filepath.IsAbs(n) {
					fix = "name it by its absolute path, in a directory root's alone"
				}
				if n == "" {
					n = "an empty entry, the working directory"
				} else {
					n = spec.QuoteName(n)
				}
				// The variable's value is not printed (an exec env's are secret): the path is.
				return fmt.Errorf("command %s: not run: the plugin's environment's %s names %s, and %s %s: "+
					"another user could put there what the plugin loads or reads, run or read as uid %d: "+
					"%s, or take %s out of the exec block's env",
					spec.QuoteName(command), k, n, spec.QuoteName(pr.Path), pr.Why, os.Geteuid(), fix, k)
			}
		}
	}
	return nil
}

// optionPaths is the paths the options in PERL5OPT, RUBYOPT or NODE_OPTIONS have the interpreter
// load code from, read by the same reader as its command line (interpreter.parse): perl's and
// ruby's -I DIR (the module search path, searched before the system's), perl's -Mlib=DIR,...
// and -mlib=DIR,... (lib.pm's, the same), ruby's -r naming a path (/, ./, ../ or ~ first: a
// bare name is looked up in the module path, checked as that is), node's --require, -r,
// --import, --loader and --experimental-loader MODULE (a module loaded before the program; one
// named without a leading slash is resolved from the working directory, and so counts as
// relative; a file: URL, and --import's or a loader's path, is the path node decodes from it,
// nodeModulePath), --openssl-config and --env-file FILE. p is one reading of
// the variable's options (envOptionReadings).
func optionPaths(k string, p parsed) []string {
	in := envOptionsReader[k]
	var names []string
	for _, c := range slices.Concat(p.paths, p.envFiles) {
		names = append(names, c.path)
	}
	for _, m := range p.modules {
		n := m.path
		if in == &node {
			n, _ = nodeModulePath(m.what, n)
		}
		if in == &ruby && !strings.HasPrefix(n, "/") && !strings.HasPrefix(n, "./") && !strings.HasPrefix(n, "../") && !strings.HasPrefix(n, "~") {
			continue
		}
		names = append(names, n)
	}
	return names
}

// envOptionsReader is the interpreter that reads each variable of options.
var envOptionsReader = map[string]*interpreter{"PERL5OPT": &perl, "RUBYOPT": &ruby, "NODE_OPTIONS": &node}

// envOptionReadings are the ways the interpreter may read the options in PERL5OPT, RUBYOPT or
// NODE_OPTIONS (k) v: split as it splits them (perl and ruby at white space; node at spaces,
// with double quotes kept together and taken off and a backslash in them escaping the next
// character: nodeOptionsWords), and read both ways at a long option the agent does not know
// without "=" (node's: it may take the next word as its value or not; the argument path reads
// args so, untrustedReadings), each reading's paths and inspector checked. Past maxUnknown such
// options, or a NODE_OPTIONS node itself refuses (a quote left open), it is refused: what it
// loads cannot be told. The value is not printed (an exec env's are secret).
func envOptionReadings(command, k, v string) ([]parsed, error) {
	in := envOptionsReader[k]
	words := strings.Fields(v)
	if in == &node {
		var bad string
		if words, bad = nodeOptionsWords(v); bad != "" {
			return nil, fmt.Errorf("command %s: not run: the plugin's environment's NODE_OPTIONS %s, which node refuses: close its quote, or take NODE_OPTIONS out of the exec block's env",
				spec.QuoteName(command), bad)
		}
	}
	readings, unknown := in.readings(words, maxUnknown)
	if unknown != "" {
		return nil, fmt.Errorf("command %s: not run: the plugin's environment's %s gives %s options %s and more before it, which the agent does not know: whether each takes the next word as its value, "+
			"and so what it loads, cannot be told: give their values after \"=\" (%s=VALUE), or take them out of %s", spec.QuoteName(command), k, in.name, spec.QuoteName(unknown), unknown, k)
	}
	return readings, nil
}

// nodeOptionsWords splits NODE_OPTIONS as node does: at each space outside double quotes; a
// double quote opens or closes a quoted part, and is taken off; a backslash within one escapes
// the character after it. bad says why node refuses v ("" when it does not).
func nodeOptionsWords(v string) (words []string, bad string) {
	quoted, start := false, true
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && quoted:
			if i+1 == len(v) {
				return words, "ends in a backslash within a quote"
			}
			i++
			c = v[i]
		case c == ' ' && !quoted:
			start = true
			continue
		case c == '"':
			quoted = !quoted
			continue
		}
		if start {
			words = append(words, "")
			start = false
		}
		words[len(words)-1] += string(c)
	}
	if quoted {
		return words, "leaves a double quote open"
	}
	return words, ""
}

// javaOptionPaths is the paths the JVM options in v (JAVA_TOOL_OPTIONS, _JAVA_OPTIONS or, for
// the launcher, JDK_JAVA_OPTIONS k) have it load code from: -javaagent:JAR and -agentpath:LIB
// (before their =options), -Xbootclasspath (/a: and /p: too), -cp, -classpath, --class-path,
// --module-path, --upgrade-module-path, -Djava.class.path=, -Djava.library.path= and
// -Djava.ext.dirs= (each a list), -Djavax.net.ssl.trustStore= (whom it trusts),
// -XX:VMOptionsFile= and -XX:Flags= (more options), and the
// launcher's @argfile. A quote around a word is the JVM's, not the path's. -agentlib:NAME is
// looked up in the JDK's own directory, root's.
func javaOptionPaths(k, v string) []string {
	var names []string
	list := func(s string) { names = append(names, strings.Split(s, ":")...) }
	words := strings.Fields(v)
	for i := 0; i < len(words); i++ {
		w := strings.Trim(words[i], `"'`)
		switch {
		case strings.HasPrefix(w, "-javaagent:"), strings.HasPrefix(w, "-agentpath:"):
			_, spec, _ := strings.Cut(w, ":")
			path, _, _ := strings.Cut(spec, "=")
			names = append(names, path)
		case strings.HasPrefix(w, "-Xbootclasspath"):
			if _, l, ok := strings.Cut(w, ":"); ok {
				list(l)
			}
		case w == "-cp" || w == "-classpath" || w == "--class-path" || w == "--module-path" || w == "-p" || w == "--upgrade-module-path":
			if i+1 < len(words) {
				i++
				list(strings.Trim(words[i], `"'`))
			}
		case strings.HasPrefix(w, "--class-path="), strings.HasPrefix(w, "--module-path="), strings.HasPrefix(w, "--upgrade-module-path="),
			strings.HasPrefix(w, "-Djava.class.path="), strings.HasPrefix(w, "-Djava.library.path="), strings.HasPrefix(w, "-Djava.ext.dirs="),
			strings.HasPrefix(w, "-Djavax.net.ssl.trustStore="):
			_, l, _ := strings.Cut(w, "=")
			list(l)
		case strings.HasPrefix(w, "-XX:VMOptionsFile="), strings.HasPrefix(w, "-XX:Flags="):
			_, f, _ := strings.Cut(w, "=")
			names = append(names, f)
		case k == "JDK_JAVA_OPTIONS" && strings.HasPrefix(w, "@"):
			names = append(names, w[1:])
		}
	}
	return names
}

// luaPaths is what Lua's variable k, set to v, has it load: of LUA_PATH and LUA_CPATH, each
// template's directory (the part before the "?" the module's name replaces; ";;", the default
// path, names none); of LUA_INIT, the file "@FILE" names (any other value is Lua code itself,
// written in the exec block).
func luaPaths(k, v string) []string {
	if strings.HasPrefix(k, "LUA_INIT") {
		if f, ok := strings.CutPrefix(v, "@"); ok {
			return []string{f}
		}
		return nil
	}
	var names []string
	for _, t := range strings.Split(v, ";") {
		if t == "" {
			continue
		}
		if i := strings.IndexByte(t, '?'); i >= 0 {
			t = t[:strings.LastIndexByte(t[:i], '/')+1] // "" when relative: the working directory
			if len(t) > 1 {
				t = strings.TrimSuffix(t, "/")
			}
		}
		names = append(names, t)
	}
	return names
}

// untrustedProgram refuses to run command, found at path, with the environment env (the
// plugin's, its PATH trustedPATH's), when
// another user could change what it runs (pathtrust.Program): the program owned or writable by
// them, a directory on the way to it theirs or writable by them, or, for a name looked up in
// PATH, such a directory searched before the program's own (or a missing one they could make),
// where a program of that name would be found first; for a script, the same of its #!
// interpreter, or of the command `#!/usr/bin/env NAME` looks up in env's PATH. The agent runs
// it as its own user, root most often, at every start and restart: that user's code would run
// as root from the next one on, while the agent's config and the plugin's spec said nothing
// had changed. Checked at each start, so a fixed path lets the next retry start it. The
// libraries an ELF program loads are looked for in env's LD_LIBRARY_PATH too, and those env's
// LD_PRELOAD and LD_AUDIT name loaded first and followed, as ld.so does
// (pathtrust.Program): a library file there that another user may write, or a
// preloaded library's RUNPATH that they control, is refused as one the program's RUNPATH finds
// is; the directories and the preloads' paths themselves are untrustedEnv's.
func untrustedProgram(command, path string, env []string) error {
	envPath, loader := programEnv(env)
	pr := pathtrust.Program(command, path, envPath, loader)
	if pr == nil {
		return nil
	}
	found := ""
	if path != command {
		found = fmt.Sprintf(" (found at %s)", spec.QuoteName(path))
	}
	if pr.ELF != "" {
		via := ""
		if pr.Script != "" {
			via = fmt.Sprintf(" (the interpreter the #! line of the script %s names)", spec.QuoteName(pr.Script))
		}
		if pr.System {
			return fmt.Errorf("command %s%s: not run: the dynamic loader of the ELF program %s%s goes, as for every program it starts, by the system's files, here %s, and %s %s: "+
				"another user could have their code run in it (and in every program started after), as uid %d: "+
				"make that file or directory, and every directory on the way, root's and writable by root alone (chown root, chmod go-w); "+
				"a library the system's ld.so.preload names may instead be taken out of it",
				spec.QuoteName(command), found, spec.QuoteName(pr.ELF), via, pr.Entry, spec.QuoteName(pr.Path), pr.Why, os.Geteuid())
		}
		if strings.HasPrefix(pr.Entry, "LD_LIBRARY_PATH") {
			return fmt.Errorf("command %s%s: not run: the ELF program %s%s has its dynamic loader search the plugin's environment's %s, "+
				"expanding $ORIGIN to that program's directory, and %s %s: another user could put a library there that it loads, their code run as uid %d: "+
				"make that directory, and every directory on the way, root's and writable by root alone (chown root, chmod go-w), "+
				"name it by its absolute path, or take LD_LIBRARY_PATH out of the exec block's env",
				spec.QuoteName(command), found, spec.QuoteName(pr.ELF), via, pr.Entry, spec.QuoteName(pr.Path), pr.Why, os.Geteuid())
		}
		if pr.Path == pr.ELF {
			return fmt.Errorf("command %s%s: not run: the ELF program %s%s: its %s %s: what its dynamic loader loads, as uid %d, would go unchecked: "+
				"rebuild or relink it (a program stripped of its section headers is read through its program headers)",
				spec.QuoteName(command), found, spec.QuoteName(pr.ELF), via, pr.Entry, pr.Why, os.Geteuid())
		}
		return fmt.Errorf("command %s%s: not run: the ELF program %s%s loads code from where its %s points, and %s %s: "+
			"another user could put a library (or loader) there that it loads, their code run as uid %d: "+
			"make that file or directory, and every directory on the way, root's and writable by root alone (chown root, chmod go-w), "+
			"or rebuild the program without it (patchelf --remove-rpath %s drops a RUNPATH or RPATH, --replace-needed a NEEDED path)",
			spec.QuoteName(command), found, spec.QuoteName(pr.ELF), via, pr.Entry, spec.QuoteName(pr.Path), pr.Why,
			os.Geteuid(), spec.QuoteName(pr.ELF))
	}
	if pr.Script == "" && pr.Shadowed != "" {
		return fmt.Errorf("command %s%s: not run: %s %s, and the agent's PATH has it searched first: "+
			"another user could put a program named %s there, which the agent would run instead, as uid %d: "+
			"take that directory out of the agent's PATH (or make it root's and writable by root alone), or give command as the absolute path %s",
			spec.QuoteName(command), found, spec.QuoteName(pr.Path), pr.Why, spec.QuoteName(command), os.Geteuid(), spec.QuoteName(path))
	}
	if pr.Shadowed != "" { // found by a script's #!/usr/bin/env NAME, in the plugin's PATH
		return fmt.Errorf("command %s%s: not run: its script %s has env run %s, looked up in the PATH the plugin is given, "+
			"which searches %s first, and %s %s: another user could put a program named %s there, which would run instead, as uid %d: "+
			"take that directory out of the plugin's PATH (the agent's, or its exec block's env), or make it root's and writable by root alone, "+
			"or have the #! line name the interpreter by its absolute path",
			spec.QuoteName(command), found, spec.QuoteName(pr.Script), spec.QuoteName(pr.Shadowed), spec.QuoteName(pr.Path), spec.QuoteName(pr.Path), pr.Why,
			spec.QuoteName(pr.Shadowed), os.Geteuid())
	}
	if pr.Script != "" {
		return fmt.Errorf("command %s%s: not run: %s %s, and it is, or is on the way to, the interpreter the #! line of the script %s names, "+
			"so another user could change the program the agent runs as uid %d: "+
			"make it and every directory on the way root's and writable by root alone (chown root, chmod go-w), or have the #! line of %s name an interpreter only root may change",
			spec.QuoteName(command), found, spec.QuoteName(pr.Path), pr.Why, spec.QuoteName(pr.Script), os.Geteuid(), spec.QuoteName(pr.Script))
	}
	return fmt.Errorf("command %s%s: not run: %s %s, so another user could change the program the agent runs as uid %d: "+
		"make it and every directory on the way root's and writable by root alone (chown root, chmod go-w), "+
		"or install the plugin where only root may write, such as /usr/local/bin, and name it there",
		spec.QuoteName(command), found, spec.QuoteName(pr.Path), pr.Why, os.Geteuid())
}

// programEnv is what of env decides which programs and libraries the plugin and what it runs
// by name load: its PATH (DefaultExecPath, what execvp(3) searches, when it has none) and the
// dynamic loader's variables.
func programEnv(env []string) (envPath string, loader pathtrust.LoaderEnv) {
	envPath = pathtrust.DefaultExecPath
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH":
			envPath = v // the plugin's (trustedPATH's): never set empty
		case "LD_LIBRARY_PATH":
			loader.LibraryPath = v
		case "LD_PRELOAD", "LD_AUDIT":
			loader.Preload = append(loader.Preload, strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(loaderEnv[k], r) })...)
		}
	}
	return envPath, loader
}

// runEnv are the variables of loaderEnv that name a program the plugin (git, ssh) runs: a bare
// name is looked up in the plugin's PATH, as git and ssh do, and the program is checked as the
// plugin's own is (pathtrust.Program, pathtrust.LookedUp).
var runEnv = map[string]bool{"GIT_SSH": true, "GIT_ASKPASS": true, "SSH_ASKPASS": true}

// untrustedRun refuses the program the variable k names, v, run by the plugin's command with
// env: nil when only root or this user may change it, or v names nothing.
func untrustedRun(command, k, v string, env []string) error {
	if v == "" {
		return nil // git and ssh take an empty one as unset
	}
	envPath, loader := programEnv(env)
	found := v
	var pr *pathtrust.Problem
	switch {
	case !strings.Contains(v, "/"):
		found, pr = pathtrust.LookedUp(v, envPath, loader)
	case filepath.IsAbs(v):
		if pr = pathtrust.Source(v); pr == nil {
			pr = pathtrust.Program(v, v, envPath, loader)
		}
	default:
		pr = pathtrust.Source(v) // relative: the working directory's
	}
	if pr == nil {
		return nil
	}
	at, fix := "", "make it and every directory on the way root's and writable by root alone (chown root, chmod go-w)"
	if found != "" && found != v {
		at = fmt.Sprintf(" (found at %s in the plugin's PATH)", spec.QuoteName(found))
	}
	if pr.Shadowed != "" {
		at = fmt.Sprintf(" (looked up in the plugin's PATH, which searches %s first)", spec.QuoteName(pr.Path))
		fix = "take that directory out of the plugin's PATH, or make it root's and writable by root alone"
	} else if !filepath.IsAbs(v) && strings.Contains(v, "/") {
		fix = "name it by its absolute path, or by a bare name found in the plugin's PATH"
	}
	via := ""
	if pr.ELF != "" && pr.Entry != "" {
		via = fmt.Sprintf(" (the %s of %s)", pr.Entry, spec.QuoteName(pr.ELF))
	} else if pr.Script != "" {
		via = fmt.Sprintf(" (on the way to the interpreter the #! line of %s names)", spec.QuoteName(pr.Script))
	}
	return fmt.Errorf("command %s: not run: the plugin's environment's %s names the program %s%s, which it runs, and %s %s%s: "+
		"another user could change what runs as uid %d: %s, or take %s out of the exec block's env",
		spec.QuoteName(command), k, spec.QuoteName(v), at, spec.QuoteName(pr.Path), pr.Why, via, os.Geteuid(), fix, k)
}

// pluginEnv is the environment a plugin runs with: of base, the agent's, only what names the
// host's conventions (passedEnv), then the exec block's env and CSI_ENDPOINT on top. The rest of
// the agent's environment is not the plugin's to read: it holds what the operator gave the
// agent, or the shell it was started from, for other programs (NOMAD_TOKEN, VAULT_TOKEN, AWS_*,
// an SSH agent's socket, systemd's NOTIFY_SOCKET), and a plugin is often a third party's
// program. A plugin that needs a variable gets it in its exec block's env (docs/agent.md).
func pluginEnv(base []string, sp spec.Plugin) []string {
	over := map[string]string{}
	for k, v := range sp.Exec.Env.Plain() {
		over[k] = v
	}
	over[spec.EndpointEnv] = "unix://" + execEndpoint(sp)
	out := make([]string, 0, len(over)+8)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := over[k]; !ok && passedEnv(k) {
			out = append(out, kv)
		}
	}
	for k, v := range over {
		out = append(out, k+"="+v)
	}
	return out
}

// trustedPATH is env with its PATH (the agent's, or the exec block's env's) holding only the
// directories no other user controls (pathtrust.SearchPath), and what it left out: the plugin
// runs as the agent's user, root most often, and whatever it runs by name (mount, mkfs, its
// own helpers) is looked up there. A PATH left with nothing (set empty too: execvp's working
// directory, left out as "." is) is pathtrust.DefaultExecPath's directories that pass, and, should
// none pass, unset: never an empty PATH. A PATH unset stays unset (execvp searches
// DefaultExecPath then).
func trustedPATH(env []string) ([]string, []*pathtrust.Problem) {
	for i, kv := range env {
		v, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		kept, dropped := pathtrust.SearchPath(v)
		if len(dropped) == 0 {
			return env, nil
		}
		if len(kept) == 0 {
			kept, _ = pathtrust.SearchPath(pathtrust.DefaultExecPath)
		}
		if len(kept) == 0 {
			return slices.Delete(slices.Clone(env), i, i+1), dropped
		}
		out := slices.Clone(env)
		out[i] = "PATH=" + strings.Join(kept, string(filepath.ListSeparator))
		return out, dropped
	}
	return env, nil
}

// passedEnv says whether the agent's variable k reaches the plugins it starts: the ones a
// service manager gives a service of its own (systemd.exec(5): PATH, LANG, USER, LOGNAME, HOME,
// SHELL), the locale's and the time zone's, and TMPDIR. None of them is a credential.
func passedEnv(k string) bool {
	switch k {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR":
		return true
	}
	return strings.HasPrefix(k, "LC_")
}

// exitStatus says how a child ended ("exit status 2", "signal: killed"); for an adopted
// process, whose status only its parent learns, it says just that.
func (p *process) exitStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err.Error()
	}
	if p.child {
		return "exit status 0"
	}
	if p.daemon {
		return "status unknown: the daemon the plugin's process left"
	}
	return "status unknown: adopted from an earlier agent"
}

// alive reports whether the process still runs (a zombie does not).
func (p *process) alive() bool {
	if p.child {
		select {
		case <-p.exited:
			return false
		default:
			return true
		}
	}
	tick, err := procStartTick(p.pid)
	return err == nil && tick == p.startTick
}

// stop sends SIGTERM to the plugin's process group, waits up to timeout for the process and
// every other member of its group (helpers it forked, a child that kept its socket) to end,
// then sends SIGKILL to what is left. The process itself may have ended already: what it left
// in its group is stopped all the same.
// stopProcess is how the runner stops an unhealthy plugin: process.stop, or in tests one that
// fails as a process stuck past SIGKILL would.
var stopProcess = (*process).stop

func (p *process) stop(timeout time.Duration) error {
	if !p.alive() && len(p.groupRest()) == 0 {
		return nil
	}
	p.signal(syscall.SIGTERM)
	if p.waitGroup(timeout) {
		return nil
	}
	p.signal(syscall.SIGKILL)
	if p.waitGroup(killWait) {
		return nil
	}
	if p.alive() {
		return fmt.Errorf("pid %d still runs after SIGKILL", p.pid)
	}
	return fmt.Errorf("pid %d's process group still runs after SIGKILL: %v", p.pid, p.groupRest())
}

// signal signals the process group when the process leads one (the agent starts plugins so),
// else the process alone: never a group that is not the plugin's. Once the process has ended,
// only what is left of its group is signalled, never its pid alone, which another process may
// have by now.
func (p *process) signal(sig syscall.Signal) {
	if !p.alive() {
		if len(p.groupRest()) > 0 {
			_ = syscall.Kill(-p.group(), sig)
		}
		return
	}
	if pgid, err := syscall.Getpgid(p.pid); err == nil && pgid == p.group() {
		_ = syscall.Kill(-pgid, sig)
		return
	}
	_ = syscall.Kill(p.pid, sig)
}

// group is the process group the plugin's process leads, or for a daemon, the one it was
// found in (the session its parent made before exiting).
func (p *process) group() int {
	if p.pgid != 0 {
		return p.pgid
	}
	return p.pid
}

// groupRest lists the live processes in the process group the plugin's process leads (a
// daemon's: the one it is in, p.group), other than that process. Linux does not hand out a pid while a process group of that ID exists, so
// while any is left the group is still the plugin's; but once it emptied, a new process with
// the plugin's old pid may lead a group of the same ID: when a process has the pid with
// another start time, the group is not the plugin's and nothing is listed.
func (p *process) groupRest() []int {
	if tick, err := procStartTick(p.pid); err == nil && tick != p.startTick {
		return nil
	}
	if g := p.group(); g != p.pid {
		// A daemon's group was led by a process that had exited when the daemon was found:
		// a process with that pid now leads another group.
		if _, err := procStat(g); err == nil {
			return nil
		}
	}
	var out []int
	for _, pid := range procPids() {
		if pid == p.pid {
			continue
		}
		if pgrp, live := procGroup(pid); live && pgrp == p.group() {
			out = append(out, pid)
		}
	}
	return out
}

// procGroup reads a process's process group (field 5 of /proc/<pid>/stat) and whether it runs
// (a zombie does not: see ended).
func procGroup(pid int) (pgrp int, live bool) {
	f, err := procStat(pid)
	if err != nil || len(f) < 3 || ended(pid, f[0]) {
		return 0, false
	}
	pgrp, err = strconv.Atoi(f[2])
	return pgrp, err == nil
}

// waitGroup waits up to d for the process and the rest of its group to end.
func (p *process) waitGroup(d time.Duration) bool {
	deadline := time.Now().Add(d)
	if !p.wait(d) {
		return false
	}
	// Each look reads every process's stat: poll at a gentler pace than the process's own.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for len(p.groupRest()) > 0 {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// wait waits up to d for the process to end.
func (p *process) wait(d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	if p.child {
		select {
		case <-p.exited:
			return true
		case <-deadline.C:
			return false
		}
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for p.alive() {
		select {
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
	return true
}

// procStartTick reads a process's start time in clock ticks since boot (field 22 of
// /proc/<pid>/stat). A zombie counts as gone.
func procStartTick(pid int) (uint64, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 20 {
		return 0, fmt.Errorf("pid %d: malformed stat", pid)
	}
	if ended(pid, f[0]) {
		return 0, fmt.Errorf("pid %d has exited", pid)
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22 overall; f[0] is field 3
}

// ended reports whether the process pid, whose /proc stat shows state, has ended: dead (X), or
// a zombie (Z) with none of its threads left running. A process's first thread shows Z as soon
// as it has exited while the others run on and hold the process's files, its sockets among
// them: a plugin whose main thread called pthread_exit, and any multi-threaded process killed
// with SIGKILL, whose threads end one by one, tearing its memory down before its files close.
func ended(pid int, state string) bool {
	switch state {
	case "X":
		return true
	case "Z":
		_, runs := procfs.RunningThread("/proc", pid)
		return !runs
	}
	return false
}

// procStat reads /proc/<pid>/stat's fields from the third (the state) on.
func procStat(pid int) ([]string, error) {
	return procfs.StatFields(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
}

func pidFilePath(runDir, id string) string {
	if id == "agent" {
		// run/agent.pid is the agent's own: a plugin of that ID shared it, its record over the
		// agent's and the agent's over its, and was lost track of after a crash
		// (TestPluginNamedAgentLeavesTheAgentsPidFileAlone). No other ID's file ends so.
		return filepath.Join(runDir, "agent.plugin-pid")
	}
	return filepath.Join(runDir, id+".pid")
}

// writePidFile records "<pid> <starttime> <instance> <pgid> <exec> <sockets>", so a later agent can tell
// the process it finds is the one an agent started and not another that reused the pid, find
// the daemon it left by its instance (adoptDaemon), stop a daemon that does not lead its
// process group with that group (pgid; 0 when the process leads its own), and tell whether it
// runs the plugin's exec block as declared now (exec: execDigestOf the one it was started
// with). An instance-less process is written "-", which an older agent reads as an instance
// nothing carries; so is an unknown exec, and an older agent reads the first four fields only.
// sockets are the ones it serves (process.served), encoded whole (socketsField), "-" when
// unknown. It is written whole (writeRunFile).
func writePidFile(runDir, id string, p *process) error {
	instance, digest := p.instance, p.execDigest
	if instance == "" {
		instance = "-"
	}
	if digest == "" {
		digest = "-"
	}
	return writeRunFile(pidFilePath(runDir, id), fmt.Appendf(nil, "%d %d %s %d %s %s\n", p.pid, p.startTick, instance, p.pgid, digest, socketsField(p.served)))
}

// socketsOf is what of declaration sp says which sockets its process serves.
func socketsOf(sp spec.Plugin) *spec.Plugin {
	return &spec.Plugin{ID: sp.ID, Type: sp.Type, Socket: sp.Socket, ControllerSocket: sp.ControllerSocket, NodeSocket: sp.NodeSocket}
}

// socketsField is served as one field of the pid file: its JSON, base64 (a path may hold
// spaces); "-" for nil.
func socketsField(served *spec.Plugin) string {
	if served == nil {
		return "-"
	}
	b, err := json.Marshal(served)
	if err != nil {
		return "-"
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// servedOf reads a pid file's sockets field (socketsField), nil when it has none that reads.
func servedOf(field string) *spec.Plugin {
	b, err := base64.RawURLEncoding.DecodeString(field)
	if err != nil {
		return nil
	}
	var sp spec.Plugin
	if json.Unmarshal(b, &sp) != nil || len(execSockets(sp)) == 0 {
		return nil // names no socket (edited, damaged): unknown, as "-" is (TestPidFileSocketsFieldNamingNoSocketDoesNotPanic)
	}
	return &sp
}

// execDigestOf is what tells one exec block from another: a hash of the command, args and env
// a plugin's process is started with, and the sockets its CSI_ENDPOINT names (pluginEnv), each
// length-prefixed, the env in key order. The env's values are secrets, and the pid file that
// holds the hash is root's alone, as the state database that holds the values is.
func execDigestOf(sp spec.Plugin) string {
	h := sha256.New()
	field := func(s string) { fmt.Fprintf(h, "%d:%s,", len(s), s) }
	field(sp.Exec.Command)
	field(strconv.Itoa(len(sp.Exec.Args)))
	for _, a := range sp.Exec.Args {
		field(a)
	}
	env := sp.Exec.Env.Plain()
	field(strconv.Itoa(len(env)))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		field(k)
		field(env[k])
	}
	for _, s := range execSockets(sp) {
		field(s)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// removePidFile forgets a plugin's pid, pid: a file recording another (written by a second
// agent in a state dir put in place of this agent's: TestAgentStoppingAfterItsStateDirWasReplacedKeepsItsPluginsPidFiles)
// is not this agent's to remove. Failing to is harmless: a stale pid file's start time no longer
// matches any process, so no agent adopts or signals through it.
func removePidFile(runDir, id string, pid int) {
	if p := readPidFile(runDir, id); p != nil && p.pid != pid {
		return
	}
	_ = os.Remove(pidFilePath(runDir, id))
}

// adoptFromPidFile returns the process an earlier agent started for the plugin, if its pid
// file names a process that still runs with the recorded start time and, when the file records
// an instance, carries it in its environment, as every process the agent starts does (and a
// daemon, which inherits it). A process with the pid and start time but not the instance is
// not the plugin, or not one the agent can prove is: the pid file was edited, or comes from
// another boot, where the same pid and start time may be another program's. It is returned as
// unproven, never to be signalled. An older agent's pid file, without an instance, is adopted
// on its pid and start time, as before. A daemon's recorded
// group is kept only while the daemon is still in it: otherwise it is stopped as any
// process, its group when it leads one, else itself alone. A watcher closes exited when it ends
// (polled: it is not this process's child), until ctx ends.
func adoptFromPidFile(ctx context.Context, runDir, id string) (p, unproven *process) {
	p = readPidFile(runDir, id)
	if p == nil || !p.alive() {
		return nil, nil
	}
	if p.instance != "" && !hasInstance(p.pid, p.instance) {
		return nil, p
	}
	if pgrp, live := procGroup(p.pid); p.pgid != 0 && (!live || pgrp != p.pgid) {
		p.pgid = 0
	}
	p.watch(ctx)
	return p, nil
}

// readPidFile reads a plugin's pid file (writePidFile; one by an older agent has no group, and
// maybe no instance: its process is its own group's, as that agent took it; nor the digest of
// its exec block), nil when there is none that reads.
func readPidFile(runDir, id string) *process {
	b, err := readStateFile(pidFilePath(runDir, id))
	if err != nil {
		return nil
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return nil
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return nil
	}
	p := &process{pid: pid, started: time.Now(), exited: make(chan struct{})}
	if p.startTick, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return nil
	}
	if len(f) > 2 && f[2] != "-" {
		p.instance = f[2]
	}
	if len(f) > 3 {
		if pgid, err := strconv.Atoi(f[3]); err == nil && pgid > 0 && pgid != pid {
			p.pgid = pgid
		}
	}
	if len(f) > 4 && f[4] != "-" {
		p.execDigest = f[4]
	}
	if len(f) > 5 && f[5] != "-" {
		p.served = servedOf(f[5])
	}
	return p
}

// pluginCoreLimit is the RLIMIT_CORE a plugin starts with: the one volctl was started with,
// before cli.KeepSecretsOutOfCoreDumps lowered its own soft limit to keep its secrets out of a
// core. nil: this process's own, unchanged.
var pluginCoreLimit *unix.Rlimit

// SetPluginCoreLimit makes the plugins the agent starts run with lim as their RLIMIT_CORE (the
// limit volctl had before lowering its own), so that a plugin's crash dumps its core as it would
// have started by hand.
func SetPluginCoreLimit(lim unix.Rlimit) { pluginCoreLimit = &lim }

// giveCoreLimit sets the process pid's RLIMIT_CORE to pluginCoreLimit: the start helper, before
// its go-ahead, so that the plugin it execs inherits it.
func giveCoreLimit(pid int) error {
	if pluginCoreLimit == nil {
		return nil
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_CORE, pluginCoreLimit, nil); err != nil {
		return fmt.Errorf("giving the plugin's process (pid %d) the core size limit volctl was started with: %w", pid, err)
	}
	return nil
}

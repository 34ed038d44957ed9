package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// cmdMemPlugin serves an in-memory CSI plugin (csitest.MemPlugin) inside the test process
// for the rest of the script, so scripts can run volctl against a plugin that lacks
// capabilities, fails or hangs:
//
//	memplugin SOCKET [node=ID] [name=NAME] [max=N] [zone=Z] [split=NODESOCKET] [nomount] [-cap=CAPABILITY]... [+cap=CAPABILITY]... [fail=RPC:Code[:N]]... [hang=RPC]... [delay=RPC:DURATION]... [calls=FILE]
//
// max=N is NodeGetInfo's max_volumes_per_node; zone=Z gives the node the accessible topology
// {zone: Z}. nomount makes a plugin that answers NodePublishVolume OK and mounts nothing at the
// target (it only makes the directory). split=NODESOCKET serves the plugin split in two, as two processes of one driver would: the
// identity and controller services on SOCKET, the identity and node services on NODESOCKET.
//
// -cap turns off a plugin, controller or node capability by its CSI name (e.g.
// -cap=CREATE_DELETE_SNAPSHOT); +cap turns one on (e.g. +cap=VOLUME_EXPANSION_OFFLINE). fail=NodeStageVolume:Internal fails every call, with :N only
// the next N. calls=FILE appends each RPC's name to FILE as it arrives, before any fault, so a
// script can wait for a hung RPC to be in flight instead of sleeping. The plugin stops when the script ends. Where bind mounts are allowed, it mounts
// for real (csitest.MemConfig.MountRoot, below $WORK/.memplugin), and whatever it still has
// mounted is unmounted when the script ends.
func cmdMemPlugin(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: memplugin SOCKET [node=ID] [name=NAME] [max=N] [zone=Z] [split=NODESOCKET] [nomount] [-cap=NAME]... [+cap=NAME]... [fail=RPC:Code[:N]]... [hang=RPC]... [delay=RPC:DURATION]... [calls=FILE]")
	}
	socket := ts.MkAbs(args[0])
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "mem-node"
	faults := csitest.NewFaults()
	var off, on []string
	nodeSocket, callsFile := "", ""
	mount := hostpathtest.CanMount() == nil
	for _, a := range args[1:] {
		key, val, _ := strings.Cut(a, "=")
		switch key {
		case "nomount":
			mount = false
		case "node":
			cfg.NodeID = val
		case "split":
			nodeSocket = ts.MkAbs(val)
		case "name":
			cfg.Name = val
		case "max":
			n, err := strconv.ParseInt(val, 10, 64)
			ts.Check(err)
			cfg.MaxVolumes = n
		case "zone":
			cfg.Topology = &spec.Topology{Segments: map[string]string{"zone": val}}
		case "-cap":
			off = append(off, val)
		case "+cap":
			on = append(on, val)
		case "fail":
			parts := strings.Split(val, ":")
			if len(parts) < 2 {
				ts.Fatalf("memplugin: fail=RPC:Code[:N], got %q", val)
			}
			code := parseCode(ts, parts[1])
			n := 0
			if len(parts) == 3 {
				var err error
				n, err = strconv.Atoi(parts[2])
				ts.Check(err)
			}
			faults.Inject(parts[0], csitest.Fault{Code: code, Times: n, Message: "injected by the test script"})
		case "hang":
			faults.Hang(val)
		case "calls":
			callsFile = ts.MkAbs(val)
		case "delay":
			rpc, d, _ := strings.Cut(val, ":")
			dur, err := time.ParseDuration(d)
			ts.Check(err)
			faults.Delay(rpc, dur)
		default:
			ts.Fatalf("memplugin: unknown option %q", a)
		}
	}
	if len(off) > 0 {
		cfg.Plugin = csi.ParsePluginCapabilities(without(cfg.Plugin.Names(), off))
		cfg.Controller = csi.ParseControllerCapabilities(without(cfg.Controller.Names(), off))
		cfg.Node = csi.ParseNodeCapabilities(without(cfg.Node.Names(), off))
	}
	for _, name := range on {
		// A name is known to exactly one of the three sets; the others keep it as unknown.
		switch one := []string{name}; {
		case len(csi.ParsePluginCapabilities(one).Unknown) == 0:
			cfg.Plugin = csi.ParsePluginCapabilities(append(cfg.Plugin.Names(), name))
		case len(csi.ParseControllerCapabilities(one).Unknown) == 0:
			cfg.Controller = csi.ParseControllerCapabilities(append(cfg.Controller.Names(), name))
		case len(csi.ParseNodeCapabilities(one).Unknown) == 0:
			cfg.Node = csi.ParseNodeCapabilities(append(cfg.Node.Names(), name))
		default:
			ts.Fatalf("memplugin: +cap=%s is not a CSI plugin, controller or node capability", name)
		}
	}
	// The plugin mounts for real where bind mounts are allowed, as volctl insists that a
	// published target is a mount point; scripts that claim where they are not skip ([!mount]).
	if mount {
		cfg.MountRoot = ts.MkAbs(filepath.Join(".memplugin", filepath.Base(socket)))
		ts.Check(os.MkdirAll(cfg.MountRoot, 0o750))
	}
	mem := csitest.NewMemPlugin(cfg)
	ts.Defer(func() {
		if err := mem.UnmountAll(); err != nil {
			ts.Logf("memplugin: %v", err)
		}
	})
	if nodeSocket == "" {
		serveMem(ts, socket, faults, callsFile, mem.Register)
		return
	}
	serveMem(ts, socket, faults, callsFile, func(s *grpc.Server) { mem.RegisterServices(s, csitest.Identity, csitest.Controller) })
	serveMem(ts, nodeSocket, faults, callsFile, func(s *grpc.Server) { mem.RegisterServices(s, csitest.Identity, csitest.Node) })
}

func serveMem(ts *testscript.TestScript, socket string, faults *csitest.Faults, callsFile string, register func(*grpc.Server)) {
	interceptors := []grpc.UnaryServerInterceptor{faults.Interceptor()}
	if callsFile != "" {
		var mu sync.Mutex
		record := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			mu.Lock()
			f, err := os.OpenFile(callsFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err == nil {
				_, _ = fmt.Fprintln(f, info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:])
				_ = f.Close()
			}
			mu.Unlock()
			return handler(ctx, req)
		}
		interceptors = append([]grpc.UnaryServerInterceptor{record}, interceptors...)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors...))
	register(srv)
	ts.Check(os.MkdirAll(filepath.Dir(socket), 0o755))
	lis, err := net.Listen("unix", socket)
	ts.Check(err)
	go func() { _ = srv.Serve(lis) }()
	ts.Defer(func() {
		srv.Stop()
		_ = os.Remove(socket)
	})
}

func without(names, off []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(off, n) })
}

func parseCode(ts *testscript.TestScript, name string) codes.Code {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if strings.EqualFold(c.String(), name) {
			return c
		}
	}
	ts.Fatalf("unknown gRPC code %q", name)
	return codes.Unknown
}

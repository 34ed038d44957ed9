// Package csisanity runs the Kubernetes CSI sanity suite (csi-test/v5 pkg/sanity) against the
// hostpath plugin, once plain and once with --enable-attach. It is a package of its own because
// Ginkgo runs one suite per test binary.
package csisanity_test

import (
	"path/filepath"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

const mib = 1 << 20

// TestSanity registers the whole sanity suite twice in one Ginkgo run, each against its own
// in-process plugin on a real unix socket.
func TestSanity(t *testing.T) {
	hostpathtest.RequireMount(t)

	plain := configFor(t, hostpath.Config{NodeID: "sanity-plain"})
	// With attach, --max-volumes is enforced by ControllerPublishVolume, so the suite's attach
	// limit case applies; 4 leaves room for the cases that publish one volume.
	attach := configFor(t, hostpath.Config{NodeID: "sanity-attach", EnableAttach: true, MaxVolumes: 4})
	attach.TestNodeVolumeAttachLimit = true

	var contexts []*sanity.TestContext
	ginkgo.Describe("hostpath", func() {
		ginkgo.Context("plain", func() { contexts = append(contexts, sanity.GinkgoTest(&plain)) })
		ginkgo.Context("enable-attach", func() { contexts = append(contexts, sanity.GinkgoTest(&attach)) })
	})
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, "hostpath CSI sanity")
	for _, sc := range contexts {
		sc.Finalize()
	}
}

// configFor starts a plugin in a fresh directory and points a sanity configuration at it. The
// target and staging paths do not exist yet (the suite creates them) but their parent does, and
// everything mounted under it is unmounted when the test ends, whatever happened.
func configFor(t *testing.T, cfg hostpath.Config) sanity.TestConfig {
	dir := hostpathtest.MountDir(t)
	cfg.Root = filepath.Join(dir, "root")
	srv := hostpathtest.Start(t, cfg)

	sc := sanity.NewTestConfig()
	sc.Address = srv.Endpoint
	sc.TargetPath = filepath.Join(dir, "target")
	sc.StagingPath = filepath.Join(dir, "staging")
	sc.TestVolumeSize = mib
	sc.TestVolumeExpandSize = 2 * mib
	return sc
}

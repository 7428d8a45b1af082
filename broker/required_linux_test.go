//go:build linux

package broker

import (
	"errors"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/agentloom/loom/sandbox"
)

// TestRequiredLayerUnavailableRefuses: a layer a call requires
// (CallSpec.RequiredLayers, or implied by an empty root) that the probe
// says the kernel cannot apply refuses the call before any helper
// starts, with DenialLayerRequired wrapping a *MissingLayer naming the
// layer. The controls: the same broker runs the same call without the
// requirement (degraded, and saying so), and a host that has the layer
// runs it with the requirement.
func TestRequiredLayerUnavailableRefuses(t *testing.T) {
	ws := t.TempDir()
	prog := staticProbe(t, ws)
	abi := newTestBroker(t, Options{}).probed().landlockABI
	shell := func() sandbox.CallSpec {
		return sandbox.CallSpec{Argv: []string{"true"}, Policy: testPolicy(ws), Env: map[string]string{"PATH": "/usr/bin:/bin"}}
	}
	for _, tc := range []struct {
		name     string
		probe    probeResult
		spec     func() sandbox.CallSpec
		required []string
		layer    string
	}{
		{"seccomp", probeResult{landlockABI: abi, seccompErr: syscall.EINVAL}, shell, []string{sandbox.LayerSeccomp}, sandbox.LayerSeccomp},
		{"landlock", probeResult{landlockErr: syscall.ENOSYS}, shell, []string{sandbox.LayerLandlock}, sandbox.LayerLandlock},
		{"namespaces", probeResult{usernsErr: syscall.EPERM, landlockABI: abi}, shell, []string{sandbox.LayerNamespaces}, sandbox.LayerNamespaces},
		{"policy_root_without_namespaces", probeResult{usernsErr: syscall.EPERM, landlockABI: abi}, shell, []string{sandbox.LayerPolicyRoot}, sandbox.LayerPolicyRoot},
		{"empty_root_without_namespaces", probeResult{usernsErr: syscall.EPERM, landlockABI: abi},
			func() sandbox.CallSpec { return emptyRootSpec(prog, false, "fds") }, nil, sandbox.LayerEmptyRoot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := withProbe(t, Options{WarmHelperIdle: -1}, tc.probe)
			var spawned atomic.Int32
			b.test.onSpawn = func(int, bool) { spawned.Add(1) }
			spec := tc.spec()
			spec.RequiredLayers = tc.required
			_, err := clearCollect(t, b, spec)
			if denialCode(err) != sandbox.DenialLayerRequired {
				t.Fatalf("got %v, want %s", err, sandbox.DenialLayerRequired)
			}
			var m *sandbox.MissingLayer
			if !errors.As(err, &m) {
				t.Fatalf("%v wraps no *MissingLayer", err)
			}
			if m.Layer != tc.layer || m.Reason == "" {
				t.Errorf("missing layer %q (%q), want %s with a reason", m.Layer, m.Reason, tc.layer)
			}
			if n := spawned.Load(); n != 0 {
				t.Errorf("%d helpers started for a refused call", n)
			}
			if tc.spec().EmptyRoot != nil {
				return // an empty root cannot be asked for without its layers
			}
			r, err := clearCollect(t, b, tc.spec())
			if err != nil {
				t.Fatalf("the control without the requirement: %v", err)
			}
			if r.enf.Applied(tc.layer) || !r.enf.Degraded {
				t.Errorf("the control's report claims %s or is not degraded: %s", tc.layer, r.enf)
			}
		})
	}
	t.Run("control_layer_available", func(t *testing.T) {
		b := newTestBroker(t, Options{WarmHelperIdle: -1})
		spec := shell()
		spec.RequiredLayers = []string{sandbox.LayerNamespaces, sandbox.LayerMounts, sandbox.LayerPolicyRoot, sandbox.LayerLandlock, sandbox.LayerSeccomp, sandbox.LayerNoNewPrivs, sandbox.LayerCapabilities}
		if r, err := clearCollect(t, b, spec); err != nil || r.settled.ExitCode != 0 {
			t.Fatalf("a host with every layer refused or failed: %v %+v", err, r.settled)
		}
		er := emptyRootSpec(prog, false, "fds")
		er.RequiredLayers = []string{sandbox.LayerLandlock, sandbox.LayerSeccomp, sandbox.LayerNoNewPrivs, sandbox.LayerRlimits}
		if r, err := clearCollect(t, b, er); err != nil || r.settled.ExitCode != 0 {
			t.Fatalf("an empty root on a host with every layer: %v %+v", err, r.settled)
		}
	})
	t.Run("helper_refuses_a_layer_it_did_not_apply", func(t *testing.T) {
		// The probe says the policy root can be built; the helper is told
		// not to (the tests' seam), so only its own check can refuse.
		b := newTestBroker(t, Options{WarmHelperIdle: -1})
		b.test.policyRootOff = true
		spec := shell()
		spec.RequiredLayers = []string{sandbox.LayerPolicyRoot}
		_, err := clearCollect(t, b, spec)
		var m *sandbox.MissingLayer
		if denialCode(err) != sandbox.DenialLayerRequired || !errors.As(err, &m) || m.Layer != sandbox.LayerPolicyRoot {
			t.Fatalf("got %v (%+v), want %s naming %s", err, m, sandbox.DenialLayerRequired, sandbox.LayerPolicyRoot)
		}
	})
}

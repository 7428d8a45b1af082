package jail

import (
	"testing"
)

func TestLandlockRightsByABI(t *testing.T) {
	for _, tc := range []struct {
		abi            int
		fs, net, scope uint64
	}{
		{0, 0, 0, 0},
		{1, llFSABI1, 0, 0},
		{2, llFSABI1 | llFSRefer, 0, 0},
		{3, llFSABI1 | llFSRefer | llFSTruncate, 0, 0},
		{4, llFSABI1 | llFSRefer | llFSTruncate, llNetBindTCP | llNetConnectTCP, 0},
		{5, llFSABI1 | llFSRefer | llFSTruncate | llFSIoctlDev, llNetBindTCP | llNetConnectTCP, 0},
		{6, llFSABI1 | llFSRefer | llFSTruncate | llFSIoctlDev, llNetBindTCP | llNetConnectTCP, llScopeAbstractUnix | llScopeSignal},
		{LandlockMaxKnownABI, llFSABI1 | llFSRefer | llFSTruncate | llFSIoctlDev, llNetBindTCP | llNetConnectTCP, llScopeAbstractUnix | llScopeSignal},
		{LandlockMaxKnownABI + 1, llFSABI1 | llFSRefer | llFSTruncate | llFSIoctlDev, llNetBindTCP | llNetConnectTCP, llScopeAbstractUnix | llScopeSignal},
	} {
		fs, net, scope := landlockRights(tc.abi)
		if fs != tc.fs || net != tc.net || scope != tc.scope {
			t.Errorf("abi %d: got %#x %#x %#x, want %#x %#x %#x", tc.abi, fs, net, scope, tc.fs, tc.net, tc.scope)
		}
	}
}

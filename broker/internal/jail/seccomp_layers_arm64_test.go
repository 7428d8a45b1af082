//go:build linux

package jail

// seccompArchModeArgs is empty: arm64 has only the *at forms.
var seccompArchModeArgs = map[uintptr][2]int{}

//go:build linux && !amd64 && !arm64

package broker

const (
	seccompArchSupported = false
	seccompAuditArch     = 0
	seccompX32Bit        = 0
)

var seccompDenied []uintptr

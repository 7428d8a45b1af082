package broker

import "runtime"

func lockAndRun(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f()
}

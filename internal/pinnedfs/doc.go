// Package pinnedfs is how harness code touches a tree a jailed command
// can race: every access goes through an *os.Root the caller opened
// once (a pinned directory descriptor), so no path component, swapped
// for a link while the harness works, can lead outside it.
//
// It owns three operations: opening a regular file for reading without
// blocking, reading one whole under a size bound, and replacing one by
// staging beside it and renaming. It does not own path policy (which
// roots a tool may read, protected entries): callers decide that first.
//
// Invariants:
//   - Nothing is opened outside the root: os.Root refuses links and ".."
//     that leave it, component by component, race-free.
//   - No open blocks: files are opened O_NONBLOCK and anything but a
//     regular file (a FIFO, a device, a socket, a directory) is refused
//     with ErrNotRegular before a byte is read.
//   - A write never leaves a file half-written: the bytes are staged in
//     a temporary file in the target's directory, synced and renamed over
//     the target, and the directory is synced.
package pinnedfs

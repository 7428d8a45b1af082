// Package toolchain describes what a language's tools need to work inside
// the jail: the variables they read, the host directories they read, and
// the cache directories they write.
//
// It owns the detection of the toolchains on the host and one Profile per
// language: Go (a build cache and a module cache of Loom's own, fed
// without network from the host's module download cache), npm and pip.
// A plane applies the profiles it detects to every command of a session,
// so builds work offline and warm and their caches never land in the
// workspace.
//
// It refuses nothing itself; the plane refuses a profile whose cache lies
// in the workspace or one of its stores, or holds one.
//
// Go builds are -trimpath, so a second workspace reuses what the first
// built: source paths in binaries, panics and runtime.Caller are module
// paths, not the workspace's. A test that finds its testdata through
// runtime.Caller's file fails so; such a command sets GOFLAGS= (and
// builds without the shared cache's reuse).
//
// Guarantees:
//   - Every cache a profile names lies under the cache directory it was
//     given (by default <user cache>/loom/toolchains), shared by the
//     sessions of one host user and never by the host's own toolchains:
//     the host's GOCACHE and module cache are only ever read.
//   - No GOPROXY entry carrying credentials reaches a profile; Notes say
//     what was left out.
//   - Detection runs the host's own go command only with GOTOOLCHAIN=local,
//     GOWORK=off and no GOFLAGS, from the root directory, so nothing in a
//     workspace can choose what it runs.
//   - Detection is bounded: at most probeTimeout per command and
//     maxProbeBytes of its output.
package toolchain

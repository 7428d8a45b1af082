// Package adaptertest holds what the tests of the framework adapters
// (adapter/loomanthropic, loomeino, loomgenkit, loomopenai) share: probe
// tools that record whether the plane's fence kept an Exclusive call
// alone while a framework ran a turn's calls in parallel, and a plane
// over a fresh workspace that closes with the test.
//
// It imports only the core module and the standard library, so the
// adapters' frameworks stay out of the core's go.mod.
package adaptertest

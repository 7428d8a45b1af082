// Package adaptertest holds what the tests of the framework adapters
// (adapter/loomanthropic, loomeino, loomgenkit, loomopenai) share:
//
//   - Probes, tools that record whether the plane's fence kept an
//     Exclusive call alone while a framework ran a turn's calls in
//     parallel, waiting on the fake clock of a synctest bubble;
//   - NewPlane, a plane over a fresh workspace that closes with the
//     test, and Pixel, a small PNG to put in it;
//   - Recorder, a tool that records where each call ran;
//   - TurnLimitCases, the cases of a Runner's turn-limit test and their
//     check.
//
// The frameworks' scripted models stay with their adapters. The package
// imports only the core module and the standard library, so no
// framework enters the core's go.mod.
package adaptertest

// Package errno renders errors for reports: a kernel errno as its
// symbolic name (EPERM), so a model and a reader see the same word the
// man pages use. It owns nothing else.
package errno

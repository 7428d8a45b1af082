package codemode

import (
	"crypto/sha256"
	"encoding/hex"
)

// STAND-IN, deleted at merge: the vet helper's seam.go/vet.go declare
// the real Program and allowlist.go the real StdPackages. The build
// helper's code uses only Program.Source, Program.Imports,
// Program.Digest and StdPackages.

// Program is a vetted program (stand-in; see vet.go at merge).
type Program struct {
	Source  []byte
	Imports []string
}

// Digest is the hex SHA-256 of the program's source.
func (p *Program) Digest() string {
	sum := sha256.Sum256(p.Source)
	return hex.EncodeToString(sum[:])
}

// StdPackages is the audited standard-library allowlist (stand-in; see
// allowlist.go at merge): a fresh copy on every call.
func StdPackages() []string {
	return []string{
		"bufio", "bytes", "context", "errors", "fmt", "io", "maps", "math",
		"slices", "sort", "strconv", "strings", "sync", "time", "unicode/utf8",
	}
}

// ProgramFileName is the file name the harness gives a program
// (stand-in; see vet.go at merge).
const ProgramFileName = "main.go"

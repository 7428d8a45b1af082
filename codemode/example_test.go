package codemode_test

import (
	"errors"
	"fmt"

	"github.com/agentloom/loom/codemode"
)

// Vet refuses, in one pass, everything that would let a program act
// outside its capability channel, with the rule and position of each.
func ExampleVet() {
	src := []byte(`package main

import (
	"fmt"
	"os"
)

//go:linkname now time.now
func main() { fmt.Println(os.Args) }
`)
	_, err := codemode.Vet(src, codemode.WorkspaceSeam())
	var ve *codemode.VetError
	if errors.As(err, &ve) {
		for _, v := range ve.Violations {
			fmt.Printf("%d:%d %s %s\n", v.Line, v.Column, v.Rule, v.Construct)
		}
	}
	// Output:
	// 5:2 import_not_allowed import "os"
	// 8:1 directive_comment //go:linkname now time.now
}

// A capability that writes, runs a command or reaches a job is
// authorized by a tool the strand must hold; reads are open.
func ExampleAuthorizingTool() {
	for _, c := range []string{"proc.run", "fs.write", "fs.read"} {
		name, gated := codemode.AuthorizingTool(c)
		fmt.Println(c, name, gated)
	}
	// Output:
	// proc.run bash true
	// fs.write fs_write true
	// fs.read  false
}

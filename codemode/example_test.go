package codemode_test

import (
	"errors"
	"fmt"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/tool"
)

// Vet refuses, in one pass, everything that would let a program act
// outside its capability channel, with the rule and position of each.
// Vetting parses only: it needs neither a toolchain nor a jail.
func ExampleEngine_Vet() {
	b := broker.New(broker.Options{})
	defer b.Close()
	reg, err := tool.NewRegistry(tool.FileTools()...)
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := codemode.New(codemode.Options{Registry: reg, Broker: b})
	if err != nil {
		fmt.Println(err)
		return
	}
	src := []byte(`package main

import (
	"fmt"
	"os"
)

//go:linkname now time.now
func main() { fmt.Println(os.Args) }
`)
	_, err = e.Vet(src)
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

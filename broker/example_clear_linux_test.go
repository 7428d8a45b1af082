package broker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
)

// Clear runs one command in the jail: the workspace writable, the system
// directories readable, network off. Output streams through a bounded
// channel; the settlement and the enforcement report say what happened.
func ExampleBroker_Clear() {
	ws, _ := os.MkdirTemp("", "loom-example-")
	defer os.RemoveAll(ws)
	b := broker.New(broker.Options{})
	defer b.Close() // discards the helper kept warm for a next command
	ex, err := b.Clear(context.Background(), sandbox.CallSpec{
		Key:  sandbox.StepKey{OpID: "op1", StepID: "step1"},
		Argv: []string{"sh", "-c", "echo hello from the jail; echo no > /etc/loom-example"},
		Dir:  ws,
		Env:  map[string]string{"PATH": "/usr/bin:/bin", "SECRET": "never passed"},
		Policy: sandbox.Policy{
			ReadableRoots: sandbox.SystemReadableRoots(),
			WritableRoots: []string{ws},
			Protected:     broker.DefaultProtected(ws),
			EnvAllow:      []string{"PATH"},
		},
	})
	if err != nil {
		// A refusal holds a *Denial: its Explain is the sentence for a model.
		var d *sandbox.Denial
		if errors.As(err, &d) {
			fmt.Println(d.Explain())
		}
		return
	}
	var out strings.Builder
	for o := range ex.Output() {
		if o.Stream == sandbox.Stdout {
			out.Write(o.Bytes)
		}
	}
	s := ex.Wait()
	fmt.Print(out.String())
	fmt.Println("exit code:", s.ExitCode)
	fmt.Println("landlock applied:", ex.Enforcement.Applied(sandbox.LayerLandlock))
	_, err = os.Stat(filepath.Join("/etc", "loom-example"))
	fmt.Println("write to /etc landed:", err == nil)
	// Output:
	// hello from the jail
	// exit code: 2
	// landlock applied: true
	// write to /etc landed: false
}

// Available reports which confinement layers this host offers before any
// command runs; a host can log it at start-up.
func ExampleBroker_Available() {
	b := broker.New(broker.Options{})
	defer b.Close() // discards the helper kept warm for a next command
	fmt.Println(strings.HasPrefix(b.Available().String(), "sandbox: "))
	// Output: true
}

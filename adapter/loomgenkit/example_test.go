package loomgenkit_test

import (
	"context"
	"fmt"
	"log"

	"github.com/firebase/genkit/go/genkit"

	"github.com/agentloom/loom/adapter/loomgenkit"
	"github.com/agentloom/loom/plane"
)

// An agent over the whole plane in Genkit's tool loop: the Agent is also
// the plane's Runner, so agent_spawn runs each child as its own Generate.
// The model comes from a plugin (genkit.WithPlugins) or DefineModel.
func Example() {
	ctx := context.Background()
	a := &loomgenkit.Agent{Genkit: genkit.Init(ctx), Model: "googleai/gemini-2.5-flash"}
	p, err := plane.New(plane.Config{Workspace: ".", Runner: a.Runner()})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	a.Plane = p
	answer, err := a.Run(ctx, p.CallFor(p.Call.Strand, "op-1"), "You are a careful engineer.", "add a test for Parse")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(answer)
}

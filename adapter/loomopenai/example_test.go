package loomopenai_test

import (
	"context"
	"fmt"
	"log"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentloom/loom/adapter/loomopenai"
	"github.com/agentloom/loom/plane"
)

// An agent over the whole plane: the Agent is also the plane's Runner,
// so agent_spawn runs each child as its own Responses loop.
func Example() {
	a := &loomopenai.Agent{
		Client: openai.NewClient(option.WithAPIKey("sk-...")),
		Model:  "gpt-5",
	}
	p, err := plane.New(plane.Config{Workspace: ".", Runner: a.Runner()})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	a.Plane = p
	answer, err := a.Run(context.Background(), p.CallFor(p.Call.Strand, "op-1"), "You are a careful engineer.", "add a test for Parse", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(answer)
}

// Command agent is a real agent host: a model loop over the Anthropic
// Messages API driving Loom's whole tool plane (plane) in a
// workspace. The model's tool calls of one turn run as one batch with
// their coordinates (Concurrent tools side by side, Exclusive ones
// alone), results and images go back, the conversation is indexed in the
// history as it goes (history_search finds it), context_remaining
// answers from the token usage the API reports (the loop is the plane's
// agent.Gauge), and sub-agents run the same loop with their own tools.
// Every run starts with the notes index (history.IndexNotes) in its
// system prompt, and a sub-agent continued with agent_send goes on from
// its whole transcript.
//
//	ANTHROPIC_API_KEY=... go run ./examples/agent "add a test for Parse"
//
// Flags: -workspace (default: the current directory), -provider
// (anthropic or openai; default: the one whose API key is set, so
// OPENAI_API_KEY=... runs the OpenAI Responses API), -model, -max-steps,
// -quiet (no per-call log on standard error). Commands run in the
// broker's kernel jail: they write only the workspace and a session
// scratch directory, never its git hooks or config, and have no network.
// The provider is one file (anthropic.go); another provider is another
// file implementing Provider.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentloom/loom/plane"
)

// APIKeyEnv names the variable holding the Anthropic API key.
const APIKeyEnv = "ANTHROPIC_API_KEY"

// errNoKey is the refusal of a run without an API key.
var errNoKey = errors.New(APIKeyEnv + " is not set: export your Anthropic API key (https://console.anthropic.com) and run again")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := cli(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is one run: the task and where and how to run it.
type config struct {
	task      string
	provider  string // ProviderAnthropic or ProviderOpenAI
	workspace string
	model     string
	maxSteps  int
	apiKey    string
	// baseURL replaces the API's address when set (tests).
	baseURL string
	// plane is the plane's configuration, Workspace aside.
	plane plane.Config
	log   io.Writer
}

// cli parses args, runs the task and answers the exit status: 0 when the
// model answered, 1 when the run failed, 2 for a usage error.
func cli(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := config{log: stderr}
	fs.StringVar(&cfg.workspace, "workspace", ".", "the directory the tools work in")
	fs.StringVar(&cfg.provider, "provider", "", "the model API, anthropic or openai (default: the one whose API key is set)")
	fs.StringVar(&cfg.model, "model", "", "the model (default: "+string(DefaultModel)+" or "+DefaultOpenAIModel+")")
	fs.IntVar(&cfg.maxSteps, "max-steps", DefaultMaxSteps, "the most model calls of one run")
	quiet := fs.Bool("quiet", false, "do not log each tool call on standard error")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s=... agent [flags] \"task\"\n", APIKeyEnv)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg.task = strings.TrimSpace(strings.Join(fs.Args(), " "))
	if cfg.task == "" {
		fs.Usage()
		return 2
	}
	if *quiet {
		cfg.log = nil
	}
	cfg.provider, cfg.apiKey = pickProvider(cfg.provider, getenv)
	answer, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "agent:", err)
		return 1
	}
	fmt.Fprintln(stdout, answer)
	return 0
}

// run assembles the plane over the workspace, runs the task on the main
// strand and returns the model's final answer.
func run(ctx context.Context, cfg config) (string, error) {
	provider, err := newProvider(cfg)
	if err != nil {
		return "", err
	}
	loop := &Loop{Provider: provider, MaxSteps: cfg.maxSteps, Log: cfg.log}
	pc := cfg.plane
	pc.Workspace = cfg.workspace
	pc.Runner = loop.Runner() // first called once the model spawns, after New
	pc.Gauge = loop           // context_remaining answers from the usage the loop receives
	if pc.Families == 0 {
		pc.Families = plane.AllFamilies | plane.FamilyHost
	}
	p, err := plane.New(pc)
	if err != nil {
		return "", err
	}
	defer p.Close()
	loop.Plane = p
	c := p.CallFor(p.Call.Strand, "op-1")
	return loop.Run(ctx, c, systemPrompt(p)+loop.notesIndex(ctx), cfg.task, nil, nil)
}

// systemPrompt tells the main strand where it works and lists the tool
// index.
func systemPrompt(p *plane.Plane) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s, an agent working in the workspace %s. Work with the tools below; every command runs in a jail. "+
		"When the task is done, answer with a short report and call no tool.\n\nTools:\n", p.Call.Strand, p.Call.Workspace)
	for _, s := range p.Registry.Snippets() {
		fmt.Fprintf(&b, "- %s: %s\n", s.Name, s.Line)
	}
	return b.String()
}

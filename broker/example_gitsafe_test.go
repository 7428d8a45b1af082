package broker_test

import (
	"fmt"
	"os"
	"os/exec"
	"slices"

	"github.com/agentloom/loom/broker"
)

// A host that runs its own git on a workspace an agent touched passes
// SafeGitEnvFor's entries in git's environment (and --no-ext-diff to
// diff-showing commands), so nothing the repository's configuration
// names runs.
func ExampleSafeGitEnvFor() {
	ws, err := os.MkdirTemp("", "ws")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(ws)
	env, err := broker.SafeGitEnvFor(ws)
	if err != nil {
		fmt.Println(err)
		return
	}
	cmd := exec.Command("git", "-C", ws, "status", "--porcelain")
	cmd.Env = append(os.Environ(), env...)
	_ = cmd.Run() // not a repository here; a real host checks the error
	fmt.Println(slices.Contains(env, "GIT_CONFIG_KEY_0=core.fsmonitor"), slices.Contains(env, "GIT_CONFIG_VALUE_0=false"))
	// Output: true true
}

package loom_test

import (
	"go/build"
	"os"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agentloom/loom"

// moduleDeps returns every package of the module that pkg imports,
// directly or not, for the host's platform (tests excluded).
func moduleDeps(t *testing.T, pkg string) []string {
	t.Helper()
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] || !strings.HasPrefix(path, module) {
			return
		}
		seen[path] = true
		p, err := build.Default.Import(path, ".", 0)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		for _, imp := range p.Imports {
			walk(imp)
		}
	}
	walk(pkg)
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestVocabularyLinksNoJail: a host that imports the tool record, the
// file tools and the seams' vocabularies links no jail. Neither broker
// (whose init can turn the process into the jail's helper) nor the
// helper's own code is among their dependencies. The control: the plane,
// which assembles the reference jail, does link it.
func TestVocabularyLinksNoJail(t *testing.T) {
	jail := func(p string) bool { return p == module+"/broker" || strings.HasPrefix(p, module+"/broker/") }
	for _, pkg := range []string{"tool", "hashline", "blob", "sandbox", "history", "agent", "todo", "mcpserve", "schedule", "schedule/sqlite", "schedule/postgres", "history/postgres"} {
		if deps := moduleDeps(t, module+"/"+pkg); slices.ContainsFunc(deps, jail) {
			t.Errorf("%s links the jail: %v", pkg, slices.DeleteFunc(deps, func(p string) bool { return !jail(p) }))
		}
	}
	if !slices.ContainsFunc(moduleDeps(t, module+"/plane"), jail) {
		t.Error("the control failed: plane does not link broker, so this test cannot tell")
	}
}

// TestCoreRequiresNoFramework: the frameworks the adapters translate to
// stay out of what a host importing the core gets in its go.sum. The
// control is an adapter's own go.mod, which names its framework.
func TestCoreRequiresNoFramework(t *testing.T) {
	frameworks := []string{"github.com/cloudwego/eino", "github.com/firebase/genkit", "github.com/openai/openai-go", "github.com/anthropics/anthropic-sdk-go"}
	requires := func(file string) []string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var found []string
		for _, f := range frameworks {
			if strings.Contains(string(b), f) {
				found = append(found, f)
			}
		}
		return found
	}
	if got := requires("go.mod"); len(got) > 0 {
		t.Errorf("the core module requires %v", got)
	}
	if got := requires("adapter/loomeino/go.mod"); !slices.Contains(got, "github.com/cloudwego/eino") {
		t.Errorf("control: the eino adapter's go.mod names %v", got)
	}
}

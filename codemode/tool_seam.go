package codemode

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
	"github.com/google/jsonschema-go/jsonschema"
)

// seamArgs are code_mode's arguments on an Engine serving several seams.
type seamArgs struct {
	codeModeArgs
	Seam seamName `json:"seam,omitempty"`
}

type seamName string

// seamSchema is the seam argument's schema: one of the served seams'
// names, the default named.
func (e *Engine) seamSchema() tool.TypeSchema {
	var names []string
	var enum []any
	for _, sm := range e.opts.Seams {
		names = append(names, sm.Name)
		enum = append(enum, sm.Name)
	}
	s := &jsonschema.Schema{Type: "string", Enum: enum, Description: names[0] + " (the default), " + strings.Join(names[1:], ", ")}
	return tool.TypeSchema{Type: reflect.TypeFor[seamName](), Schema: s}
}

func (e *Engine) runSeamTool(ctx context.Context, c *tool.Call, a seamArgs) tool.Outcome {
	if _, err := e.seamNamed(string(a.Seam)); err != nil {
		return render(nil, err, nil, 0)
	}
	args := a.codeModeArgs
	args.seam = string(a.Seam)
	return e.runTool(ctx, c, args)
}

// unionSeam is every package some served seam offers, each once, in the
// seams' order: what the description renders.
func (e *Engine) unionSeam() Seam {
	var pkgs []string
	for _, s := range e.opts.Seams {
		for _, p := range s.Packages {
			if !slices.Contains(pkgs, p) {
				pkgs = append(pkgs, p)
			}
		}
	}
	return Seam{Name: "served", Packages: pkgs}
}

// importsText is the description's imports line: with one seam its
// packages; with several, those every seam shares once, then what each
// seam adds.
func (e *Engine) importsText(std []string) string {
	stdText := "the standard packages " + groupedPaths(std)
	seams := e.seamsLessMCP()
	if len(seams) == 1 {
		return "Imports: " + strings.Join(seams[0].Packages, ", ") + ", and " + stdText + ".\n"
	}
	var shared []string
	for _, p := range seams[0].Packages {
		if !slices.ContainsFunc(seams, func(s Seam) bool { return !slices.Contains(s.Packages, p) }) {
			shared = append(shared, p)
		}
	}
	var b strings.Builder
	b.WriteString("Imports on every seam: " + strings.Join(append(slices.Clone(shared), stdText), ", ") + ". ")
	for i, s := range seams {
		var extra []string
		for _, p := range s.Packages {
			if !slices.Contains(shared, p) {
				extra = append(extra, p)
			}
		}
		def := ""
		if i == 0 {
			def = " (the default)"
		}
		fmt.Fprintf(&b, "Seam %q%s adds %s. ", s.Name, def, strings.Join(extra, ", "))
	}
	b.WriteString("Pick one with seam.\n")
	return b.String()
}

// seamsLessMCP is the served seams less the MCP packages, which the
// description lists apart (mcpSet.description), with their tool counts.
func (e *Engine) seamsLessMCP() []Seam {
	out := e.Seams()
	for i := range out {
		out[i].Packages = slices.DeleteFunc(out[i].Packages, isMCPPath)
	}
	return out
}

// agentBoundsText states the ceilings of cap/strand and cap/notes when a
// served seam offers them, and nothing otherwise.
func (e *Engine) agentBoundsText() string {
	union := e.unionSeam().Packages
	notes := fmt.Sprintf("%d note writes (each at most %d MiB) and %d note reads", maxNoteWrites, agent.MaxProgramNoteBytes>>20, maxNoteReads)
	switch {
	case slices.Contains(union, "cap/strand"):
		spawns := (&admissions{spawnCeiling: e.opts.SpawnCeiling}).ceiling(admitSpawn)
		return fmt.Sprintf("Per run: %d spawns (a Map item is one; %d per Map), %d sends, %s; a wait at most %d s. Each strand and notes call needs its agent_ tool. ", spawns, maxMapItems, maxSends, notes, int(strandWaitBound(e.opts.Agency).Seconds()))
	case slices.Contains(union, "cap/notes"):
		return "Per run: " + notes + "; notes calls need agent_note or agent_notes. "
	}
	return ""
}

// groupedPaths writes import paths compactly, in their order: the paths
// under one first element after it, braced ("encoding encoding/{csv,json}"
// for encoding, encoding/csv and encoding/json), every path spelled out
// exactly once.
func groupedPaths(paths []string) string {
	var out []string
	for i := 0; i < len(paths); {
		root, _, _ := strings.Cut(paths[i], "/")
		var under []string
		j := i
		for ; j < len(paths); j++ {
			r, rest, nested := strings.Cut(paths[j], "/")
			if r != root {
				break
			}
			if !nested {
				out = append(out, r)
				continue
			}
			under = append(under, rest)
		}
		switch len(under) {
		case 0:
		case 1:
			out = append(out, root+"/"+under[0])
		default:
			out = append(out, root+"/{"+strings.Join(under, ",")+"}")
		}
		i = j
	}
	return strings.Join(out, " ")
}

// examplesText is the description's examples: with one seam, the
// workspace recipes its packages can run; on a host that also serves the
// orchestration seam, its fan-out alone (the workspace API needs no second
// illustration, and the surface bound has no room for one).
func (e *Engine) examplesText() string {
	union := e.unionSeam().Packages
	switch {
	case slices.Contains(union, "cap/strand"):
		return "Example on seam " + OrchestrationSeamName + ":\n" + RecipeFanOut
	case !slices.Contains(union, "cap/fs"):
		return ""
	case slices.Contains(union, "cap/proc"):
		return "Examples:\n" + recipeSurvey + "\n" + recipeCheck
	}
	return "Example:\n" + recipeSurvey
}

// commandsClause says what cap/proc and cap/job need, when a served seam
// offers either.
func (e *Engine) commandsClause() string {
	union := e.unionSeam().Packages
	if slices.Contains(union, "cap/proc") || slices.Contains(union, "cap/job") {
		return ", commands and jobs bash"
	}
	return ""
}

// boundsText states the bounds of the offered packages that have any.
func (e *Engine) boundsText() string {
	union := e.unionSeam().Packages
	var parts []string
	if slices.Contains(union, "cap/kv") {
		parts = append(parts, fmt.Sprintf("kv %d keys and %d MiB per strand, kept for the session", maxKVKeys, maxKVBytes>>20))
	}
	if slices.Contains(union, "cap/report") {
		parts = append(parts, fmt.Sprintf("report.emit %d MiB each, %d per run", maxEmitBytes>>20, maxEmits))
	}
	if slices.Contains(union, "cap/proc") {
		parts = append(parts, fmt.Sprintf("proc.run %d at once, %d MiB of output per stream", maxProcsInFlight, maxProcOutputBytes>>20))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Bounds: " + strings.Join(parts, "; ") + ". "
}

package tool

import (
	"context"
	"fmt"
	"path/filepath"
)

type workdirArgs struct {
	Path string `json:"path,omitempty"`
}

// WorkdirDetails is the Details of working_directory.
type WorkdirDetails struct {
	Cwd       string `json:"cwd"`
	Workspace string `json:"workspace"`
	TempDir   string `json:"tmpdir"`
	Changed   bool   `json:"changed"`
}

// WorkdirTool returns working_directory: report the shell's current
// directory, the workspace and TMPDIR, or change the current directory
// later bash calls start in. It is ReplayNever because a relative change
// repeated after it landed would land somewhere else.
func WorkdirTool() Tool {
	return Typed(Tool{
		Name:  "working_directory",
		Title: "Change the shell directory",
		Description: "Show where bash starts, the workspace root and TMPDIR (scratch kept between calls), or move the start " +
			"with `path` (relative to it) to an existing directory under the workspace or a writable root. File tools " +
			"resolve relative paths from the workspace root, not from here.",
		PromptSnippet: "working_directory: show or change where bash commands start",
		Replay:        ReplayNever,
		Mode:          Exclusive,
	}, runWorkdir)
}

func runWorkdir(_ context.Context, c *Call, a workdirArgs) Outcome {
	changed := false
	if a.Path != "" {
		if c.Shell == nil {
			return Fail(CodeNoShellDirectory, "this host keeps no shell directory, so it cannot be changed; pass cwd to each bash call instead")
		}
		base := c.Dir()
		p := a.Path
		if !filepath.IsAbs(p) {
			// A relative change is relative to the current shell directory,
			// as cd is.
			p = filepath.Join(base, p)
		}
		// The predicate bash applies to its cwd: only a directory bash
		// could run in is selected, so the refusal comes now, not at the
		// next command.
		dir, err := c.ResolveShellDir(p)
		if err != nil {
			o := pathFailure(err)
			o.Text += fmt.Sprintf("; the shell directory is unchanged (%s)", c.displayPath(base))
			return o
		}
		c.Shell.SetDir(dir)
		changed = true
	}
	d := WorkdirDetails{Cwd: c.Dir(), Workspace: c.Workspace, TempDir: c.Scratch(), Changed: changed}
	text := fmt.Sprintf("cwd: %s\nworkspace: %s\nTMPDIR: %s\n", d.Cwd, d.Workspace, d.TempDir)
	if changed {
		text = "changed the shell directory\n" + text
	}
	return Outcome{Text: text, Details: d}
}

package lsp

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
)

// Server configures one language server: a name, the command that runs
// it on standard input and output, and the files it owns. Nothing in it
// is particular to one language.
type Server struct {
	// Name names the server to people and in answers ("gopls"); unique
	// within a Plane.
	Name string
	// Command is the server's argument vector. Command[0] is the
	// executable: an absolute path, or a name looked up on the PATH of the
	// environment the servers get (Options.Env). The executable file alone,
	// its links resolved, is made readable in the server's jail when no
	// system root already covers it, never the directory it is in.
	Command []string
	// Files are the files the server owns: diagnosed after a write, and
	// watched for changes on disk.
	Files []FilePattern
	// Watch are further patterns (on a file's base name, as in
	// FilePattern) whose changes on disk the server is told of, although it
	// diagnoses none of them ("go.sum").
	Watch []string
	// InitializationOptions is sent as initialize's initializationOptions;
	// nil sends none.
	InitializationOptions json.RawMessage
	// ReadOnly are host directories the server reads besides the system
	// roots and its executable: a server run by an interpreter needs the
	// interpreter and its packages (pyright-langserver: node's install and
	// the npm package directory). Absolute paths; they are system roots of
	// its jail, never writable and never read by the file tools.
	ReadOnly []string
}

// FilePattern is a set of files one server owns.
type FilePattern struct {
	// Pattern is a path.Match pattern on a file's base name: "*.go",
	// "go.mod".
	Pattern string
	// LanguageID is the language identifier the server is told a file of
	// the pattern is in ("go", "go.mod", "python").
	LanguageID string
}

// owns returns the language identifier of the first pattern of s that
// matches the base name of file, and whether one did.
func (s *Server) owns(file string) (string, bool) {
	base := filepath.Base(file)
	for _, f := range s.Files {
		if ok, _ := path.Match(f.Pattern, base); ok {
			return f.LanguageID, true
		}
	}
	return "", false
}

// watches reports whether the server is told of changes to file: it owns
// it, or a Watch pattern matches its base name.
func (s *Server) watches(file string) bool {
	if _, ok := s.owns(file); ok {
		return true
	}
	base := filepath.Base(file)
	for _, p := range s.Watch {
		if ok, _ := path.Match(p, base); ok {
			return true
		}
	}
	return false
}

// validate refuses a configuration that cannot run.
func (s *Server) validate() error {
	bad := func(why string) error {
		return &Error{Code: CodeInvalidConfig, Server: s.Name, Reason: why}
	}
	switch {
	case s.Name == "":
		return bad("a server needs a name")
	case len(s.Command) == 0 || s.Command[0] == "":
		return bad("a server needs a command")
	case len(s.Files) == 0:
		return bad("a server needs at least one file pattern")
	case len(s.InitializationOptions) > 0 && !json.Valid(s.InitializationOptions):
		return bad("its initialization options are not valid JSON")
	}
	for _, f := range s.Files {
		if _, err := path.Match(f.Pattern, ""); err != nil || f.Pattern == "" {
			return bad(fmt.Sprintf("pattern %q is not a path.Match pattern", f.Pattern))
		}
		if f.LanguageID == "" {
			return bad(fmt.Sprintf("pattern %q has no language identifier", f.Pattern))
		}
	}
	for _, r := range s.ReadOnly {
		if !filepath.IsAbs(r) {
			return bad(fmt.Sprintf("read-only directory %q is not an absolute path", r))
		}
	}
	for _, p := range s.Watch {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return bad(fmt.Sprintf("watch pattern %q is not a path.Match pattern", p))
		}
	}
	return nil
}

// GoplsName is the name of the gopls server Detect returns.
const GoplsName = "gopls"

// goplsOptions are the initialization options Gopls sends. Pull
// diagnostics on: a textDocument/diagnostic request after a change is
// answered with the type-check and analysis diagnostics of exactly what
// gopls holds then, a settle signal no race can fake (gopls may publish a
// version's diagnostics early, from work on an earlier change). Files it
// answers no pull for (go.mod, go.work) settle on their versioned
// publication, computed in one pass (no delay) so that the first is
// complete.
const goplsOptions = `{"pullDiagnostics":true,"diagnosticsDelay":"0s"}`

// Gopls returns the configuration of gopls at bin: Go files, go.mod and
// go.work owned, go.sum and go.work.sum watched.
func Gopls(bin string) Server {
	return Server{
		Name:    GoplsName,
		Command: []string{bin},
		Files: []FilePattern{
			{Pattern: "*.go", LanguageID: "go"},
			{Pattern: "go.mod", LanguageID: "go.mod"},
			{Pattern: "go.work", LanguageID: "go.work"},
		},
		Watch:                 []string{"go.sum", "go.work.sum"},
		InitializationOptions: json.RawMessage(goplsOptions),
	}
}

// Detect returns the servers found on this host: gopls when it is on
// pathList (a PATH value: the commands' own), else in the host's $GOBIN,
// else in the bin directory of each $GOPATH entry (by default $HOME/go).
// A server that is absent has no entry; Detect never fails, and never
// runs anything.
func Detect(pathList string) []Server {
	if bin := findGopls(pathList); bin != "" {
		return []Server{Gopls(bin)}
	}
	return nil
}

// findGopls returns gopls's path, links resolved, or "".
func findGopls(pathList string) string {
	dirs := filepath.SplitList(pathList)
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(home, "go")
		}
	}
	for _, g := range filepath.SplitList(gopath) {
		if g != "" {
			dirs = append(dirs, filepath.Join(g, "bin"))
		}
	}
	return lookPath("gopls", dirs)
}

// lookPath finds the executable name in the first of dirs (absolute ones
// only) that holds it, and returns it with links resolved, or "".
func lookPath(name string, dirs []string) string {
	for _, dir := range slices.Compact(dirs) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		f := filepath.Join(dir, name)
		r, err := filepath.EvalSymlinks(f)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(r); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return r
		}
	}
	return ""
}

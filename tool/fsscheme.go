package tool

import (
	"fmt"
	"strings"
)

// schemeOf answers the namespace name of a "<name>://..." path (a name
// without '/'), the paths fs_read hands to a Scheme.
func schemeOf(path string) (string, bool) {
	name, _, ok := strings.Cut(path, "://")
	if !ok || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// refuseSchemeWrite refuses, with CodeReadOnlyNamespace, a write by tool
// to a scheme:// path: every Scheme is a read-only view, and such a path
// would otherwise be taken as a relative file name ("note:/x").
func refuseSchemeWrite(tool, path string) (Outcome, bool) {
	name, ok := schemeOf(path)
	if !ok {
		return Outcome{}, false
	}
	how := "write a file by its workspace path"
	if name == "note" {
		how = "write a note with agent_note (or a code_mode program's notes.Put)"
	}
	return Fail(CodeReadOnlyNamespace, fmt.Sprintf("%s is in the %s namespace, a read-only view fs_read serves; %s cannot change it and nothing was written: %s",
		quoted(path), quoted(name+"://"), tool, how)), true
}

package lsp

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/sandbox"
)

// maxURIBytes bounds a URI a server sends that is looked at all.
const maxURIBytes = 4096

// fileURI is the file URI of the absolute path p.
func fileURI(p string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
}

// pathIn returns the absolute, cleaned path a server's URI names, when it
// is a file URI (no host but localhost, no query or fragment, no NUL)
// naming a path under the workspace ws. A URI outside ws, or of any
// other form, is refused: what a server names is never trusted to stay
// where it was asked about.
func pathIn(uri, ws string) (string, bool) {
	if len(uri) > maxURIBytes || strings.ContainsRune(uri, 0) {
		return "", false
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Opaque != "" || u.User != nil ||
		(u.Host != "" && u.Host != "localhost") || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	p := u.Path
	if p == "" || strings.ContainsRune(p, 0) || !filepath.IsAbs(p) {
		return "", false
	}
	p = filepath.Clean(p)
	if !sandbox.Covers(ws, p) {
		return "", false
	}
	return p, true
}

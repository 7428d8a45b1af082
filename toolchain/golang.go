package toolchain

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// probeTimeout bounds one run of a host tool during detection.
const probeTimeout = 10 * time.Second

// maxProbeBytes bounds what detection reads of a host tool's output.
const maxProbeBytes = 64 << 10

// goEnv is what the Go profile reads of the host's go command.
type goEnv struct {
	GOMODCACHE string
	GOROOT     string
	GOPROXY    string
	// The host's module privacy settings, passed on as they are: patterns,
	// not secrets, that keep private module paths off the public proxy
	// and checksum database once a command has the network.
	GOPRIVATE, GONOPROXY, GONOSUMDB, GOINSECURE string
}

// privacyVars are the goEnv fields passed on to commands unchanged.
var privacyVars = []string{"GOPRIVATE", "GONOPROXY", "GONOSUMDB", "GOINSECURE"}

// goProfile is the Go profile: a persistent build cache and a module
// cache of Loom's own under o.CacheDir, filled from the host's module
// download cache (read-only, served as a file proxy) before the host's
// own proxies, which only a command with the network reaches. The
// toolchain never switches (GOTOOLCHAIN=local). Builds are -trimpath:
// without it every action is keyed by its package's directory, so a
// second workspace would rebuild everything the first one cached.
func goProfile(o Options) (Profile, bool) {
	bin := lookPath("go", o.Path)
	if bin == "" {
		return Profile{}, false
	}
	host, ok := probeGo(bin)
	if !ok {
		return Profile{}, false
	}
	dir := filepath.Join(o.CacheDir, "go")
	p := Profile{
		Name: "go",
		Env: map[string]string{
			"GOCACHE":     filepath.Join(dir, "build"),
			"GOMODCACHE":  filepath.Join(dir, "mod"),
			"GOTOOLCHAIN": "local",
			"GOFLAGS":     "-trimpath",
		},
		Caches: []string{filepath.Join(dir, "build"), filepath.Join(dir, "mod")},
	}
	proxy, dropped := goProxy(host)
	p.Env["GOPROXY"] = proxy
	if dropped > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("left %d entries of the host's GOPROXY out: they carry credentials, which commands would see", dropped))
	}
	for _, k := range privacyVars {
		if v := host.privacy(k); v != "" {
			p.Env[k] = v
		}
	}
	if host.GOROOT != "" {
		p.Env["GOROOT"] = host.GOROOT
		p.ReadOnly = append(p.ReadOnly, host.GOROOT)
	}
	if dl := downloadCache(host); dl != "" {
		p.ReadOnly = append(p.ReadOnly, dl)
	}
	return p, true
}

// downloadCache is the host's module download cache, or "" when it has
// none.
func downloadCache(host goEnv) string {
	if host.GOMODCACHE == "" || !filepath.IsAbs(host.GOMODCACHE) {
		return ""
	}
	dl := filepath.Join(host.GOMODCACHE, "cache", "download")
	if fi, err := os.Stat(dl); err != nil || !fi.IsDir() {
		return ""
	}
	return dl
}

// privacy returns the host's value of one of privacyVars.
func (e goEnv) privacy(k string) string {
	switch k {
	case "GOPRIVATE":
		return e.GOPRIVATE
	case "GONOPROXY":
		return e.GONOPROXY
	case "GONOSUMDB":
		return e.GONOSUMDB
	case "GOINSECURE":
		return e.GOINSECURE
	}
	return ""
}

// goProxy is the profile's GOPROXY: the host's download cache as a file
// proxy first, then the host's own list (where a module missing from the
// cache is fetched when the command has the network), less every entry
// that carries credentials (user:password@host), which it counts.
func goProxy(host goEnv) (string, int) {
	var list []string
	if dl := downloadCache(host); dl != "" {
		list = append(list, (&url.URL{Scheme: "file", Path: dl}).String())
	}
	dropped := 0
	// Entries are separated by commas or pipes; a pipe falls through on
	// any error, a comma only on not found. The separator before a
	// dropped entry goes with it.
	rest, sep := strings.TrimSpace(host.GOPROXY), ","
	for rest != "" {
		entry := rest
		next := ""
		if i := strings.IndexAny(rest, ",|"); i >= 0 {
			entry, next = rest[:i], rest[i:i+1]
			rest = rest[i+1:]
		} else {
			rest = ""
		}
		switch entry = strings.TrimSpace(entry); {
		case entry == "":
		case entry == "off":
			rest = "" // nothing after off is ever asked
		case carriesCredentials(entry):
			dropped++
		default:
			if len(list) > 0 {
				list = append(list, sep)
			}
			list = append(list, entry)
		}
		sep = next
	}
	if len(list) == 0 {
		return "off", dropped
	}
	return strings.Join(list, ""), dropped
}

// carriesCredentials reports whether a proxy entry names a user (and
// perhaps a password) in its URL.
func carriesCredentials(entry string) bool {
	u, err := url.Parse(entry)
	return err != nil || u.User != nil
}

// probeGo asks the host's go command for its module cache, root and
// proxy list, from the root directory so that no go.mod, go.work or
// toolchain line of a workspace is read.
func probeGo(bin string) (goEnv, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	args := append([]string{"env", "-json", "GOMODCACHE", "GOROOT", "GOPROXY"}, privacyVars...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = "/"
	cmd.Env = probeEnv(os.Environ())
	var out bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &out, n: maxProbeBytes}
	if err := cmd.Run(); err != nil {
		return goEnv{}, false
	}
	return parseGoEnv(out.Bytes())
}

// probeEnv is the host's environment with the variables that could make
// go run another toolchain, read a workspace or take extra flags
// replaced.
func probeEnv(env []string) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOTOOLCHAIN", "GOWORK", "GOFLAGS":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=")
}

// parseGoEnv decodes `go env -json` output; paths must be absolute.
func parseGoEnv(b []byte) (goEnv, bool) {
	var e goEnv
	if err := json.Unmarshal(b, &e); err != nil {
		return goEnv{}, false
	}
	if e.GOROOT != "" && !filepath.IsAbs(e.GOROOT) {
		e.GOROOT = ""
	}
	if e.GOMODCACHE != "" && !filepath.IsAbs(e.GOMODCACHE) {
		e.GOMODCACHE = ""
	}
	return e, true
}

// limitedWriter keeps at most n bytes and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	k := min(len(p), l.n)
	l.n -= k
	if k > 0 {
		if _, err := l.w.Write(p[:k]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

package toolchain

import (
	"bytes"
	"context"
	"encoding/json"
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
}

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
			"GOPROXY":     goProxy(host),
			"GOFLAGS":     "-trimpath",
		},
		Caches: []string{filepath.Join(dir, "build"), filepath.Join(dir, "mod")},
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

// goProxy is the profile's GOPROXY: the host's download cache as a file
// proxy first, then the host's own list (where a module missing from the
// cache is fetched when the command has the network).
func goProxy(host goEnv) string {
	var list []string
	if dl := downloadCache(host); dl != "" {
		list = append(list, (&url.URL{Scheme: "file", Path: dl}).String())
	}
	if p := strings.TrimSpace(host.GOPROXY); p != "" && p != "off" {
		list = append(list, p)
	}
	if len(list) == 0 {
		return "off"
	}
	return strings.Join(list, ",")
}

// probeGo asks the host's go command for its module cache, root and
// proxy list, from the root directory so that no go.mod, go.work or
// toolchain line of a workspace is read.
func probeGo(bin string) (goEnv, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "env", "-json", "GOMODCACHE", "GOROOT", "GOPROXY")
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

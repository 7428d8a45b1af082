package plane

import (
	"github.com/agentloom/loom/internal/gitguard"
	"github.com/agentloom/loom/sandbox"

	"bufio"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
	"github.com/agentloom/loom/toolchain"
)

// cmpModule writes into ws a main module requiring go-cmp at version
// (with go.sum lines from this repository's go.sum when it has them) and
// a main package using it.
func cmpModule(t *testing.T, ws, version string) {
	t.Helper()
	sum := ""
	f, err := os.Open("../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "github.com/google/go-cmp "+version+" ") || strings.HasPrefix(sc.Text(), "github.com/google/go-cmp "+version+"/") {
			sum += sc.Text() + "\n"
		}
	}
	files := map[string]string{
		"go.mod":  "module example.com/m\n\ngo 1.22\n\nrequire github.com/google/go-cmp " + version + "\n",
		"go.sum":  sum,
		"main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/google/go-cmp/cmp\"\n)\n\nfunc main() { fmt.Println(\"equal:\", cmp.Equal(1, 1)) }\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cmpVersion is the go-cmp version this repository requires, so the
// host's module cache holds it wherever this test runs.
func cmpVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "github.com/google/go-cmp" {
			return f[1]
		}
	}
	t.Fatal("go.mod requires no go-cmp")
	return ""
}

// workspaceFiles lists every path under ws.
func workspaceFiles(t *testing.T, ws string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if p != ws {
			out = append(out, strings.TrimPrefix(p, ws+"/"))
		}
		return nil
	})
	return out
}

func bashIn(t testing.TB, p *Plane, command string) tool.Outcome {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"command": command, "mode": "foreground", "timeout_ms": 600_000})
	res := p.Dispatcher().Dispatch(context.Background(), p.Call, "op-1", "step-1", []ToolCall{{ID: "1", Name: "bash", Args: args}})
	return res[0].Outcome
}

// TestGoModuleBuildsOffline: a module with a dependency builds and runs
// in the jail with no network, its module served from the host's module
// cache, and the build leaves nothing in the workspace (the caches and
// HOME live outside it).
func TestGoModuleBuildsOffline(t *testing.T) {
	t.Parallel()
	ws, cfg := testDirs(t)
	os.RemoveAll(filepath.Join(ws, ".git"))
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	cmpModule(t, ws, cmpVersion(t))
	before := workspaceFiles(t, ws)
	p := newTestPlane(t, cfg)
	if !slices.ContainsFunc(p.Toolchains, func(tc toolchain.Profile) bool { return tc.Name == "go" }) {
		t.Fatalf("no Go profile (go is on this host): %+v", p.Toolchains)
	}
	o := bashIn(t, p, `go build -o "$TMPDIR/m" . && "$TMPDIR/m"`)
	if o.IsError || !strings.Contains(o.Text, "equal: true") {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
	if after := workspaceFiles(t, ws); !slices.Equal(before, after) {
		t.Fatalf("the build changed the workspace:\nbefore %q\nafter  %q", before, after)
	}
}

// TestGoModuleMissingIsSaidInBand: a module in no cache, with no
// network, fails with a hint naming both ways out.
func TestGoModuleMissingIsSaidInBand(t *testing.T) {
	t.Parallel()
	ws, cfg := testDirs(t)
	cmpModule(t, ws, "v0.1.0")
	p := newTestPlane(t, cfg)
	o := bashIn(t, p, `go mod download`)
	if !o.IsError || !strings.Contains(o.Text, "not in the module cache") || !strings.Contains(o.Text, "go mod download") || !strings.Contains(o.Text, `network: "full"`) {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
}

// TestGoModuleFetchedLandsInTheCache: a module the host's cache lacks,
// fetched from the profile's upstream (here a file proxy standing in for
// the network a grant opens), lands in the profile's module cache and
// never in the workspace.
func TestGoModuleFetchedLandsInTheCache(t *testing.T) {
	t.Parallel()
	ws, cfg := testDirs(t)
	version := cmpVersion(t)
	cmpModule(t, ws, version)
	// The upstream: go-cmp's files copied from the host's download cache.
	host := toolchainHostDownloads(t)
	upstream := filepath.Join(filepath.Dir(ws), "upstream")
	src := filepath.Join(host, "github.com", "google", "go-cmp", "@v")
	dst := filepath.Join(upstream, "github.com", "google", "go-cmp", "@v")
	os.MkdirAll(dst, 0o755)
	for _, ext := range []string{".info", ".mod", ".zip"} {
		b, err := os.ReadFile(filepath.Join(src, version+ext))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dst, version+ext), b, 0o644)
	}
	cache := filepath.Join(filepath.Dir(ws), "toolchains")
	cfg.Toolchains = func([]toolchain.Profile) []toolchain.Profile {
		ps, err := toolchain.Detect(toolchain.Options{CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		for i := range ps {
			if ps[i].Name == "go" {
				ps[i].Env["GOPROXY"] = "file://" + upstream
				ps[i].ReadOnly = append(ps[i].ReadOnly, upstream)
			}
		}
		return ps
	}
	p := newTestPlane(t, cfg)
	before := workspaceFiles(t, ws)
	if o := bashIn(t, p, `go mod download -x github.com/google/go-cmp`); o.IsError {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
	if _, err := os.Stat(filepath.Join(cache, "go", "mod", "github.com", "google", "go-cmp@"+version, "cmp", "compare.go")); err != nil {
		t.Fatalf("the module is not in the profile's cache: %v", err)
	}
	if after := workspaceFiles(t, ws); !slices.Equal(before, after) {
		t.Fatalf("the download changed the workspace:\nbefore %q\nafter  %q", before, after)
	}
}

// toolchainHostDownloads is the host's module download cache, as the Go
// profile found it.
func toolchainHostDownloads(t *testing.T) string {
	t.Helper()
	ps, err := toolchain.Detect(toolchain.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Name == "go" {
			for _, d := range p.ReadOnly {
				if strings.HasSuffix(d, "/cache/download") {
					return d
				}
			}
		}
	}
	t.Fatal("the Go profile reads no host module cache")
	return ""
}

// TestHostModuleCacheIsReadOnly: a command cannot write the host's
// module download cache the Go profile reads; the control writes the
// profile's own module cache in the same command, so the test can tell a
// refusal from a command that never ran.
func TestHostModuleCacheIsReadOnly(t *testing.T) {
	t.Parallel()
	ws, cfg := testDirs(t)
	cfg.Toolchains = func([]toolchain.Profile) []toolchain.Profile {
		ps, _ := toolchain.Detect(toolchain.Options{CacheDir: filepath.Join(filepath.Dir(ws), "toolchains")})
		return ps
	}
	host := toolchainHostDownloads(t)
	p := newTestPlane(t, cfg)
	probe := filepath.Join(host, "loom-write-probe")
	o := bashIn(t, p, `touch "$GOMODCACHE/loom-write-probe" && echo control-wrote; touch `+probe+` && echo host-wrote`)
	os.Remove(probe)
	if !strings.Contains(o.Text, "control-wrote") {
		t.Fatalf("control: the profile's own cache was not writable: %s", o.Text)
	}
	if strings.Contains(o.Text, "host-wrote") {
		t.Fatalf("a command wrote the host's module cache: %s", o.Text)
	}
}

// TestSharedCachePlantFencesNoSession: what one session leaves in the
// shared toolchain caches (a git directory nested deeper than the git
// guard checks) does not fence another session's commands: the caches
// are outside the guard (sandbox.Policy.Unguarded).
func TestSharedCachePlantFencesNoSession(t *testing.T) {
	t.Parallel()
	wsA, cfgA := testDirs(t)
	_, cfgB := testDirs(t)
	cache := filepath.Join(filepath.Dir(wsA), "toolchains")
	profiles := func([]toolchain.Profile) []toolchain.Profile {
		ps, _ := toolchain.Detect(toolchain.Options{CacheDir: cache})
		return ps
	}
	cfgA.Toolchains, cfgB.Toolchains = profiles, profiles
	a := newTestPlane(t, cfgA)
	deep := `"$GOCACHE/plant/.git` + strings.Repeat("/modules/n", gitguard.MaxModuleDepth+2) + `"`
	if o := bashIn(t, a, `mkdir -p `+deep+`/objects && echo 'ref: refs/heads/main' > `+deep+`/HEAD && echo planted`); o.IsError || !strings.Contains(o.Text, "planted") {
		t.Fatalf("session A: %s", o.Text)
	}
	b := newTestPlane(t, cfgB)
	if o := bashIn(t, b, `echo ran`); o.IsError || !strings.Contains(o.Text, "ran") {
		t.Fatalf("session B was refused after A's plant in the shared cache: %s: %s", o.Code, o.Text)
	}
}

// TestGoModuleDownloadedWithTheNetwork: with the network granted, a
// module in no cache comes from the host's own proxy (checked against
// the checksum database) into the profile's module cache, never the
// workspace. It needs the module proxy: it runs where LOOM_TEST_NETWORK=1
// (CI sets it) and is skipped elsewhere.
func TestGoModuleDownloadedWithTheNetwork(t *testing.T) {
	if os.Getenv("LOOM_TEST_NETWORK") != "1" {
		t.Skip("set LOOM_TEST_NETWORK=1 to fetch a module through the host's proxy")
	}
	t.Parallel()
	ws, cfg := testDirs(t)
	cache := filepath.Join(filepath.Dir(ws), "toolchains")
	cfg.Toolchains = func([]toolchain.Profile) []toolchain.Profile {
		ps, _ := toolchain.Detect(toolchain.Options{CacheDir: cache})
		return ps
	}
	cfg.Policy = func(p sandbox.Policy) sandbox.Policy { p.Network = sandbox.NetworkFull; return p }
	p := newTestPlane(t, cfg)
	before := workspaceFiles(t, ws)
	const mod = "github.com/google/go-cmp@v0.5.9" // not this repository's version: in no cache
	if o := bashIn(t, p, `go mod download `+mod); o.IsError {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
	if _, err := os.Stat(filepath.Join(cache, "go", "mod", "github.com", "google", "go-cmp@v0.5.9", "cmp", "compare.go")); err != nil {
		t.Fatalf("the module is not in the profile's cache: %v", err)
	}
	if after := workspaceFiles(t, ws); !slices.Equal(before, after) {
		t.Fatalf("the download changed the workspace:\nbefore %q\nafter  %q", before, after)
	}
}

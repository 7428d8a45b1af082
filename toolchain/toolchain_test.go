package toolchain

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeGo writes an executable go on a fresh search path that prints out
// (whatever it is asked) and returns the path.
func fakeGo(t *testing.T, out string) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\ncat <<'EOF'\n" + out + "\nEOF\n"
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestGoProfile(t *testing.T) {
	mod := t.TempDir()
	if err := os.MkdirAll(filepath.Join(mod, "cache", "download"), 0o755); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	tests := []struct {
		name     string
		env      string
		proxy    string
		readOnly []string
	}{
		{"host cache, then the host's proxies", `{"GOMODCACHE":"` + mod + `","GOROOT":"/usr/local/go","GOPROXY":"https://proxy.golang.org,direct"}`,
			"file://" + mod + "/cache/download,https://proxy.golang.org,direct", []string{"/usr/local/go", mod + "/cache/download"}},
		{"proxies off", `{"GOMODCACHE":"` + mod + `","GOROOT":"/usr/local/go","GOPROXY":"off"}`,
			"file://" + mod + "/cache/download", []string{"/usr/local/go", mod + "/cache/download"}},
		{"no download cache", `{"GOMODCACHE":"` + mod + `/none","GOROOT":"/usr/local/go","GOPROXY":"https://p.example"}`,
			"https://p.example", []string{"/usr/local/go"}},
		{"nothing at all", `{"GOROOT":"","GOPROXY":""}`, "off", nil},
		{"relative paths are dropped", `{"GOMODCACHE":"rel","GOROOT":"rel/go","GOPROXY":"off"}`, "off", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := goProfile(Options{CacheDir: cache, Path: fakeGo(t, tt.env)})
			if !ok {
				t.Fatal("no profile")
			}
			if got := p.Env["GOPROXY"]; got != tt.proxy {
				t.Errorf("GOPROXY %q, want %q", got, tt.proxy)
			}
			if !slices.Equal(p.ReadOnly, tt.readOnly) {
				t.Errorf("read-only %q, want %q", p.ReadOnly, tt.readOnly)
			}
			for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
				if !strings.HasPrefix(p.Env[k], cache+"/") || !slices.Contains(p.Caches, p.Env[k]) {
					t.Errorf("%s=%q is not a cache under %s (%q)", k, p.Env[k], cache, p.Caches)
				}
			}
			if p.Env["GOTOOLCHAIN"] != "local" {
				t.Errorf("GOTOOLCHAIN=%q", p.Env["GOTOOLCHAIN"])
			}
		})
	}
}

// TestGoProxyLeavesCredentialsOut: a proxy entry naming a user is left
// out (commands would see it), the rest keep their order and separators,
// and the profile notes what it left; the host's privacy patterns pass.
func TestGoProxyLeavesCredentialsOut(t *testing.T) {
	tests := []struct {
		host, want string
		dropped    int
	}{
		{"https://proxy.golang.org,direct", "https://proxy.golang.org,direct", 0},
		{"https://alice:s3cret@corp.example/go|https://proxy.golang.org,direct", "https://proxy.golang.org,direct", 1},
		{"https://corp.example/go|https://bob@mirror.example,direct", "https://corp.example/go,direct", 1},
		{"https://a.example|https://b.example", "https://a.example|https://b.example", 0},
		{"https://a.example,off,https://b.example", "https://a.example", 0},
		{"https://u:p@only.example", "off", 1},
		{"", "off", 0},
	}
	for _, tt := range tests {
		got, dropped := goProxy(goEnv{GOPROXY: tt.host})
		if got != tt.want || dropped != tt.dropped {
			t.Errorf("GOPROXY %q: %q dropping %d, want %q dropping %d", tt.host, got, dropped, tt.want, tt.dropped)
		}
	}
	p, ok := goProfile(Options{CacheDir: t.TempDir(), Path: fakeGo(t, `{"GOROOT":"/usr/local/go","GOPROXY":"https://u:tok@corp.example","GOPRIVATE":"corp.example/*","GONOSUMDB":"corp.example"}`)})
	if !ok {
		t.Fatal("no profile")
	}
	if strings.Contains(p.Env["GOPROXY"], "tok") || len(p.Notes) != 1 {
		t.Errorf("GOPROXY %q, notes %q", p.Env["GOPROXY"], p.Notes)
	}
	if p.Env["GOPRIVATE"] != "corp.example/*" || p.Env["GONOSUMDB"] != "corp.example" || p.Env["GOINSECURE"] != "" {
		t.Errorf("privacy variables %v", p.Env)
	}
}

// TestGoProfileAbsent: no go on the path, a go that fails, and one that
// prints what is not JSON give no profile.
func TestGoProfileAbsent(t *testing.T) {
	failing := t.TempDir()
	os.WriteFile(filepath.Join(failing, "go"), []byte("#!/bin/sh\nexit 3\n"), 0o755)
	for name, path := range map[string]string{
		"absent":   t.TempDir(),
		"failing":  failing,
		"not json": fakeGo(t, "GOROOT=/x"),
		"too long": fakeGo(t, `{"GOROOT":"/`+strings.Repeat("x", maxProbeBytes)+`"}`),
	} {
		if p, ok := goProfile(Options{CacheDir: t.TempDir(), Path: path}); ok {
			t.Errorf("%s: a profile %+v", name, p)
		}
	}
}

// TestProbeEnvFixesTheToolchain: whatever the host's environment says,
// the probe runs the local toolchain without a workspace file or extra
// flags.
func TestProbeEnvFixesTheToolchain(t *testing.T) {
	got := probeEnv([]string{"HOME=/h", "GOTOOLCHAIN=go1.99+auto", "GOFLAGS=-toolexec=/evil", "GOWORK=/w/go.work", "GOPROXY=x"})
	want := []string{"HOME=/h", "GOPROXY=x", "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS="}
	if !slices.Equal(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
}

func TestDetect(t *testing.T) {
	dir := fakeGo(t, `{"GOROOT":"/usr/local/go","GOPROXY":"off"}`)
	for _, tool := range []string{"npm", "pip3"} {
		os.WriteFile(filepath.Join(dir, tool), []byte("#!/bin/sh\n"), 0o755)
	}
	cache := t.TempDir()
	ps, err := Detect(Options{CacheDir: cache, Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
		for _, c := range p.Caches {
			if !strings.HasPrefix(c, cache+"/") {
				t.Errorf("%s: cache %s outside %s", p.Name, c, cache)
			}
		}
	}
	if !slices.Equal(names, []string{"go", "npm", "pip"}) {
		t.Fatalf("profiles %q", names)
	}
	if ps, _ := Detect(Options{CacheDir: cache, Path: t.TempDir()}); len(ps) != 0 {
		t.Fatalf("an empty path gave %+v", ps)
	}
}

// TestPrepare: caches are made private and resolved; a missing read-only
// directory is left out.
func TestPrepare(t *testing.T) {
	root := t.TempDir()
	link := filepath.Join(root, "link")
	os.Mkdir(filepath.Join(root, "real"), 0o755)
	os.Symlink(filepath.Join(root, "real"), link)
	ps, err := Prepare([]Profile{{Name: "x", Caches: []string{filepath.Join(link, "c")}, ReadOnly: []string{link, filepath.Join(root, "missing")}}})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "real", "c")
	if !slices.Equal(ps[0].Caches, []string{want}) || !slices.Equal(ps[0].ReadOnly, []string{filepath.Join(root, "real")}) {
		t.Fatalf("%+v", ps[0])
	}
	if fi, err := os.Stat(want); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("cache %v %v", fi, err)
	}
}

func FuzzParseGoEnv(f *testing.F) {
	f.Add([]byte(`{"GOMODCACHE":"/m","GOROOT":"/r","GOPROXY":"off"}`))
	f.Add([]byte(`{"GOROOT":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ok := parseGoEnv(b)
		if !ok {
			return
		}
		for _, p := range []string{e.GOROOT, e.GOMODCACHE} {
			if p != "" && !filepath.IsAbs(p) {
				t.Fatalf("a relative path kept: %q", p)
			}
		}
	})
}

package plane

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentloom/loom/toolchain"
)

// goTestCompileOnly is the command both sides of
// BenchmarkGoTestSecondWorkspace run: every package's test binary built
// and started, no test run (this module's own tests start jails).
const goTestCompileOnly = `go test -run '^$' ./...`

// BenchmarkGoTestSecondWorkspace measures the first `go test` of this
// module in a second workspace, jailed through bash with the Go profile,
// after one run in another workspace warmed the profile's caches; beside
// it, interleaved, the host's own warm `go test` of the same tree with
// the host's caches. Reported: jailed-ms, host-ms and their ratio
// (medians over b.N), and bytes the jailed run added to its workspace.
// The warming run is the host's go with the profile's variables (a cold
// build of this module's dependencies can pass bash's 10-minute bound on
// a small machine); -trimpath makes its cache entries the jail's.
func BenchmarkGoTestSecondWorkspace(b *testing.B) {
	root, err := os.MkdirTemp("/var/tmp", "loom-bench-go-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(root)
	cache := filepath.Join(root, "toolchains")
	profiles := func([]toolchain.Profile) []toolchain.Profile {
		ps, err := toolchain.Detect(toolchain.Options{CacheDir: cache})
		if err != nil {
			b.Fatal(err)
		}
		return ps
	}
	ws := func(name string) string {
		dir := filepath.Join(root, name)
		os.MkdirAll(dir, 0o755)
		if out, err := exec.Command("sh", "-c", "git -C .. archive HEAD | tar -x -C "+dir).CombinedOutput(); err != nil {
			b.Fatalf("copying the module: %v %s", err, out)
		}
		return dir
	}
	jailed := func(dir string) time.Duration {
		p, err := New(Config{Workspace: dir, BlobDir: filepath.Join(root, "blobs"), HistoryPath: filepath.Join(root, "history.sqlite"),
			Families: FamilyShell, Toolchains: profiles})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		start := time.Now()
		if o := bashIn(b, p, goTestCompileOnly); o.IsError {
			b.Fatalf("jailed: %s", o.Text)
		}
		return time.Since(start)
	}
	host := func(dir string, env ...string) time.Duration {
		start := time.Now()
		cmd := exec.Command("sh", "-c", goTestCompileOnly)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("host: %v %s", err, out)
		}
		return time.Since(start)
	}
	first := ws("first")
	ps, err := toolchain.Prepare(profiles(nil))
	if err != nil {
		b.Fatal(err)
	}
	var profileEnv []string
	for _, p := range ps {
		for k, v := range p.Env {
			profileEnv = append(profileEnv, k+"="+v)
		}
	}
	host(first, profileEnv...) // warms the profile's caches
	host(first)                // warms the host's own
	var js, hs []time.Duration
	var added int64
	b.ResetTimer()
	for i := range b.N {
		dir := ws("second-" + string(rune('a'+i%26)) + time.Now().Format("150405.000"))
		before := treeBytes(dir)
		js = append(js, jailed(dir))
		added += treeBytes(dir) - before
		hs = append(hs, host(first))
	}
	b.StopTimer()
	j, h := median(js), median(hs)
	b.ReportMetric(float64(j.Milliseconds()), "jailed-ms")
	b.ReportMetric(float64(h.Milliseconds()), "host-ms")
	b.ReportMetric(float64(j)/float64(h), "ratio")
	b.ReportMetric(float64(added)/float64(b.N), "ws-bytes-added")
}

// treeBytes is the size of every regular file under dir.
func treeBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentloom/loom/broker"
)

// TestFirstBuildCompilesOnlyItsImports: a builder whose archives were
// never warmed builds, for its first program, the entry of that
// program's imports alone (what it imports and their dependencies, not
// the rest of the allowlist), whose compile importcfg lists just those
// imports; a later program importing the same packages reuses the entry
// (content-addressed by its import set) and builds nothing; another
// import set gets an entry of its own; and Warm still builds the whole
// allowlist's entry, which every build uses from then on. (The cache
// directory starts with no archive entry; its GOCACHE is the test
// binary's, which the shared builder's warm-up filled, so the standard
// packages are not compiled again.)
func TestFirstBuildCompilesOnlyItsImports(t *testing.T) {
	t.Parallel()
	shared(t)
	dir := t.TempDir()
	if err := linkGoCache(dir); err != nil {
		t.Fatal(err)
	}
	brk := broker.New(broker.Options{HelperPath: jailHelper.Path(t)})
	t.Cleanup(func() { brk.Close() })
	var mu sync.Mutex
	var progress bytes.Buffer
	b, err := newBuilder(BuilderOptions{
		CacheDir: dir, brk: brk, testPrelude: os.DirFS(fakePrelude()),
		StdPackages: []string{"errors", "fmt", "strings"},
		Progress:    func(s string) { mu.Lock(); progress.WriteString(s + "\n"); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	said := func() string { mu.Lock(); defer mu.Unlock(); s := progress.String(); progress.Reset(); return s }
	entries := func() []string {
		ents, _ := os.ReadDir(b.cache.path(cacheArchives))
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	const errorsOnly = "package main\n\nimport \"errors\"\n\nfunc main() { println(errors.New(\"x\").Error()) }\n"
	bin, err := b.Build(context.Background(), program(errorsOnly))
	if err != nil {
		t.Fatal(err)
	}
	if bin.Waited <= 0 {
		t.Error("a build that built its archives reports no wait")
	}
	if !strings.Contains(said(), "building archives for the program's 1 imports") {
		t.Error("the first build did not build its own imports' entry")
	}
	if _, ok := loadArchives(b.cache.path(cacheArchives, b.archiveKey), b.archiveKey); ok {
		t.Fatal("the first build built the whole allowlist's entry")
	}
	got := entries()
	if len(got) != 1 {
		t.Fatalf("archive entries %v, want the one of the program's imports", got)
	}
	var m archiveManifest
	data, err := os.ReadFile(filepath.Join(b.cache.path(cacheArchives, got[0]), manifestName))
	if err != nil || json.Unmarshal(data, &m) != nil {
		t.Fatalf("the entry's manifest: %v", err)
	}
	if !slices.Equal(m.Importable, []string{"errors"}) {
		t.Errorf("the entry makes %v importable, want errors alone", m.Importable)
	}
	if slices.Contains(m.Linked, "fmt") || slices.Contains(m.Linked, "strings") || !slices.Contains(m.Linked, "runtime") {
		t.Errorf("the entry links %v: want errors' dependencies and the runtime, not fmt or strings", m.Linked)
	}

	// The same imports: the entry serves, nothing is built.
	if _, err := b.Build(context.Background(), program(errorsOnly+"// again\n")); err != nil {
		t.Fatal(err)
	}
	if s := said(); strings.Contains(s, "building") {
		t.Errorf("a second program of the same imports built archives: %q", s)
	}
	// A fresh builder over the same directory finds it on disk.
	b2, err := newBuilder(b.opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Build(context.Background(), program(errorsOnly+"// third\n")); err != nil {
		t.Fatal(err)
	}
	if s := said(); strings.Contains(s, "building") {
		t.Errorf("another builder of the same imports built archives: %q", s)
	}

	// A program off its entry's imports gets an entry of its own, and an
	// import off the allowlist stays refused.
	if _, err := b.Build(context.Background(), program(helloSource)); err != nil {
		t.Fatal(err)
	}
	if n := len(entries()); n != 2 {
		t.Errorf("%d archive entries after a second import set, want 2", n)
	}
	_, err = b.Build(context.Background(), program("package main\n\nimport \"os\"\n\nfunc main() { os.Exit(0) }\n"))
	var be *BuildError
	if !errors.As(err, &be) {
		t.Errorf("a program importing os: %v, want a BuildError", err)
	}

	// Warm builds the whole allowlist; builds use it from then on.
	if err := b.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	next, err := b.Build(context.Background(), program(errorsOnly+"// after warm\n"))
	if err != nil {
		t.Fatal(err)
	}
	if next.Waited != 0 {
		t.Errorf("a build after the warm-up waited %s", next.Waited)
	}
}

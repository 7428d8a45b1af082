package codemode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// warmTimeout bounds one warm-up: building the archives with the go
// command (a cold cache costs about 25 s of CPU for ~60 packages).
const warmTimeout = 10 * time.Minute

// maxWarmOutputBytes bounds the go command's stderr a failed warm-up
// quotes.
const maxWarmOutputBytes = 16 << 10

// archiveFormat names the layout of an archive entry and the compile and
// link flags its binaries are built with; changing either changes it, so
// no entry or kept binary of another layout is ever reused.
const archiveFormat = "codemode-archives-v2"

// archiveGCFlags are the compiler flags of every archive's package (and
// the program's, see buildScript): no DWARF, which the linker's -w drops
// anyway, so no compile spends time generating it (go build, which links
// with the same -s -w, compiles it all the same).
const archiveGCFlags = "-dwarf=false"

// refusedUnsafe is where the compile importcfg maps "unsafe": no package
// file has that path, so a program importing unsafe fails to compile.
// (Called directly, the compiler admits unsafe whatever packagefile
// lines say.)
const refusedUnsafe = "unsafe (not on the allowlist)"

// Names inside an archive entry.
const (
	compileCfgName = "compile.cfg" // the hard allowlist: the packages a program may import
	linkCfgName    = "link.cfg"    // every package the allowlist needs, transitively
	manifestName   = "manifest.json"
	archivePkgDir  = "pkg"
)

// archiveManifest is an entry's manifest.json.
type archiveManifest struct {
	Format     string   `json:"format"`
	Key        string   `json:"key"`
	Toolchain  string   `json:"toolchain"`
	GOROOT     string   `json:"goroot"`
	Importable []string `json:"importable"` // what compile.cfg lists
	Linked     []string `json:"linked"`     // what link.cfg lists
}

// archives is a published archive entry.
type archives struct {
	dir        string // archives/<key>
	compileCfg string
	linkCfg    string
}

// archiveKey digests everything an entry depends on.
func archiveKey(tc Toolchain, preludeDigest string, std, prelude []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s/%s\x00%s\x00", archiveFormat, tc.Version, tc.GOROOT, runtime.GOOS, runtime.GOARCH, preludeDigest)
	for _, p := range std {
		fmt.Fprintf(h, "std %s\x00", p)
	}
	for _, p := range prelude {
		fmt.Fprintf(h, "cap %s\x00", p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// preludeDigest is the hex SHA-256 over the prelude tree's regular files
// (path and content, in lexical order); "" for no prelude.
func digestPrelude(fsys fs.FS) (string, error) {
	if fsys == nil {
		return "", nil
	}
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(data))
		h.Write(data)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

// preludePackages lists the import paths of the prelude tree's packages:
// every directory holding a .go file, as preludeModule + "/" + dir.
func preludePackages(fsys fs.FS) ([]string, error) {
	if fsys == nil {
		return nil, nil
	}
	seen := map[string]bool{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		dir := path.Dir(p)
		if dir == "." {
			seen[preludeModule] = true
		} else {
			seen[preludeModule+"/"+dir] = true
		}
		return nil
	})
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, err
}

// isInternal reports an import path with an "internal" element: a
// program may never import it, though the prelude's packages do.
func isInternal(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == "internal" {
			return true
		}
	}
	return false
}

// archiveFlight is one entry of a program's import set: being built
// until done is closed, then arch or err.
type archiveFlight struct {
	done chan struct{}
	arch *archives
	err  error
}

// archivesFor returns archives p can be built against, and ready when
// they were at hand without building or loading anything: the whole
// allowlist's entry once a warm-up made it ready or another builder
// published it; else the entry of p's imports alone (those on the
// allowlist; the compile importcfg lists just them, so it stays the
// allowlist), built on first use as Warm builds, without the cross-
// process lock (publication by rename makes a duplicate harmless).
// Its key is archiveKey's over that import set, so a later program
// importing the same packages reuses it, and its packages compiled once
// into the shared GOCACHE serve every other entry. One build of an
// entry runs at a time per builder, detached from ctx and bounded by
// warmTimeout; callers wait for it within their own ctx. A failure is
// not kept: the next call tries again.
func (b *builder) archivesFor(ctx context.Context, p *Program) (arch *archives, ready bool, err error) {
	b.warmMu.Lock()
	if b.arch != nil {
		a := b.arch
		b.warmMu.Unlock()
		return a, true, nil
	}
	b.warmMu.Unlock()
	if a, ok := loadArchives(b.cache.path(cacheArchives, b.archiveKey), b.archiveKey); ok {
		b.warmMu.Lock()
		if b.arch == nil {
			b.arch = a
		}
		b.warmMu.Unlock()
		return a, false, nil
	}
	std, prelude := b.importsOf(p)
	key := archiveKey(b.tc, b.digest, std, prelude)
	b.warmMu.Lock()
	f := b.flights[key]
	switch {
	case f != nil && f.arch != nil:
		b.warmMu.Unlock()
		return f.arch, true, nil
	case f == nil:
		f = &archiveFlight{done: make(chan struct{})}
		if b.flights == nil {
			b.flights = map[string]*archiveFlight{}
		}
		b.flights[key] = f
		go b.runFlight(context.WithoutCancel(ctx), f, key, slices.Concat(std, prelude))
	}
	b.warmMu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	if f.err != nil {
		return nil, false, f.err
	}
	return f.arch, false, nil
}

// runFlight builds (or loads) the entry of one import set.
func (b *builder) runFlight(ctx context.Context, f *archiveFlight, key string, want []string) {
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	a, ok := loadArchives(b.cache.path(cacheArchives, key), key)
	var err error
	if !ok {
		start := time.Now()
		b.progress("codemode: building archives for the program's %d imports with %s", len(want), b.tc.Version)
		if a, err = b.buildArchives(ctx, key, want); err == nil {
			b.progress("codemode: archives ready in %s", time.Since(start).Round(time.Millisecond))
		}
	}
	b.warmMu.Lock()
	if err != nil {
		f.err = &BuilderError{Code: CodeBuildUnavailable, Reason: "the archives could not be built", Err: err}
		delete(b.flights, key) // the next caller tries again
	} else {
		f.arch = a
	}
	b.warmMu.Unlock()
	close(f.done)
}

// importsOf is p's imports on the builder's allowlist, standard and
// prelude apart, each sorted: p.Imports when vetting set them, else
// those its source's import declarations name (a source that does not
// parse names what parsed, and its build fails on its own errors).
func (b *builder) importsOf(p *Program) (std, prelude []string) {
	imports := p.Imports
	if imports == nil {
		f, _ := parser.ParseFile(token.NewFileSet(), programFileName, p.Source, parser.ImportsOnly)
		if f != nil {
			for _, im := range f.Imports {
				if path, err := strconv.Unquote(im.Path.Value); err == nil {
					imports = append(imports, path)
				}
			}
		}
	}
	for _, path := range sortedSet(imports) {
		switch {
		case isInternal(path):
		case slices.Contains(b.std, path):
			std = append(std, path)
		case slices.Contains(b.prelude, path):
			prelude = append(prelude, path)
		}
	}
	// A generated cap/mcp package is compiled beside the program: what it
	// imports (the prelude's client among them) must be in the entry too.
	for _, g := range p.generated {
		f, _ := parser.ParseFile(token.NewFileSet(), "gen.go", g.src, parser.ImportsOnly)
		if f == nil {
			continue
		}
		for _, im := range f.Imports {
			path, err := strconv.Unquote(im.Path.Value)
			switch {
			case err != nil:
			case slices.Contains(b.std, path):
				std = append(std, path)
			case slices.Contains(b.prelude, path):
				prelude = append(prelude, path)
			}
		}
	}
	return sortedSet(std), sortedSet(prelude)
}

// loadArchives returns the published entry at dir, or ok false when
// there is none (or it is incomplete, which publication by rename
// rules out short of tampering).
func loadArchives(dir, key string) (*archives, bool) {
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return nil, false
	}
	var m archiveManifest
	if json.Unmarshal(data, &m) != nil || m.Format != archiveFormat || m.Key != key {
		return nil, false
	}
	a := &archives{dir: dir, compileCfg: filepath.Join(dir, compileCfgName), linkCfg: filepath.Join(dir, linkCfgName)}
	for _, p := range []string{a.compileCfg, a.linkCfg} {
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			return nil, false
		}
	}
	return a, true
}

// listedPackage is what the go command's `list -json` says of a package.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Dir        string
	GoFiles    []string
	SFiles     []string
	Export     string
	Standard   bool
	DepOnly    bool
	Incomplete bool
	Error      *struct{ Err string }
}

// buildArchives builds the entry for key, whose importable packages are
// want (standard and prelude packages; internal ones are linked, never
// importable): copies the prelude into a stage module, plans the build
// (planArchives: want, the runtime and their dependencies, critical path
// first), runs `go list -export -deps` over the plan with the go
// command's environment built from nothing (the go command compiles them
// in parallel in the plan's order, each package once into the cache's
// shared GOCACHE, so an entry reuses what an earlier one compiled, and
// without DWARF: archiveGCFlags), links (or copies) each
// export archive into the stage, writes the two importcfgs with the
// entry's final paths and renames the stage into place. An entry another
// builder published first wins.
func (b *builder) buildArchives(ctx context.Context, key string, want []string) (*archives, error) {
	final := b.cache.path(cacheArchives, key)
	stage, err := b.cache.newScratch("arc")
	if err != nil {
		return nil, err
	}
	defer stage.remove()
	mod := filepath.Join(stage.dir, "src")
	if err := writePreludeModule(mod, b.opts.testPrelude); err != nil {
		return nil, fmt.Errorf("copying the prelude: %w", err)
	}
	tmp := filepath.Join(stage.dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	// The runtime is every binary's, though no program imports it. The
	// plan lists it, want and every dependency, critical path first.
	env := b.goCommandEnv(tmp)
	order, err := b.planArchives(ctx, mod, env, want)
	if err != nil {
		return nil, err
	}
	args := append([]string{"-trimpath", "-gcflags=all=" + archiveGCFlags, "-export", "-deps", "-json=ImportPath,Export,Standard,DepOnly,Incomplete,Error", "--"}, order...)
	pkgs, err := b.goList(ctx, mod, env, "go list -export", args)
	if err != nil {
		return nil, err
	}
	pkgDir := filepath.Join(stage.dir, archivePkgDir)
	if err := os.Mkdir(pkgDir, 0o700); err != nil {
		return nil, err
	}
	var link, compile bytes.Buffer
	m := archiveManifest{Format: archiveFormat, Key: key, Toolchain: b.tc.Version, GOROOT: b.tc.GOROOT}
	finalFile := map[string]string{}
	for i, p := range pkgs {
		if p.Export == "" {
			continue // unsafe and other packages without object code
		}
		name := fmt.Sprintf("%04d.a", i)
		if err := linkOrCopy(p.Export, filepath.Join(pkgDir, name)); err != nil {
			return nil, fmt.Errorf("keeping the archive of %s: %w", p.ImportPath, err)
		}
		finalFile[p.ImportPath] = filepath.Join(final, archivePkgDir, name)
		fmt.Fprintf(&link, "packagefile %s=%s\n", p.ImportPath, finalFile[p.ImportPath])
		m.Linked = append(m.Linked, p.ImportPath)
	}
	for _, p := range want {
		if isInternal(p) || p == "unsafe" {
			continue
		}
		f, ok := finalFile[p]
		if !ok {
			return nil, fmt.Errorf("go list gave no archive for %s", p)
		}
		fmt.Fprintf(&compile, "packagefile %s=%s\n", p, f)
		m.Importable = append(m.Importable, p)
	}
	fmt.Fprintf(&compile, "importmap unsafe=%s\n", refusedUnsafe)
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{compileCfgName: compile.Bytes(), linkCfgName: link.Bytes()} {
		if err := os.WriteFile(filepath.Join(stage.dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	// The manifest last: an entry with one is complete.
	if err := os.WriteFile(filepath.Join(stage.dir, manifestName), manifest, 0o600); err != nil {
		return nil, err
	}
	for _, d := range []string{"src", "tmp"} {
		os.RemoveAll(filepath.Join(stage.dir, d))
	}
	if err := os.Rename(stage.dir, final); err != nil && !isExist(err) {
		return nil, err
	}
	a, ok := loadArchives(final, key)
	if !ok {
		return nil, errors.New("the published archive entry is unreadable")
	}
	return a, nil
}

// goCommandEnv is the go command's whole environment for a warm-up: no
// variable of the host's leaks in.
func (b *builder) goCommandEnv(tmp string) []string {
	return []string{
		"PATH=" + filepath.Dir(b.tc.goBinary()),
		"GOROOT=" + b.tc.GOROOT,
		"HOME=" + b.cache.path(cacheHome),
		"GOPATH=" + filepath.Join(b.cache.path(cacheHome), "go"),
		"GOCACHE=" + b.cache.path(cacheGoCache),
		"TMPDIR=" + tmp,
		"GOOS=" + runtime.GOOS,
		"GOARCH=" + runtime.GOARCH,
		"GOENV=off",
		"GOWORK=off",
		"GOFLAGS=",
		"GOPROXY=off",
		"GOSUMDB=off",
		"GOTOOLCHAIN=local",
		"CGO_ENABLED=0",
		"GOTELEMETRY=off",
	}
}

// writePreludeModule copies the prelude tree into dir under a go.mod of
// module preludeModule.
func writePreludeModule(dir string, fsys fs.FS) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if fsys != nil {
		err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case p == ".":
				return nil
			case d.IsDir():
				return os.Mkdir(filepath.Join(dir, filepath.FromSlash(p)), 0o700)
			case !d.Type().IsRegular():
				return nil
			}
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), data, 0o600)
		})
		if err != nil {
			return err
		}
	}
	gomod := fmt.Sprintf("module %s\n\ngo 1.%d\n", preludeModule, minGoMinor)
	return os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o600)
}

// goList runs the go command's list with args in dir under env (what
// names the run in its error) and returns the packages it printed; a
// package it lists with an error, or incomplete, fails the whole.
func (b *builder) goList(ctx context.Context, dir string, env []string, what string, args []string) ([]listedPackage, error) {
	cmd := exec.CommandContext(ctx, b.tc.goBinary(), append([]string{"list"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &boundedWriter{w: &stderr, left: maxWarmOutputBytes}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", what, err, bytes.TrimSpace(stderr.Bytes()))
	}
	pkgs, err := decodeListed(out)
	if err != nil {
		return nil, err
	}
	for _, p := range pkgs {
		if p.Error != nil || p.Incomplete {
			msg := "incomplete"
			if p.Error != nil {
				msg = p.Error.Err
			}
			return nil, fmt.Errorf("go list: package %s: %s", p.ImportPath, msg)
		}
	}
	return pkgs, nil
}

// decodeListed decodes the go command's stream of JSON objects.
func decodeListed(out []byte) ([]listedPackage, error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	var pkgs []listedPackage
	for {
		var p listedPackage
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding go list: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// linkOrCopy hard-links src to dst, or copies it where a link cannot be
// made (another file system).
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// boundedWriter keeps at most left bytes of what is written to it and
// drops the rest, never failing the writer.
type boundedWriter struct {
	w    io.Writer
	left int
	cut  int64
}

func (bw *boundedWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > bw.left {
		bw.cut += int64(len(p) - bw.left)
		p = p[:bw.left]
	}
	bw.left -= len(p)
	bw.w.Write(p)
	return n, nil
}

package codemode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// buildTimeout bounds one build stage (compile and link, and the
// repaired rebuild apart) in its jail.
const buildTimeout = 60 * time.Second

// buildMemoryBytes is the build jail's address-space limit (and its
// cgroup's memory.max where the broker has one): 4 GiB. A Go tool needs
// about 1 GiB of address space to start at all.
const buildMemoryBytes = 4 << 30

// maxBinaryBytes bounds the file the linker may write (the jail's file
// size limit) and the binary the builder accepts: 256 MiB.
const maxBinaryBytes = 256 << 20

// maxDiagnosticBytes bounds the compiler and linker output a BuildError
// quotes verbatim: 64 KiB, then a line saying how much was cut.
const maxDiagnosticBytes = 64 << 10

// maxBuildOutputBytes is the broker's bound on the build's output; past
// it the broker stops the build.
const maxBuildOutputBytes = 4 << 20

// maxConcurrentBuilds is how many builds one builder runs at once; more
// wait for a slot within their context.
const maxConcurrentBuilds = 2

// binaryFormat is mixed into every binary key beside the archive key.
const binaryFormat = "codemode-binary-v1"

// buildStepOp is the operation of every builder's ledger pool: each
// builder admits its builds in a step of its own ("build/<n>"), so
// builders sharing a broker never refuse each other's builds, and its
// own slots keep the pool within maxConcurrentBuilds.
const buildStepOp = "codemode"

// builderSerial numbers Builders for their ledger steps.
var builderSerial atomic.Int64

// buildScript runs the compiler, then the linker, in the build root
// (the working directory): $1 compile, $2 link, $3 the compile
// importcfg, $4 the link importcfg, $5 the build root (trimmed from
// positions). -e reports every error; -complete refuses a body-less
// function; -d refuses a dynamic executable; archiveGCFlags as the
// archives were compiled.
const buildScript = `"$1" ` + archiveGCFlags + ` -complete -importcfg "$3" -p main -pack -trimpath="$5" -o main.a -e ` + programFileName + ` && "$2" -s -w -d -buildmode=exe -importcfg "$4" -o ` + binaryName + ` main.a`

// BuilderOptions configure an Engine's hermetic build (Options.Builder),
// which runs in jails of the Engine's Broker. Every zero value is
// sensible.
type BuilderOptions struct {
	// Toolchain is the Go toolchain the Engine uses. An empty GOROOT finds
	// one on PATH (the GOROOT `go env` names for the go command there); a
	// non-empty Version must be the toolchain's. A toolchain that is
	// missing, older than Go 1.26, of another Version, or lacks its go,
	// compile or link binary is refused with CodeToolchainUnavailable.
	Toolchain Toolchain
	// CacheDir holds the archives, the kept binaries and the build
	// roots; "" means os.UserCacheDir()/loom/codemode.
	CacheDir string
	// MaxCacheBytes bounds the kept binaries of the cache directory;
	// zero means 512 MiB (a small program's binary is about 1.5 MiB).
	// The archives and the go command's build cache are not counted.
	MaxCacheBytes int64
	// StdPackages are the standard packages programs build against (the
	// archives, the compile importcfg and the description list them); nil
	// means StdPackages(). Vetting admits StdPackages(), so a list that
	// leaves one out makes a program importing it fail its build.
	StdPackages []string
	// Progress, when set, is told what a warm-up is doing.
	Progress func(string)

	// brk runs every build in its jail: the Engine's Options.Broker.
	brk *broker.Broker
	// testPrelude is a test hook: a cap/... tree (module preludeModule,
	// no go.mod) built in place of the embedded prelude; nil means the
	// embedded one.
	testPrelude fs.FS
}

// builder compiles vetted programs into static binaries, each build in
// a broker jail. It is safe for concurrent use.
type builder struct {
	opts       BuilderOptions
	tc         Toolchain
	cache      *cache
	std        []string // sorted, deduplicated
	prelude    []string // sorted, deduplicated
	archiveKey string   // the whole allowlist's entry (Warm's)
	digest     string   // the prelude's (digestPrelude)
	maxBytes   int64
	slots      chan struct{}
	step       sandbox.StepKey

	warmMu   sync.Mutex
	warmDone chan struct{} // closed when the running warm-up ends; nil when none ran
	warmErr  error
	arch     *archives // set once a warm-up succeeded

	// flights are the entries for programs' import sets (see
	// archivesFor), by key: one build of each at a time, kept once
	// made. Guarded by warmMu.
	flights map[string]*archiveFlight

	// checking holds the one type check of a refused program running
	// (typeCheckRefused); a check past its bound keeps it until it ends.
	checking chan struct{}

	onRoot func(dir string) // tests: told each build root once it exists
}

// Binary is a built program.
type Binary struct {
	// Path is the static executable, kept in the cache under Key.
	Path string
	// Key is the hex content key: SHA-256 over the source, the toolchain,
	// the prelude and the allowlist.
	Key string
	// Cached says the binary was kept from an earlier build of the same
	// key and no build ran (Enforcement is then zero).
	Cached bool
	// Edits are the repairs made before the build succeeded.
	Edits []Repair
	// Enforcement is the build jail's report.
	Enforcement sandbox.Enforcement
	// Waited is how long the build waited for its archives (a warm-up,
	// or the entry of its imports); it does not count against an
	// execution's within_ms.
	Waited time.Duration
	// Seam is the seam the program was vetted on: a run serves its
	// capabilities and no others (a zero Seam, none).
	Seam Seam
}

// BuildError is a program the toolchain refused. Diagnostics holds the
// compiler's and linker's output verbatim, at most 64 KiB (then a line
// saying how much was cut), or why the linked result was refused. Its
// code is CodeBuildRejected.
type BuildError struct {
	Diagnostics string
	Enforcement sandbox.Enforcement
}

// Error renders the diagnostics.
func (e *BuildError) Error() string {
	return "codemode: the build was rejected:\n" + e.Diagnostics
}

// Code returns CodeBuildRejected.
func (e *BuildError) Code() tool.Code { return CodeBuildRejected }

// ErrorCode is Code as a string, so tool.CodeOf reads it (see
// tool.CodedError).
func (e *BuildError) ErrorCode() string { return string(e.Code()) }

// newBuilder checks the options, finds the toolchain, opens the cache
// directory (sweeping build roots no live builder holds) and returns a
// builder. It builds nothing: Warm, or the first Build, does.
func newBuilder(o BuilderOptions) (*builder, error) {
	if o.brk == nil {
		return nil, &BuilderError{Code: CodeBuildUnavailable, Reason: "a broker is required: every build runs in a broker jail"}
	}
	tc, err := findToolchain(context.Background(), o.Toolchain.GOROOT)
	if err != nil {
		return nil, err
	}
	if o.Toolchain.Version != "" && o.Toolchain.Version != tc.Version {
		return nil, toolchainErr(fmt.Sprintf("the toolchain at %s is %s, not the %s BuilderOptions.Toolchain names", tc.GOROOT, tc.Version, o.Toolchain.Version), nil)
	}
	dir := o.CacheDir
	if dir == "" {
		var err error
		if dir, err = defaultCacheDir(); err != nil {
			return nil, &BuilderError{Code: CodeBuildUnavailable, Reason: "no cache directory", Err: err}
		}
	}
	c, err := openCache(dir)
	if err != nil {
		return nil, &BuilderError{Code: CodeBuildUnavailable, Reason: "cannot open the cache directory " + dir, Err: err}
	}
	std := o.StdPackages
	if std == nil {
		std = StdPackages()
	}
	prelude := embeddedPreludePackages()
	if o.testPrelude == nil {
		o.testPrelude = embeddedPrelude()
	} else if prelude, err = preludePackages(o.testPrelude); err != nil {
		return nil, &BuilderError{Code: CodeBuildUnavailable, Reason: "cannot list the prelude's packages", Err: err}
	}
	digest, err := digestPrelude(o.testPrelude)
	if err != nil {
		return nil, &BuilderError{Code: CodeBuildUnavailable, Reason: "cannot read the prelude", Err: err}
	}
	b := &builder{
		opts: o, tc: tc, cache: c,
		std: sortedSet(std), prelude: sortedSet(prelude),
		maxBytes: o.MaxCacheBytes, slots: make(chan struct{}, maxConcurrentBuilds), checking: make(chan struct{}, 1),
		step: sandbox.StepKey{OpID: buildStepOp, StepID: fmt.Sprintf("build/%d", builderSerial.Add(1))},
	}
	if b.maxBytes <= 0 {
		b.maxBytes = defaultMaxCacheBytes
	}
	b.digest = digest
	b.archiveKey = archiveKey(tc, digest, b.std, b.prelude)
	return b, nil
}

func sortedSet(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// Toolchain returns the toolchain the builder compiles with.
func (b *builder) Toolchain() Toolchain { return b.tc }

// Warm makes the archives of the whole allowlist ready: at once when
// this or another process published them, else it builds them under the
// cache directory's cross-process lock. A host need not call it: a
// build without them builds only what its program imports (see
// archivesFor). One warm-up runs at a time per builder, detached
// from ctx and bounded by warmTimeout; concurrent callers wait for it
// within their own ctx. After a success Warm returns nil at once; after
// a failure the next call tries again.
func (b *builder) Warm(ctx context.Context) error {
	_, err := b.warm(ctx)
	return err
}

func (b *builder) warm(ctx context.Context) (*archives, error) {
	b.warmMu.Lock()
	if b.arch != nil {
		a := b.arch
		b.warmMu.Unlock()
		return a, nil
	}
	done := b.warmDone
	if done == nil {
		done = make(chan struct{})
		b.warmDone = done
		go b.runWarm(context.WithoutCancel(ctx), done)
	}
	b.warmMu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	b.warmMu.Lock()
	defer b.warmMu.Unlock()
	if b.arch != nil {
		return b.arch, nil
	}
	return nil, b.warmErr
}

// runWarm is the one running warm-up.
func (b *builder) runWarm(ctx context.Context, done chan struct{}) {
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	a, err := b.prepareArchives(ctx)
	b.warmMu.Lock()
	if err != nil {
		b.warmErr = &BuilderError{Code: CodeBuildUnavailable, Reason: "the archives could not be built", Err: err}
		b.warmDone = nil // the next caller tries again
	} else {
		b.arch = a
	}
	b.warmMu.Unlock()
	close(done)
}

func (b *builder) progress(format string, args ...any) {
	if b.opts.Progress != nil {
		b.opts.Progress(fmt.Sprintf(format, args...))
	}
}

// prepareArchives loads the published entry or builds it under the
// cross-process lock.
func (b *builder) prepareArchives(ctx context.Context) (*archives, error) {
	final := b.cache.path(cacheArchives, b.archiveKey)
	if a, ok := loadArchives(final, b.archiveKey); ok {
		b.progress("codemode: archives ready (cached in %s)", b.cache.dir)
		return a, nil
	}
	b.progress("codemode: waiting for the cache lock in %s", b.cache.dir)
	release, err := b.cache.lock(ctx)
	if err != nil {
		return nil, fmt.Errorf("taking the cache lock: %w", err)
	}
	defer release()
	if a, ok := loadArchives(final, b.archiveKey); ok {
		b.progress("codemode: archives ready (built by another builder)")
		return a, nil
	}
	start := time.Now()
	b.progress("codemode: building archives for %d packages with %s (once per toolchain and prelude)", len(b.std)+len(b.prelude), b.tc.Version)
	a, err := b.buildArchives(ctx, b.archiveKey, append(slices.Clone(b.std), b.prelude...))
	if err != nil {
		return nil, err
	}
	b.progress("codemode: archives ready in %s", time.Since(start).Round(time.Millisecond))
	return a, nil
}

// binaryKey is the content key of src under this builder's archives.
func (b *builder) binaryKey(src []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", binaryFormat, b.archiveKey, len(src))
	h.Write(src)
	return hex.EncodeToString(h.Sum(nil))
}

// Build returns p's binary: the kept one when its key was built before
// (Cached), else it compiles and links p in one broker jail and keeps
// the result. A program whose every error is an unused import,
// variable or label is repaired once (see repair.go) and rebuilt once;
// if that fails, the BuildError carries the original diagnostics. A
// program the toolchain refuses is a *BuildError; a failure outside the
// program is a *BuilderError or the broker's refusal. The build root is
// removed on every path.
func (b *builder) Build(ctx context.Context, p *Program) (*Binary, error) {
	start := time.Now()
	arch, ready, err := b.archivesFor(ctx, p)
	if err != nil {
		return nil, err
	}
	bin := &Binary{Key: b.programKey(p), Seam: Seam{Name: p.Seam.Name, Packages: slices.Clone(p.Seam.Packages)}}
	if !ready {
		bin.Waited = time.Since(start)
	}
	if path, edits, ok := b.cache.keptBinary(bin.Key); ok {
		bin.Path, bin.Edits, bin.Cached = path, edits, true
		return bin, nil
	}
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, &BuilderError{Code: tool.CodeCancelled, Reason: "the build was cancelled waiting for a slot", Err: ctx.Err()}
	}
	defer func() { <-b.slots }()

	root, err := b.cache.newScratch("build")
	if err != nil {
		return nil, &BuilderError{Code: CodeBuildUnavailable, Reason: "cannot make a build root", Err: err}
	}
	defer root.remove()
	if b.onRoot != nil {
		b.onRoot(root.dir)
	}

	enf, err := b.compileAndLink(ctx, arch, root.dir, p.Source, p.generated)
	bin.Enforcement = enf
	var be *BuildError
	if errors.As(err, &be) {
		fixed, edits, ok := repairUnused(p.Source, be.Diagnostics)
		if !ok {
			return nil, err
		}
		enf2, err2 := b.compileAndLink(ctx, arch, root.dir, fixed, p.generated)
		if err2 != nil {
			if errors.As(err2, new(*BuildError)) {
				return nil, be // the model sees its own program's errors
			}
			return nil, err2
		}
		bin.Enforcement, bin.Edits, err = enf2, edits, nil
	}
	if err != nil {
		return nil, err
	}
	built := filepath.Join(root.dir, binaryName)
	if reason := checkStatic(built); reason != "" {
		return nil, &BuildError{Diagnostics: "the linked program was refused: " + reason, Enforcement: bin.Enforcement}
	}
	b.keepGenerated(root.dir, p.generated)
	kept, err := b.cache.publishBinary(bin.Key, built, bin.Edits)
	if err != nil {
		return nil, &BuilderError{Code: CodeBuildUnavailable, Reason: "cannot keep the binary", Err: err}
	}
	bin.Path = kept
	b.cache.evict(b.maxBytes, bin.Key, time.Now())
	return bin, nil
}

// buildPolicy is the build jail's policy: network off, only the build
// root writable, GOROOT and the archive entry readable (and the system
// roots /bin/sh needs), an environment of buildEnv's names only, the
// address space and file size bounded.
func (b *builder) buildPolicy(arch *archives, root string) sandbox.Policy {
	return sandbox.Policy{
		SystemRoots:   sandbox.SystemReadableRoots(),
		ReadableRoots: []string{b.tc.GOROOT, arch.dir},
		WritableRoots: []string{root},
		Network:       sandbox.NetworkOff,
		EnvAllow:      []string{"GOROOT", "HOME", "TMPDIR", "CGO_ENABLED", "GOTOOLCHAIN"},
		Limits: sandbox.Limits{
			MemoryBytes:   buildMemoryBytes,
			FileSizeBytes: maxBinaryBytes,
		},
	}
}

// compileAndLink writes src as the root's programFileName and runs the
// compiler and the linker in one jail call, first compiling the
// generated packages the program imports (none: the plain build).
func (b *builder) compileAndLink(ctx context.Context, arch *archives, root string, src []byte, generated []generatedSource) (sandbox.Enforcement, error) {
	for _, stale := range []string{programFileName, "main.a", binaryName} {
		os.Remove(filepath.Join(root, stale))
	}
	if err := os.WriteFile(filepath.Join(root, programFileName), src, 0o600); err != nil {
		return sandbox.Enforcement{}, &BuilderError{Code: CodeBuildUnavailable, Reason: "cannot write the program", Err: err}
	}
	argv, err := b.buildArgv(arch, root, generated)
	if err != nil {
		return sandbox.Enforcement{}, &BuilderError{Code: CodeBuildUnavailable, Reason: "cannot write the generated packages", Err: err}
	}
	ex, err := b.opts.brk.Clear(ctx, sandbox.CallSpec{
		Key:            b.step,
		Argv:           argv,
		Dir:            root,
		Env:            map[string]string{"GOROOT": b.tc.GOROOT, "HOME": root, "TMPDIR": root, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local"},
		Policy:         b.buildPolicy(arch, root),
		Budget:         sandbox.Budget{MaxOutstanding: maxConcurrentBuilds},
		Timeout:        buildTimeout,
		MaxOutputBytes: maxBuildOutputBytes,
	})
	if err != nil {
		return sandbox.Enforcement{}, fmt.Errorf("codemode: the build jail: %w", err)
	}
	var out bytes.Buffer
	w := &boundedWriter{w: &out, left: maxDiagnosticBytes}
	for o := range ex.Output() {
		w.Write(o.Bytes)
	}
	s := ex.Wait()
	enf := ex.Enforcement
	switch {
	case ctx.Err() != nil:
		return enf, &BuilderError{Code: tool.CodeCancelled, Reason: "the build was cancelled", Err: ctx.Err()}
	case s.Failed != "":
		return enf, &BuilderError{Code: CodeBuildUnavailable, Reason: "the build jail could not run the toolchain: " + s.Failed}
	case s.ExitCode == 0 && s.Signal == "":
		return enf, nil
	}
	if w.cut > 0 {
		fmt.Fprintf(&out, "\n[%d more bytes of diagnostics cut at %d]\n", w.cut, maxDiagnosticBytes)
	}
	switch {
	case s.TimedOut:
		fmt.Fprintf(&out, "\n[the build was stopped after %s]\n", buildTimeout)
	case s.OutputLimited:
		fmt.Fprintf(&out, "\n[the build was stopped: its output passed %d bytes]\n", maxBuildOutputBytes)
	case s.Signal != "":
		fmt.Fprintf(&out, "\n[the build was killed by %s]\n", s.Signal)
	}
	return enf, &BuildError{Diagnostics: out.String(), Enforcement: enf}
}

// elfMachines maps GOARCH to the ELF machine its binaries carry.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM,
	"riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64, "ppc64": elf.EM_PPC64,
	"s390x": elf.EM_S390, "loong64": elf.EM_LOONGARCH, "mips64": elf.EM_MIPS, "mips64le": elf.EM_MIPS,
}

// checkStatic opens path without following links and refuses anything
// but a regular file of at most maxBinaryBytes holding a static ELF
// executable for this GOOS/GOARCH: no PT_INTERP, no PT_DYNAMIC. It
// returns the reason for a refusal, or "".
func checkStatic(path string) string {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "no linked program: " + err.Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return err.Error()
	case !fi.Mode().IsRegular():
		return "the linked program is not a regular file"
	case fi.Size() > maxBinaryBytes:
		return fmt.Sprintf("the linked program is larger than %d bytes", maxBinaryBytes)
	}
	return checkELF(f)
}

// checkELF is checkStatic's test of the content.
func checkELF(r interface {
	ReadAt([]byte, int64) (int, error)
}) string {
	ef, err := elf.NewFile(r)
	if err != nil {
		return "not an ELF file: " + err.Error()
	}
	defer ef.Close()
	if runtime.GOOS != "linux" {
		return "static ELF executables are checked on linux only"
	}
	want, ok := elfMachines[runtime.GOARCH]
	switch {
	case !ok:
		return "no ELF machine is known for " + runtime.GOARCH
	case ef.Machine != want:
		return fmt.Sprintf("ELF machine %s, want %s", ef.Machine, want)
	}
	for _, p := range ef.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			return "the program has an interpreter (PT_INTERP): it is dynamically linked"
		case elf.PT_DYNAMIC:
			return "the program has a dynamic section (PT_DYNAMIC)"
		}
	}
	if ef.Type != elf.ET_EXEC {
		return fmt.Sprintf("ELF type %s, want a static executable (ET_EXEC)", ef.Type)
	}
	return ""
}

package codemode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestFindToolchainOnPath(t *testing.T) {
	t.Parallel()
	tc, err := findToolchain(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if tc.GOROOT != filepath.Clean(runtime.GOROOT()) {
		t.Errorf("GOROOT %q, want %q", tc.GOROOT, runtime.GOROOT())
	}
	if minor, ok := goMinor(tc.Version); !ok || minor < minGoMinor {
		t.Errorf("version %q", tc.Version)
	}
	again, err := findToolchain(context.Background(), tc.GOROOT)
	if err != nil || again != tc {
		t.Fatalf("findToolchain(%q) = %+v, %v; want %+v", tc.GOROOT, again, err, tc)
	}
}

// fakeGOROOT lays out a GOROOT with executable go, compile and link
// stand-ins and the given VERSION file ("" for none).
func fakeGOROOT(t *testing.T, version string) string {
	t.Helper()
	root := t.TempDir()
	tc := Toolchain{GOROOT: root}
	for _, p := range []string{tc.goBinary(), tc.compileBinary(), tc.linkBinary()} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho go1.20\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if version != "" {
		if err := os.WriteFile(filepath.Join(root, "VERSION"), []byte(version+"\ntime 2026-01-01T00:00:00Z\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestFindToolchainRefuses(t *testing.T) {
	t.Parallel()
	missingLink := fakeGOROOT(t, "go1.26.1")
	if err := os.Remove(Toolchain{GOROOT: missingLink}.linkBinary()); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, goroot, want string }{
		{"absent", filepath.Join(t.TempDir(), "none"), "has no executable"},
		{"relative", "usr/local/go", "not absolute"},
		{"old", fakeGOROOT(t, "go1.25.7"), "older than go1.26"},
		{"unreadable version", fakeGOROOT(t, "version unknown"), "cannot read the version"},
		{"old by go env", fakeGOROOT(t, ""), "older than go1.26"},
		{"no linker", missingLink, "has no executable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := findToolchain(context.Background(), tt.goroot)
			var be *BuilderError
			if !errors.As(err, &be) || be.Code != CodeToolchainUnavailable {
				t.Fatalf("error %v, want a BuilderError with code %s", err, CodeToolchainUnavailable)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || !strings.Contains(msg, "install Go 1.26 or newer") {
				t.Fatalf("message %q lacks %q or the install hint", msg, tt.want)
			}
		})
	}
	// Accepted: a fake toolchain of the right version (a control for the
	// refusals above, which differ from it in one respect each).
	if _, err := findToolchain(context.Background(), fakeGOROOT(t, "go1.26.1")); err != nil {
		t.Fatalf("a go1.26.1 layout was refused: %v", err)
	}
}

func TestFindToolchainWithoutGoOnPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findToolchain(context.Background(), "")
	var be *BuilderError
	if !errors.As(err, &be) || be.Code != CodeToolchainUnavailable || !strings.Contains(err.Error(), "no go command on PATH") {
		t.Fatalf("error %v", err)
	}
}

func TestGoMinor(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]int{
		"go1.26.8": 26, "go1.26": 26, "go1.27rc1": 27, "devel go1.28-abcdef Mon Jan 1": 28, "go1.9": 9,
	} {
		if got, ok := goMinor(v); !ok || got != want {
			t.Errorf("goMinor(%q) = %d, %v; want %d", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "go2.0", "devel +abc", "go1.x"} {
		if got, ok := goMinor(v); ok {
			t.Errorf("goMinor(%q) = %d, want no version", v, got)
		}
	}
}

// TestNewBuilderChecksTheToolchain: a host's toolchain option is checked
// like a found one, and a version it names must be the toolchain's.
func TestNewBuilderChecksTheToolchain(t *testing.T) {
	t.Parallel()
	brk := testBroker(t)
	tc, err := findToolchain(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for name, opt := range map[string]Toolchain{
		"old":           {GOROOT: fakeGOROOT(t, "go1.25.7")},
		"other version": {GOROOT: tc.GOROOT, Version: "go1.99.0"},
		"missing":       {GOROOT: filepath.Join(t.TempDir(), "none"), Version: "go1.26.0"},
	} {
		_, err := newBuilder(BuilderOptions{Toolchain: opt, CacheDir: t.TempDir(), brk: brk})
		var be *BuilderError
		if !errors.As(err, &be) || be.Code != CodeToolchainUnavailable {
			t.Errorf("%s: error %v, want code %s", name, err, CodeToolchainUnavailable)
		}
	}
	b, err := newBuilder(BuilderOptions{Toolchain: tc, CacheDir: t.TempDir(), brk: brk})
	if err != nil || b.Toolchain() != tc {
		t.Fatalf("the found toolchain named exactly: %v", err)
	}
}

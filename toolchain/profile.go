package toolchain

import (
	"os"
	"path/filepath"
	"slices"
)

// A Profile is what one language's tools need inside the jail.
type Profile struct {
	// Name names the profile to people: "go", "npm", "pip".
	Name string
	// Env holds the variables every command of the session is offered.
	// A variable the host already sets keeps the host's value.
	Env map[string]string
	// ReadOnly are host directories commands read but never write (the
	// host's module download cache, the Go root).
	ReadOnly []string
	// Caches are directories commands write, outside every workspace;
	// Prepare makes them.
	Caches []string
	// Notes say what detection left out of the profile and why, for the
	// host's log (a proxy carrying credentials, say).
	Notes []string
}

// Options configure Detect. The zero value detects on DefaultPath with
// caches under DefaultCacheDir.
type Options struct {
	// CacheDir holds every profile's caches. Empty means DefaultCacheDir.
	// Sessions that share it share their caches: give each trust domain
	// its own.
	CacheDir string
	// Path is the search path the tools are found on, as in PATH: the one
	// commands get. Empty means DefaultPath.
	Path string
}

// DefaultPath is the search path Detect looks on when Options.Path is
// empty: the one a plane's commands get by default.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/go/bin"

// cacheSub is where DefaultCacheDir lies in the user cache directory.
const cacheSub = "loom/toolchains"

// DefaultCacheDir is <user cache>/loom/toolchains.
func DefaultCacheDir() (string, error) {
	c, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(c, cacheSub), nil
}

// Detect returns the profile of every toolchain found on o.Path, in a
// fixed order (go, npm, pip). A toolchain that is absent, or whose probe
// fails, has no profile; Detect never fails for it.
func Detect(o Options) ([]Profile, error) {
	if o.CacheDir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		o.CacheDir = d
	}
	if o.Path == "" {
		o.Path = DefaultPath
	}
	var out []Profile
	for _, detect := range []func(Options) (Profile, bool){goProfile, npmProfile, pipProfile} {
		if p, ok := detect(o); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// Prepare makes every cache directory of ps (private to the user) and
// returns ps with each cache and read-only directory resolved; read-only
// directories that are missing are left out.
func Prepare(ps []Profile) ([]Profile, error) {
	out := make([]Profile, 0, len(ps))
	for _, p := range ps {
		q := Profile{Name: p.Name, Env: p.Env, Notes: p.Notes}
		for _, c := range p.Caches {
			if err := os.MkdirAll(c, 0o700); err != nil {
				return nil, err
			}
			r, err := filepath.EvalSymlinks(c)
			if err != nil {
				return nil, err
			}
			q.Caches = append(q.Caches, r)
		}
		for _, d := range p.ReadOnly {
			if r, err := filepath.EvalSymlinks(d); err == nil && !slices.Contains(q.ReadOnly, r) {
				q.ReadOnly = append(q.ReadOnly, r)
			}
		}
		out = append(out, q)
	}
	return out, nil
}

// lookPath finds the executable name on path (a PATH value), or "".
func lookPath(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		f := filepath.Join(dir, name)
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return f
		}
	}
	return ""
}

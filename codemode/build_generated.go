package codemode

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// programKey is p's binary key: binaryKey of its source, and for a
// program importing generated packages (cap/mcp/...) that key mixed with
// their sources' digest, so the same schemas give the same key and
// other schemas another.
func (b *builder) programKey(p *Program) string {
	key := b.binaryKey(p.Source)
	if len(p.generated) == 0 {
		return key
	}
	sum := sha256.Sum256([]byte(key + "\x00generated\x00" + sourceDigest(p.generated)))
	return hex.EncodeToString(sum[:])
}

// cacheGenerated holds the compiled generated packages in a cache
// directory: generated/<key>.a, key digesting the archive key, the import
// path and the source. It is not evicted: an entry changes only with a
// server's schemas.
const cacheGenerated = "generated"

// generatedArchive is where g's compiled archive is kept.
func (b *builder) generatedArchive(g generatedSource) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", b.archiveKey, g.path, len(g.src))
	h.Write(g.src)
	return b.cache.path(cacheGenerated, hex.EncodeToString(h.Sum(nil))+".a")
}

// generatedObj is the build root's name of the i-th generated archive.
func generatedObj(i int) string { return fmt.Sprintf("generated_%d.a", i) }

// buildArgv is the build jail's command. Without generated packages it
// is buildScript over the archives' importcfgs. With them, each is
// linked into root from the cache when kept there, else written into
// root and compiled first (against the link importcfg, which holds
// cap/internal/client); the program is compiled and linked against
// importcfgs written into root: the archives' plus one line per
// generated package.
func (b *builder) buildArgv(arch *archives, root string, generated []generatedSource) ([]string, error) {
	compileCfg, linkCfg, script := arch.compileCfg, arch.linkCfg, buildScript
	if len(generated) > 0 {
		var lines, steps strings.Builder
		for i, g := range generated {
			src, obj := fmt.Sprintf("generated_%d.go", i), generatedObj(i)
			fmt.Fprintf(&lines, "packagefile %s=%s\n", g.path, filepath.Join(root, obj))
			os.Remove(filepath.Join(root, obj))
			if fi, err := os.Lstat(b.generatedArchive(g)); err == nil && fi.Mode().IsRegular() && linkOrCopy(b.generatedArchive(g), filepath.Join(root, obj)) == nil {
				continue
			}
			if err := os.WriteFile(filepath.Join(root, src), g.src, 0o600); err != nil {
				return nil, err
			}
			fmt.Fprintf(&steps, `"$1" `+archiveGCFlags+` -complete -importcfg "$4" -p %s -pack -trimpath="$5" -o %s %s && `, g.path, obj, src)
		}
		compileCfg, linkCfg = filepath.Join(root, "compile.cfg"), filepath.Join(root, "link.cfg")
		for dst, src := range map[string]string{compileCfg: arch.compileCfg, linkCfg: arch.linkCfg} {
			base, err := os.ReadFile(src)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(dst, append(base, lines.String()...), 0o600); err != nil {
				return nil, err
			}
		}
		script = steps.String() + buildScript
	}
	return []string{"/bin/sh", "-c", script, "build", b.tc.compileBinary(), b.tc.linkBinary(), compileCfg, linkCfg, root}, nil
}

// keepGenerated keeps the generated archives a successful build in root
// compiled, for the next program importing them. A failure to keep one
// costs only its compile next time.
func (b *builder) keepGenerated(root string, generated []generatedSource) {
	if len(generated) == 0 || os.MkdirAll(b.cache.path(cacheGenerated), 0o700) != nil {
		return
	}
	for i, g := range generated {
		final := b.generatedArchive(g)
		if _, err := os.Lstat(final); err == nil {
			continue
		}
		tmp := final + ".tmp-" + filepath.Base(root)
		if linkOrCopy(filepath.Join(root, generatedObj(i)), tmp) == nil {
			if os.Rename(tmp, final) != nil {
				os.Remove(tmp)
			}
		}
	}
}

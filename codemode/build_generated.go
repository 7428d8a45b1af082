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

// buildArgv is the build jail's command. Without generated packages it
// is buildScript over the archives' importcfgs. With them, each is
// written into root and compiled first (against the link importcfg,
// which holds cap/internal/client), and the program is compiled and
// linked against importcfgs written into root: the archives' plus one
// line per generated package.
func (b *builder) buildArgv(arch *archives, root string, generated []generatedSource) ([]string, error) {
	compileCfg, linkCfg, script := arch.compileCfg, arch.linkCfg, buildScript
	if len(generated) > 0 {
		var lines, steps strings.Builder
		for i, g := range generated {
			src, obj := fmt.Sprintf("generated_%d.go", i), fmt.Sprintf("generated_%d.a", i)
			if err := os.WriteFile(filepath.Join(root, src), g.src, 0o600); err != nil {
				return nil, err
			}
			fmt.Fprintf(&lines, "packagefile %s=%s\n", g.path, filepath.Join(root, obj))
			fmt.Fprintf(&steps, `"$1" -complete -importcfg "$4" -p %s -pack -trimpath="$5" -o %s %s && `, g.path, obj, src)
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

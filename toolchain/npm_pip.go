package toolchain

import "path/filepath"

// npmProfile gives npm a persistent cache of Loom's own and turns its
// update check off (it would reach the network at every command).
func npmProfile(o Options) (Profile, bool) {
	if lookPath("npm", o.Path) == "" {
		return Profile{}, false
	}
	cache := filepath.Join(o.CacheDir, "npm")
	return Profile{
		Name: "npm",
		Env: map[string]string{
			"npm_config_cache":           cache,
			"npm_config_update_notifier": "false",
		},
		Caches: []string{cache},
	}, true
}

// pipProfile gives pip and uv persistent caches of Loom's own and turns
// pip's version check off.
func pipProfile(o Options) (Profile, bool) {
	if lookPath("pip3", o.Path) == "" && lookPath("pip", o.Path) == "" && lookPath("uv", o.Path) == "" {
		return Profile{}, false
	}
	pip, uv := filepath.Join(o.CacheDir, "pip"), filepath.Join(o.CacheDir, "uv")
	return Profile{
		Name: "pip",
		Env: map[string]string{
			"PIP_CACHE_DIR":                 pip,
			"PIP_DISABLE_PIP_VERSION_CHECK": "1",
			"UV_CACHE_DIR":                  uv,
		},
		Caches: []string{pip, uv},
	}, true
}

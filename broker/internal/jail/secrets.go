package jail

import (
	"path/filepath"
	"slices"

	"github.com/agentloom/loom/sandbox"
)

// systemSecrets are the host files a jailed command never reads, even
// under a system or readable root: password and group shadows (and their
// backups), sudo's rules, SSH host private keys, TLS private keys, the
// Kerberos keytab and old password hashes. Patterns follow filepath.Match.
var systemSecrets = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d",
	"/etc/ssh/ssh_host_*_key",
	"/etc/ssl/private",
	"/etc/krb5.keytab",
	"/etc/security/opasswd",
}

// homeSecrets are the credentials, relative to a home directory, a jailed
// command never reads when a root it was given covers that home: SSH keys
// and agents, cloud and cluster credentials, registry and package tokens,
// GnuPG, netrc and stored git or database passwords.
var homeSecrets = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube",
	".docker/config.json", ".config/gh", ".config/hub",
	".netrc", ".git-credentials", ".config/git/credentials", ".pgpass",
	".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
	".vault-token", ".password-store", ".local/share/keyrings",
}

// SystemSecrets returns a copy of systemSecrets (broker.MaskedSystemSecrets).
func SystemSecrets() []string { return slices.Clone(systemSecrets) }

// HomeSecrets returns a copy of homeSecrets (broker.MaskedHomeSecrets).
func HomeSecrets() []string { return slices.Clone(homeSecrets) }

// SecretGlobs returns the system secrets given as glob patterns (a
// match made later is a change in its directory).
func SecretGlobs() []string {
	var out []string
	for _, s := range systemSecrets {
		if hasMeta(s) {
			out = append(out, s)
		}
	}
	return out
}

// secretTargets lists the secrets to hide for a command given every root
// its jail shows and the home directories of the host: each system secret
// (expanded by glob) and each home secret of a covered home, when some
// root covers it and no root is the secret itself or lies inside it (the
// host listed that one on purpose). glob expands a pattern against the
// host's filesystem (filepath.Glob); the result is sorted and free of
// duplicates, and may name paths that do not exist.
func secretTargets(roots, homes []string, glob func(string) []string) []string {
	clean := make([]string, 0, len(roots))
	for _, r := range roots {
		if filepath.IsAbs(r) {
			clean = append(clean, filepath.Clean(r))
		}
	}
	var cands []string
	for _, s := range systemSecrets {
		if hasMeta(s) {
			if coveredByClean(clean, filepath.Dir(s)) {
				cands = append(cands, glob(s)...)
			}
			continue
		}
		cands = append(cands, s)
	}
	for _, h := range homes {
		if !filepath.IsAbs(h) {
			continue
		}
		h = filepath.Clean(h)
		// A home no root reaches into holds nothing to hide.
		reached := false
		for _, r := range clean {
			if coversClean(r, h) || coversClean(h, r) {
				reached = true
				break
			}
		}
		if !reached {
			continue
		}
		for _, s := range homeSecrets {
			cands = append(cands, filepath.Join(h, s))
		}
	}
	var out []string
	for _, c := range cands {
		c = filepath.Clean(c)
		if !coveredByClean(clean, c) {
			continue
		}
		listed := false
		for _, r := range clean {
			if coversClean(c, r) {
				listed = true
			}
		}
		if !listed {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// coversClean is Covers for two clean absolute paths, without cleaning
// (and so without allocating).
func coversClean(root, p string) bool {
	if root == p || root == "/" {
		return true
	}
	return len(p) > len(root) && p[len(root)] == '/' && p[:len(root)] == root
}

func coveredByClean(roots []string, p string) bool {
	for _, r := range roots {
		if coversClean(r, p) {
			return true
		}
	}
	return false
}

func coveredByAny(roots []string, p string) bool {
	for _, r := range roots {
		if sandbox.Covers(r, p) {
			return true
		}
	}
	return false
}

func hasMeta(s string) bool {
	for _, c := range s {
		if c == '*' || c == '?' || c == '[' {
			return true
		}
	}
	return false
}

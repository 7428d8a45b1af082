package broker

import "github.com/agentloom/loom/broker/internal/jail"

// MaskedSystemSecrets returns the host paths (filepath.Match patterns)
// the Linux jail hides from every command, whatever root covers them:
// /etc/shadow, /etc/shadow-, /etc/gshadow, /etc/gshadow-, /etc/sudoers,
// /etc/sudoers.d, /etc/ssh/ssh_host_*_key, /etc/ssl/private,
// /etc/krb5.keytab and /etc/security/opasswd. A hidden file reads as
// empty, a hidden directory as empty; neither can be written. Listing
// such a path itself (or a path inside it) as a root is the one way to
// show it to a command.
func MaskedSystemSecrets() []string { return jail.SystemSecrets() }

// MaskedHomeSecrets returns the credential paths, relative to a home
// directory, the Linux jail hides under every home a root covers (a home
// is a directory in the host's /etc/passwd, or the command's own HOME):
// .ssh, .gnupg, .aws, .azure, .config/gcloud, .kube, .docker/config.json,
// .config/gh, .config/hub, .netrc, .git-credentials,
// .config/git/credentials, .pgpass, .npmrc, .pypirc, .cargo/credentials,
// .cargo/credentials.toml, .vault-token, .password-store and
// .local/share/keyrings. As with MaskedSystemSecrets, a root that is the
// secret itself (or lies inside it) shows it.
func MaskedHomeSecrets() []string { return jail.HomeSecrets() }

#!/bin/sh
# Installs the third-party MCP servers mcpclient's tests run jailed
# (@modelcontextprotocol/server-everything and server-filesystem, pinned in
# package-lock.json) into node_modules here, outside every test workspace,
# with the machine's Node.js and npm. npm_test.go runs them when
# node_modules is present, and fails instead of skipping when
# LOOM_REQUIRE_MCP_NPM_SERVER=1 is set and it is not.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
command -v node >/dev/null || { echo "install.sh: node is not installed" >&2; exit 1; }
command -v npm >/dev/null || { echo "install.sh: npm is not installed" >&2; exit 1; }
npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
for p in server-everything server-filesystem; do
	test -f "$here/node_modules/@modelcontextprotocol/$p/dist/index.js" || { echo "install.sh: $p did not install" >&2; exit 1; }
	echo "npmservers: @modelcontextprotocol/$p $(node -p "require('$here/node_modules/@modelcontextprotocol/$p/package.json').version") ready"
done

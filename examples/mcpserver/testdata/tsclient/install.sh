#!/bin/sh
# Installs the reference TypeScript MCP client (@modelcontextprotocol/sdk)
# next to client.mjs, with the machine's Node.js and npm. main_test.go runs
# client.mjs when node_modules is present, and fails instead of skipping
# when LOOM_REQUIRE_NODE_CLIENT=1 is set and it is not.
set -eu
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "install.sh: node is not installed" >&2; exit 1; }
command -v npm >/dev/null || { echo "install.sh: npm is not installed" >&2; exit 1; }
if [ -f package-lock.json ]; then
	npm ci --no-audit --no-fund --loglevel=error
else
	npm install --no-audit --no-fund --loglevel=error
fi
node -e 'import("@modelcontextprotocol/sdk/client/index.js").then(() => console.log("tsclient: @modelcontextprotocol/sdk ready"))'

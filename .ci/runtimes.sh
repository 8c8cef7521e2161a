# Sourced by .ci/run: Bun and Deno for their test legs, pinned, installed from the npm registry (the packages that
# their own npm wrappers pick for linux-x64) into a cache outside the checkout, as .ci/node.sh installs Node.

RT_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/idemkey-rt"
BUN_VERSION=1.4.5
DENO_VERSION=2.9.6

# Prints the path of the runtime's binary (bun or deno), installing its pinned package into the cache when missing
# or at another version.
runtime_bin() {
  local name=$1 pkg version bin
  case $name in
    bun) pkg=@oven/bun-linux-x64 version=$BUN_VERSION bin="$RT_CACHE/$name/node_modules/$pkg/bin/bun" ;;
    deno) pkg=@deno/linux-x64-glibc version=$DENO_VERSION bin="$RT_CACHE/$name/node_modules/$pkg/deno" ;;
    *) return 1 ;;
  esac
  # One prefix per runtime: an npm install --no-save into a shared prefix removes what the other one installed.
  if [ ! -x "$bin" ] || [ "$(node -p "require('$RT_CACHE/$name/node_modules/$pkg/package.json').version" 2>/dev/null)" != "$version" ]; then
    mkdir -p "$RT_CACHE/$name" &&
      npm install --prefix "$RT_CACHE/$name" --no-save --no-audit --no-fund --loglevel=error "$pkg@$version" >&2 || return 1
  fi
  echo "$bin"
}

# Runs Vitest on the runtime with test/runtimes/vitest.config.ts, which writes .tmp/vitest-report-<name>.json.
runtime_test() {
  local name=$1 bin=$2
  case $name in
    bun) IDEMKEY_RUNTIME=bun "$bin" --bun node_modules/vitest/vitest.mjs run --config test/runtimes/vitest.config.ts ;;
    deno)
      IDEMKEY_RUNTIME=deno DENO_NO_UPDATE_CHECK=1 "$bin" run -A --node-modules-dir=manual \
        node_modules/vitest/vitest.mjs run --config test/runtimes/vitest.config.ts
      ;;
  esac
}

# Make sure Debian's Chromium is installed for the browser tests (idempotent; sourced by the scripts).
# If it cannot be installed the browser tests fail loudly; MCP_SKIP_BROWSER_TESTS=1 skips them instead.
MCP_CHROMIUM="${MCP_CHROMIUM:-/usr/bin/chromium}"
if [ "${MCP_SKIP_BROWSER_TESTS:-}" != "1" ] && [ ! -x "$MCP_CHROMIUM" ]; then
  echo "== installing Debian's chromium for the browser tests ==" >&2
  SUDO=""
  if [ "$(id -u)" != "0" ]; then SUDO="sudo -n"; fi
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium; } >&2; then
    echo "!! could not install chromium: the browser tests will fail (MCP_SKIP_BROWSER_TESTS=1 skips them)" >&2
  fi
fi

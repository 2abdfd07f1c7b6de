# Shared set-up for the scripts: a virtual environment with the project installed (idempotent).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
EXTRA="${1:-}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.installed${EXTRA:+-$EXTRA}"
fresh() { [ -f "$1" ] && ! [ pyproject.toml -nt "$1" ]; }
# The dev install holds the plain one: a script that needs only the platform does not reinstall it.
if ! fresh "$stamp" && ! { [ -z "$EXTRA" ] && fresh .venv/.installed-dev; }; then
  .venv/bin/pip install --quiet --upgrade pip
  if [ -n "$EXTRA" ]; then
    .venv/bin/pip install --quiet -e ".[$EXTRA]"
  else
    .venv/bin/pip install --quiet -e .
  fi
  touch "$stamp"
fi
export PATH="$ROOT/.venv/bin:$PATH"

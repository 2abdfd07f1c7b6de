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
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/pip install --quiet --upgrade pip
  if [ -n "$EXTRA" ]; then
    .venv/bin/pip install --quiet -e ".[$EXTRA]"
  else
    .venv/bin/pip install --quiet -e .
  fi
  touch "$stamp"
fi
export PATH="$ROOT/.venv/bin:$PATH"

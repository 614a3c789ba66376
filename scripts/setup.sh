#!/usr/bin/env bash
# Create .venv once and install memsim with the pinned dependency set (requirements.lock).
# Re-running is cheap: it reinstalls only when requirements.lock or pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "memsim needs Python >= 3.11, found " + sys.version.split()[0])'
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $("$PY" --version)" >&2
  "$PY" -m venv .venv
fi
stamp=.venv/.memsim-installed
want=$(cat requirements.lock pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing pinned dependencies (requirements.lock) ..." >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -c requirements.lock -e ".[test]"
  echo "$want" > "$stamp"
fi

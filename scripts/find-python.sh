#!/bin/sh
# Print the path of a Python >= 3.12 interpreter, or explain in one sentence what to install.
# Honours $PYTHON; then tries the usual names (pyenv reads .python-version), then pyenv's versions.
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
for c in "${PYTHON:-}" python3.12 python3.13 python3.14 python3 python; do
  [ -n "$c" ] || continue
  p=$(command -v "$c" 2>/dev/null) || continue
  if ok "$p"; then "$p" -c 'import sys; print(sys.executable)'; exit 0; fi
done
for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
  if [ -x "$p" ] && ok "$p"; then echo "$p"; exit 0; fi
done
echo "The JAX path needs Python 3.12 or newer (JAX 0.12 requires it) and none was found: install Python 3.12 (for example 'pyenv install 3.12' or your system's python3.12 package), or point PYTHON=/path/to/python3.12 at one, then run make again." >&2
exit 1

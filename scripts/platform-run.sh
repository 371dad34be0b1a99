#!/bin/sh
# Run `jaxpath platform`'s plan on the accelerator of this host, and the same plan on its CPU as the control.
#
#   sh scripts/platform-run.sh PLAN.json OUTDIR [CHAPTER ...]
#
# Made for hosts like the TPU machines: their own Python and JAX, no network, no Jupyter kernel (no TCP), one
# process at a time on the chip. What the chapters import beside JAX (flax, optax, orbax-checkpoint, matplotlib,
# IPython, nbformat, flatbuffers) is installed from the host's own package index (PIP_INDEX, default
# file:///opt/pypi/simple) into a folder appended to PYTHONPATH, so the host's JAX stays first. The control runs
# beside the accelerator's run (JAX_PLATFORMS=cpu keeps it off the chip). Then, on the course's pinned stack:
#   jaxpath platform report OUTDIR/accel.json OUTDIR/control.json
set -eu
plan=$1; out=$2; shift 2
mkdir -p "$out"
py=${PYTHON:-python3.11}   # the host's own Python (not one a .python-version file picks)
site=${PLATFORM_SITE:-/tmp/jaxpath-platform-site}
if [ ! -d "$site/flax" ]; then
  PIP_CONFIG_FILE=/dev/null "$py" -m pip install --isolated -q --only-binary=:all: \
    --index-url "${PIP_INDEX:-file:///opt/pypi/simple}" --target "$site" \
    flax optax orbax-checkpoint matplotlib ipython nbformat flatbuffers >"$out/pip.log" 2>&1 || { tail -20 "$out/pip.log"; exit 1; }
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$site" PYTHONUNBUFFERED=1
runner="$(dirname "$0")/../jaxpath/authoring/platforms/onchip.py"
chapters=""
[ $# -gt 0 ] && chapters="--chapters $*"
# shellcheck disable=SC2086
JAX_PLATFORMS=cpu "$py" "$runner" "$plan" "$out/control.json" $chapters >"$out/control.log" 2>&1 &
control=$!
# shellcheck disable=SC2086
"$py" "$runner" "$plan" "$out/accel.json" $chapters 2>&1 | tee "$out/accel.log"
wait $control || true

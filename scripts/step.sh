#!/bin/sh
# `make`'s steps: `sh scripts/step.sh NAME COMMAND...` prints the command, runs it, and on success appends
# "NAME SECONDS" to build/.make-times, which scripts/make-summary.py prints (and removes) at the end of `make`.
name=$1; shift
echo "$*"
t0=$(date +%s)
"$@" || exit $?
mkdir -p build && echo "$name $(( $(date +%s) - t0 ))" >> build/.make-times

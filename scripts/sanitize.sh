#!/bin/bash
# Builds seqcl with AddressSanitizer + UndefinedBehaviorSanitizer on the host path
# alone (-Dopencl=disabled, which also proves the library builds without OpenCL)
# and runs the test suite with leak checking on. GCC 12 emits spurious warnings
# under ASan, so this build does not use -Werror.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-asan}
[ -d "$dir" ] || meson setup "$dir" -Db_sanitize=address,undefined -Db_lundef=false \
  -Dopencl=disabled -Dwerror=false -Dbuildtype=debug
ninja -C "$dir"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The learning run (suite "learn") is minutes of the same code paths the short
# training tests cover; under a debug ASan build it would dominate CI.
# The Python suite loads the library into an interpreter that is not built with
# ASan, whose runtime must come first in the process; it runs in the main test
# run instead, against the same C code the other suites check here.
meson test -C "$dir" --print-errorlogs --no-suite learn --no-suite python

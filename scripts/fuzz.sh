#!/bin/bash
# Builds the libFuzzer targets (clang, ASan + UBSan, host path only) in a
# separate build folder and runs each for a bounded time on a copy of its seed
# corpus, so fuzz/corpus/ is left as it is unless --update-corpus is given (new
# inputs that add coverage are then merged back). Fails on any crash, leak,
# timeout or violated invariant, keeping the input that triggered it.
#
#   scripts/fuzz.sh [-t SECONDS] [--update-corpus] [TARGET...]
#
# TARGET: safetensors config tokens selector checkpoint vocab (default: all, one
# after the other).
# SECONDS per target: -t, else $FUZZ_SECONDS, else 60.
# Environment: FUZZ_BUILD_DIR (build-fuzz), FUZZ_JOBS (ninja -j, 2),
# FUZZ_ARGS (extra libFuzzer flags, e.g. "-max_len=65536").
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=${FUZZ_SECONDS:-60}
update=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    -t|--time) seconds=$2; shift 2 ;;
    --update-corpus) update=1; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    safetensors|config|tokens|selector|checkpoint|vocab) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(safetensors config tokens selector checkpoint vocab)
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: seconds must be a number" >&2; exit 2 ;; esac

build=${FUZZ_BUILD_DIR:-build-fuzz}
if [ ! -f "$build/build.ninja" ]; then
  CC=clang meson setup "$build" --werror -Dfuzz=true -Dtests=false -Db_lundef=false \
    -Dopencl=disabled -Dbuildtype=debugoptimized >/dev/null
fi
ninja -C "$build" -j"${FUZZ_JOBS:-2}" "${targets[@]/#/fuzz/fuzz_}" >/dev/null

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

work=$(mktemp -d "${TMPDIR:-/tmp}/seqcl-fuzz.XXXXXX")
failed=()
printf '%-12s %10s %8s %8s %8s  %s\n' target execs exec/s cov ft result
for t in "${targets[@]}"; do
  dir="$work/$t"
  mkdir -p "$dir/corpus" "$dir/crashes"
  cp -R "fuzz/corpus/$t/." "$dir/corpus/"
  # Replay the regressions too, so a fixed crash that comes back is caught at once.
  if [ -d "fuzz/regressions/$t" ]; then
    find "fuzz/regressions/$t" -maxdepth 1 -type f ! -name '.*' -exec cp {} "$dir/corpus/" \;
  fi
  dict=()
  [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="fuzz/dict/$t.dict")
  rc=0
  # -close_fd_mask=2: the readers' warnings (unknown config keys) would flood
  # stderr; libFuzzer and the sanitizers keep their own copy of it.
  # shellcheck disable=SC2086
  "$build/fuzz/fuzz_$t" "$dir/corpus" "${dict[@]}" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -close_fd_mask=2 \
    -artifact_prefix="$dir/crashes/" ${FUZZ_ARGS:-} >"$dir/log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$dir/log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  if [ $rc -eq 0 ]; then
    result=ok
    if [ $update -eq 1 ]; then
      "$build/fuzz/fuzz_$t" -merge=1 "fuzz/corpus/$t" "$dir/corpus" "${dict[@]}" \
        -close_fd_mask=2 >>"$dir/log" 2>&1
      result="ok, corpus now $(find "fuzz/corpus/$t" -type f | wc -l) files"
    fi
  else
    result="FAILED (exit $rc): $(ls "$dir/crashes" | tr '\n' ' ')"
    failed+=("$t")
  fi
  printf '%-12s %10s %8s %8s %8s  %s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "$result"
done

if [ ${#failed[@]} -gt 0 ]; then
  for t in "${failed[@]}"; do
    echo
    echo "=== $t: the end of $work/$t/log"
    grep -v "unknown key" "$work/$t/log" | tail -40
    echo "Inputs: $work/$t/crashes/ — reproduce with $build/fuzz/fuzz_$t FILE;"
    echo "after fixing, copy them to fuzz/regressions/$t/ (replayed by meson test)."
  done
  exit 1
fi
rm -rf "$work"

# Shared by the CLI test scripts (sourced): failure counting and the one
# "exit status + every word named on stderr" check of a seqcl subcommand.
# The sourcing script sets seqcl (the binary) and runs in its work folder.
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect_sub SUBCOMMAND NAME STATUS "WORD|WORD" ARGS...: runs seqcl SUBCOMMAND
# ARGS with stdout in ./out and stderr in ./err; checks the exit status and
# that every word appears in stderr
expect_sub() {
  local sub=$1 name=$2 want=$3 words=$4
  shift 4
  "$seqcl" "$sub" "$@" >out 2>err </dev/null
  local got=$?
  [ "$got" = "$want" ] || { fail "$name: exit $got, want $want: $(head -c 400 err)"; return; }
  local IFS='|'
  for w in $words; do
    grep -qF -- "$w" err || fail "$name: stderr does not name '$w': $(head -c 400 err)"
  done
}

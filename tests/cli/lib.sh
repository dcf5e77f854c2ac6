# Shared by the CLI test scripts (sourced): failure counting, the one
# "exit status + every word named on stderr" check of a seqcl subcommand, the
# work folder (enter_work) and a small config writer. The sourcing script
# sets seqcl (the binary) first.
failures=0
# the Python of the scripts' JSON and number checks
py=$(command -v python3)

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

# enter_work TAG: a fresh folder /tmp/seqcl-TAG-XXXXXX (removed on exit) as
# the current folder, every seqcl run there on the host path. Source lib.sh
# and call this before anything else changes folder ($0 may be relative).
enter_work() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/seqcl-$1-XXXXXX") || exit 1
  trap 'rm -rf "$work"' EXIT
  cd "$work" || exit 1
  export SEQCL_DEVICE=cpu
}

# bi_additive_config FILE VOCAB BOS EOS HIDDEN: a small trainable config, one
# vocabulary of VOCAB ids on both sides, embed 8, a one-layer bidirectional
# encoder of HIDDEN per direction, a bridge into a decoder of HIDDEN, additive
# attention of dim HIDDEN, output over the state.
bi_additive_config() {
  cat >"$1" <<JSON
{"format": "seqcl.seq2seq", "version": 1, "src_vocab_size": $2, "tgt_vocab_size": $2,
 "embed_dim": 8, "bos_id": $3, "eos_id": $4, "pad_id": null,
 "encoder": {"hidden_size": $5, "num_layers": 1, "bidirectional": true},
 "decoder": {"hidden_size": $5, "init": "bridge"},
 "attention": {"score": "additive", "dim": $5}, "output": "state"}
JSON
}

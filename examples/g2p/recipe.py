#!/usr/bin/env python3
"""Grapheme-to-phoneme on the CMU Pronouncing Dictionary with seqcl.

One script: finds (or installs) Debian's festlex-cmu, turns Festival's
lexicon into word/pronunciation text files with a deterministic split, trains
three attention GRUs (seeds SEED, SEED+100, SEED+200) with `seqcl train
--text chars,words`, and evaluates each alone and the three as an ensemble
(`seqcl eval --model A --model B --model C`), greedy and beam search,
printing WER, PER and the wall times.

    examples/g2p/recipe.py --work /tmp/g2p                  # the default recipe
    examples/g2p/recipe.py --work /tmp/g2p --ensemble 1       # one model (a third of the time)
    examples/g2p/recipe.py --work /tmp/g2p --enc-hidden 160 --dec-hidden 320 --epochs 20
                                                            # another model or schedule
    examples/g2p/recipe.py --work /tmp/g2p --quick          # CI: a few hundred words
    examples/g2p/recipe.py --work /tmp/g2p --prepare-only   # data files only

Data. Festival's `cmudict-0.4.out` is CMUdict 0.4 in Lisp form, one entry a
line: ("word" POS (((syllable phones) stress) ...)). Entries repeat a word
for other parts of speech ("record" n / v): the first one is kept, as CMUdict
users keep the first pronunciation. Festival's 40 phones are the 39 ARPAbet
phonemes of the literature plus `ax` (schwa), which CMUdict writes `ah`:
`ax` -> `AH`; stress is dropped (the G2P literature scores phonemes without
stress). The published results are for CMUdict 0.7b and its own test split,
so comparing with them is approximate.

Split. By a keyed hash of the word (SHA-256 of "seqcl-g2p:" + word), so the
split does not depend on the file's order and is the same on every machine:
hash mod 200 < 6 is test (3 %, about 3 200 words), 6..8 is validation (1.5 %,
about 1 600), the rest is training.
"""
import argparse
import hashlib
import math
import os
import re
import shutil
import subprocess
import sys
import time

LEXICON = "/usr/share/festival/dicts/cmu/cmudict-0.4.out"
# Festival's phone set -> ARPAbet (39 phonemes): only the schwa differs
PHONE_MAP = {"ax": "ah"}
ARPABET = set(
    "aa ae ah ao aw ay b ch d dh eh er ey f g hh ih iy jh k l m n ng ow oy p r s sh t th "
    "uh uw v w y z zh".split())

# The recipe's defaults (README, "A real task"): a bidirectional 128-wide
# encoder, a 256-wide decoder, additive attention of 256, the output layer
# over [s_t ; c_t], dropout 0.2, Adam 2e-3 with gradient clipping at 5, batch
# 64 from length-bucketed windows of 50 batches, 200 warm-up steps, the rate
# halved after three validations (every half epoch) without a better exact
# match (one validation of 1 500 words moves by about a point, so patience 1
# halved the rate on noise), down to 1e-4, the best validation's model kept;
# 16 epochs; beam 5; three such models decoded as an ensemble (each step by
# the mean of their probabilities: 2-3 points of WER below one model, for
# three times the training). The model and schedule options below change them.
DEFAULTS = dict(embed=64, enc_hidden=128, dec_hidden=256, attn=256, dropout=0.2, lr=2e-3,
                clip=5.0, batch=64, epochs=16, beam=5, bucket=50, warmup=200, lr_decay=0.5,
                min_lr=1e-4, layers=1, output="state_context", decay_patience=3, ensemble=3)
# What the command line may change (checked here; seqcl checks the rest)
MODEL_OPTIONS = [("embed", int, "embedding width"), ("enc_hidden", int, "encoder width per direction"),
                 ("dec_hidden", int, "decoder width"), ("attn", int, "attention width"),
                 ("layers", int, "encoder layers"), ("output", str, "the output layer's input"),
                 ("dropout", float, "dropout"), ("lr", float, "Adam's rate"),
                 ("decay_patience", int, "validations without improvement before halving")]
QUICK = dict(embed=16, enc_hidden=32, dec_hidden=48, attn=32, dropout=0.1, lr=1e-2, clip=5.0,
             batch=32, steps=300, beam=3, words=400, bucket=4, warmup=20, lr_decay=0.5,
             min_lr=1e-3, layers=1, output="state", decay_patience=1, ensemble=2)


def find_lexicon(path):
    if os.path.exists(path):
        return path
    if path != LEXICON:
        sys.exit("recipe: %s does not exist" % path)
    # Debian/Ubuntu ship the dictionary as festlex-cmu
    print("recipe: %s is missing; installing festlex-cmu" % path, file=sys.stderr)
    cmd = ["apt-get", "install", "-y", "festlex-cmu"]
    if os.geteuid() != 0:
        cmd = ["sudo"] + cmd
    if shutil.which(cmd[0]) is None or subprocess.call(cmd) != 0 or not os.path.exists(path):
        sys.exit("recipe: could not install festlex-cmu; install it (apt-get install "
                 "festlex-cmu) or give --lexicon FILE")
    return path


ENTRY = re.compile(r'^\("((?:[^"\\]|\\.)*)" (\S+) (\(.*\))\)\s*$')


def parse_lexicon(path):
    """word -> phoneme list (ARPAbet, no stress), first entry of each word."""
    lex = {}
    with open(path, encoding="latin-1") as f:
        for lineno, line in enumerate(f, 1):
            if not line.startswith('("'):
                continue  # the MNCL header
            m = ENTRY.match(line)
            if not m:
                sys.exit("recipe: %s:%d: not a Festival lexicon entry: %s" % (path, lineno, line[:60]))
            word = m.group(1).lower()
            if word in lex or not re.fullmatch(r"[a-z]+", word):
                continue
            # (((syl phones) stress) ...): the stress digits follow a ')'
            phones = re.findall(r"[a-z]+", re.sub(r"\)\s*\d+\)", "))", m.group(3)))
            phones = [PHONE_MAP.get(p, p) for p in phones]
            bad = [p for p in phones if p not in ARPABET]
            if bad or not phones:
                sys.exit("recipe: %s:%d: unknown phone %s" % (path, lineno, bad))
            lex[word] = phones
    return lex


def bucket(word):
    h = hashlib.sha256(("seqcl-g2p:" + word).encode()).digest()
    return int.from_bytes(h[:8], "big") % 200


def prepare(args):
    lex = parse_lexicon(find_lexicon(args.lexicon))
    parts = {"train": [], "valid": [], "test": []}
    for w in sorted(lex):
        b = bucket(w)
        parts["test" if b < 6 else "valid" if b < 9 else "train"].append(w)
    if args.quick:
        # a few hundred words: the path, not the accuracy
        n = QUICK["words"]
        parts = {"train": parts["train"][:n], "valid": parts["valid"][:n // 4],
                 "test": parts["test"][:n // 4]}
    os.makedirs(args.work, exist_ok=True)
    for name, words in parts.items():
        with open(os.path.join(args.work, name + ".words"), "w") as f:
            f.writelines(w + "\n" for w in words)
        with open(os.path.join(args.work, name + ".phones"), "w") as f:
            f.writelines(" ".join(lex[w]).upper() + "\n" for w in words)
    print("data: %d words in %s; train %d, valid %d, test %d (keyed-hash split)" %
          (len(lex), args.lexicon, len(parts["train"]), len(parts["valid"]), len(parts["test"])))
    return {k: len(v) for k, v in parts.items()}


def config(h):
    # the vocabulary keys are placeholders: train --text takes them from the
    # vocabularies it builds
    return ('{"format": "seqcl.seq2seq", "version": 1, "src_vocab_size": 3, "tgt_vocab_size": 3,\n'
            ' "embed_dim": %d, "bos_id": 1, "eos_id": 2, "pad_id": null,\n'
            ' "encoder": {"hidden_size": %d, "num_layers": %d, "bidirectional": true},\n'
            ' "decoder": {"hidden_size": %d, "init": "bridge"},\n'
            ' "attention": {"score": "additive", "dim": %d}, "output": "%s"}\n' %
            (h["embed"], h["enc_hidden"], h["layers"], h["dec_hidden"], h["attn"], h["output"]))


def run(cmd, log=None):
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.time()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, universal_newlines=True)
    m = re.search(r"^trained steps \d+\.\.(\d+) ", out.stdout, re.M)
    if m:
        run.steps = int(m.group(1))
    dt = time.time() - t0
    if out.returncode != 0:
        sys.exit("recipe: %s failed with status %d:\n%s" % (cmd[1], out.returncode, out.stdout))
    return out.stdout, dt


def evaluate(seqcl, models, work, beam, device):
    cmd = [seqcl, "eval"]
    for m in models:
        cmd += ["--model", m]
    cmd += ["--text", "chars,words",
           "--src", os.path.join(work, "test.words"), "--ref", os.path.join(work, "test.phones"),
           "--metric", "exact,ter", "--batch-size", "256"]
    if beam > 1:
        cmd += ["--beam", str(beam)]
    if device:
        cmd += ["--device", device]
    out, dt = run(cmd)
    exact = float(re.search(r"^exact: ([0-9.]+) %", out, re.M).group(1))
    per = float(re.search(r"^ter: ([0-9.]+) %", out, re.M).group(1))
    return 100.0 - exact, per, dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, help="folder for the data, the model and the logs")
    ap.add_argument("--seqcl", default=None, help="the seqcl binary (default: on PATH, else build/cli/seqcl)")
    ap.add_argument("--lexicon", default=LEXICON)
    ap.add_argument("--quick", action="store_true", help="a few hundred words and steps (CI)")
    ap.add_argument("--prepare-only", action="store_true")
    ap.add_argument("--epochs", type=float, default=None, help="training epochs (default %g)" % DEFAULTS["epochs"])
    ap.add_argument("--steps", type=int, default=None, help="training steps (instead of --epochs)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ensemble", type=int, default=None,
                    help="models trained (seeds SEED, SEED+100, ...) and decoded together "
                         "(default %d)" % DEFAULTS["ensemble"])
    ap.add_argument("--beam", type=int, default=None)
    ap.add_argument("--device", default=None, help="seqcl --device (default: SEQCL_DEVICE, else auto)")
    model = ap.add_argument_group("model and schedule (default: the recipe's)")
    for key, kind, what in MODEL_OPTIONS:
        model.add_argument("--" + key.replace("_", "-"), type=kind, default=None,
                           choices=["state", "state_context"] if key == "output" else None,
                           help="%s (default %s)" % (what, DEFAULTS[key]))
    args = ap.parse_args()
    h = dict(QUICK if args.quick else DEFAULTS)
    for key, kind, _ in MODEL_OPTIONS:
        value = getattr(args, key)
        if value is None:
            continue
        if kind is int and value < 1:
            sys.exit("recipe: --%s must be at least 1" % key.replace("_", "-"))
        if key == "dropout" and not 0 <= value < 1:
            sys.exit("recipe: --dropout must be in [0, 1)")
        if key == "lr" and not value > 0:
            sys.exit("recipe: --lr must be positive")
        h[key] = value
    if args.beam:
        h["beam"] = args.beam
    if args.ensemble is not None:
        if not 1 <= args.ensemble <= 16:
            sys.exit("recipe: --ensemble must be in [1, 16]")
        h["ensemble"] = args.ensemble
    sizes = prepare(args)
    if args.prepare_only:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    seqcl = args.seqcl or shutil.which("seqcl") or os.path.join(here, "..", "..", "build", "cli", "seqcl")
    steps_per_epoch = math.ceil(sizes["train"] / h["batch"])
    # bucketed batches of 64 lines: an epoch is about ceil(lines / 64) steps
    if args.steps:
        length = ["--steps", str(args.steps)]
        steps = args.steps
    elif args.epochs or not args.quick:
        epochs = args.epochs or h["epochs"]
        length = ["--epochs", repr(epochs)]
        steps = int(math.ceil(epochs * steps_per_epoch))
    else:
        length = ["--steps", str(h["steps"])]
        steps = h["steps"]
    every = str(max(steps_per_epoch // 2, 1) if not args.quick else max(steps // 4, 1))
    cfg = os.path.join(args.work, "config.json")
    with open(cfg, "w") as f:
        f.write(config(h))
    w = lambda name: os.path.join(args.work, name)
    members, train_s = [], 0.0
    for k in range(h["ensemble"]):
        # member k: folder model (k = 0) or model.K+1, seed SEED + 100 k, so
        # that the ensembles of seeds 1, 2, 3 share no member and member 0 is
        # the single model of that seed
        model = w("model" if k == 0 else "model.%d" % (k + 1))
        seed = args.seed + 100 * k
        cmd = [seqcl, "train", "--text", "chars,words", "--src", w("train.words"), "--tgt", w("train.phones"),
               "--valid-src", w("valid.words"), "--valid-tgt", w("valid.phones"), "--config", cfg,
               "--save", model, "--overwrite"] + length + [
               "--batch-size", str(h["batch"]), "--bucket", str(h["bucket"]),
               "--lr", repr(h["lr"]), "--warmup", str(h["warmup"]), "--lr-decay", repr(h["lr_decay"]),
               "--min-lr", repr(h["min_lr"]), "--decay-patience", str(h["decay_patience"]),
               "--keep-best", "exact",
               "--clip", repr(h["clip"]), "--dropout", repr(h["dropout"]),
               "--seed", str(seed), "--valid-every", every, "--checkpoint-every", every]
        if args.device:
            cmd += ["--device", args.device]
        with open(w("train.log" if k == 0 else "train.%d.log" % (k + 1)), "w") as log:
            out, dt = run(cmd, log)
        print(out, end="")
        members.append((model, seed, dt))
        train_s += dt
    steps = getattr(run, "steps", steps)
    where = "%d (%.1f epochs)" % (steps, steps / steps_per_epoch)
    rows = []
    if len(members) > 1:
        for model, seed, dt in members:
            wer, per, dec = evaluate(seqcl, [model], args.work, 1, args.device)
            rows.append(("seqcl, %s (seed %d)" % (os.path.basename(model), seed), "%.0f" % dt,
                         "greedy", wer, per, dec))
    name = "seqcl" if len(members) == 1 else "seqcl, ensemble of %d" % len(members)
    for beam in (1, h["beam"]):
        wer, per, dec = evaluate(seqcl, [m[0] for m in members], args.work, beam, args.device)
        rows.append((name, "%.0f" % train_s, "greedy" if beam == 1 else "beam %d" % beam,
                     wer, per, dec))
    print("\n| system | steps | train s | decode | WER % | PER % | decode s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %s | %s | %.2f | %.2f | %.2f |" % (r[0], where, r[1], r[2], r[3], r[4], r[5]))


if __name__ == "__main__":
    main()

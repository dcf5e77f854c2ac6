#!/usr/bin/python3
"""Writes tests/model/metric_fixtures.txt: corpora of token-id lines with the
corpus BLEU that NLTK's corpus_bleu gives them (default weights, no
smoothing, times 100), and the exact-match and token-edit rates computed here
with a plain dynamic program. tests/model/test_metrics.c compares seqcl's
metrics with these numbers.

    /usr/bin/python3 tools/make_metric_fixtures.py > tests/model/metric_fixtures.txt

Needs Debian's python3-nltk. Deterministic (seeded)."""
import random
import sys
import warnings

from nltk.translate.bleu_score import corpus_bleu


def edits(h, r):
    row = list(range(len(r) + 1))
    for i in range(1, len(h) + 1):
        prev, row[0] = row[0], i
        for j in range(1, len(r) + 1):
            cur = min(row[j] + 1, row[j - 1] + 1, prev + (h[i - 1] != r[j - 1]))
            prev, row[j] = row[j], cur
    return row[len(r)]


def noisy(ref, rng, p):
    """ref with substitutions, deletions and insertions at rate p."""
    out = []
    for t in ref:
        x = rng.random()
        if x < p / 3:
            continue
        out.append(rng.randrange(8) if x < 2 * p / 3 else t)
        if x > 1 - p / 3:
            out.append(rng.randrange(8))
    return out


def corpora(rng):
    # hand-sized ones first: short lines exercise NLTK's max(1, count) rule
    yield 'short_lines', [([1], [1]), ([1, 2], [1, 2]), ([3, 4, 5], [3, 4, 5, 6]),
                          ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])]
    yield 'empty_hyp_line', [([], [1, 2, 3]), ([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6])]
    yield 'longer_hyp', [([1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5]), ([2, 3, 4, 5, 6], [2, 3, 4, 5, 6])]
    yield 'repeats_clipped', [([7, 7, 7, 7, 7, 7], [7, 7, 1, 7, 7, 7]), ([1, 2, 1, 2, 1, 2], [1, 2, 1, 2])]
    # a zero precision: NLTK gives 0 (no unigram match) or about 1e-75
    yield 'no_4gram_match', [([1, 2, 3], [1, 2, 3]), ([4, 5, 6], [4, 5, 6])]
    yield 'no_match', [([1, 2], [3, 4]), ([5], [6])]
    for k in range(12):
        lines = []
        p = [0.05, 0.15, 0.3][k % 3]
        for _ in range(rng.randrange(5, 60)):
            ref = [rng.randrange(8) for _ in range(rng.randrange(1, 14))]
            lines.append((noisy(ref, rng, p), ref))
        yield f'random_{k}_p{p}', lines


def main():
    rng = random.Random(20261201)
    print('# corpora: "case NAME BLEU TER EXACT", then "hyp ids | ref ids" lines, then "end".')
    print('# BLEU from NLTK %s corpus_bleu x 100; written by tools/make_metric_fixtures.py'
          % __import__('nltk').__version__)
    for name, lines in corpora(rng):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # NLTK warns on a zero n-gram count
            bleu = 100.0 * corpus_bleu([[r] for _, r in lines], [h for h, _ in lines])
        ter = 100.0 * sum(edits(h, r) for h, r in lines) / sum(len(r) for _, r in lines)
        exact = 100.0 * sum(h == r for h, r in lines) / len(lines)
        print(f'case {name} {bleu:.10f} {ter:.10f} {exact:.10f}')
        for h, r in lines:
            print(' '.join(map(str, h)), '|', ' '.join(map(str, r)))
        print('end')


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""PyTorch reference implementation of the seqcl model (SPEC §1, §4).

Parameter names of Seq2Seq.state_dict() are exactly the tensor names of a
seqcl model file (SPEC §2), so a model directory loads with
load_state_dict and saves with export_pytorch.save_model_dir.

    model = load_model("path/to/model", dtype=torch.float64)
    logits, alignments, loss = model.teacher_forced(src_lines, tgt_lines)
    lines, alignments, ties = model.greedy(src_lines, max_steps)
    tokens, alignments, ties = model.beam_search(src_line, beam=3, length_penalty=0.0,
                                                 max_steps=...)

Token lines are Python lists of ints; targets include BOS first (and usually
EOS last). Everything runs on the CPU in the model's dtype (float64 gives the
most exact reference).
"""
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_pytorch  # noqa: E402

SCORES = ("additive", "general", "dot", "scaled_dot", "none")
NEAR_TIE = 1e-3  # SPEC §5: two best logits within this are a near-tie


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        enc = cfg["encoder"]
        self.embedding = nn.Embedding(cfg["src_vocab_size"], cfg["embed_dim"])
        self.rnn = nn.GRU(cfg["embed_dim"], enc["hidden_size"], num_layers=enc["num_layers"],
                          bidirectional=enc["bidirectional"], batch_first=True)

    def forward(self, src, lengths):
        """src [N,S] ids, lengths [N] -> outputs [N,S,H_e] (0 past each end),
        top layer's final states [N,H_e] ([fwd ; bwd] when bidirectional)."""
        x = self.embedding(src)
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        final = torch.cat([h_n[-2], h_n[-1]], dim=-1) if self.rnn.bidirectional else h_n[-1]
        return out, final


class Attention(nn.Module):
    def __init__(self, score, enc_width, dec_hidden, dim=None,
                 key_bias=True, query_bias=True, energy_bias=True):
        super().__init__()
        if score not in SCORES:
            raise ValueError(f"unknown score {score!r}")
        self.score = score
        self.enc_width = enc_width
        if score == "additive":
            self.key = nn.Linear(enc_width, dim, bias=key_bias)
            self.query = nn.Linear(dec_hidden, dim, bias=query_bias)
            self.energy = nn.Linear(dim, 1, bias=energy_bias)
        elif score == "general":
            self.query = nn.Linear(dec_hidden, enc_width, bias=query_bias)
        elif score == "none":
            pass  # no parameters: the context is the encoder's final state
        elif enc_width != dec_hidden:
            raise ValueError(f"{score} attention needs H_e == H_d")

    def forward(self, q, keys, valid, final=None):
        """q [N,H_d], keys [N,S,H_e], valid [N,S] bool -> context [N,H_e], weights [N,S].
        "none": context = final (the top layer's final state [N,H_e]), weights None."""
        if self.score == "none":
            return final, None
        if self.score == "additive":
            e = self.energy(torch.tanh(self.key(keys) + self.query(q)[:, None, :])).squeeze(-1)
        elif self.score == "general":
            e = torch.bmm(keys, self.query(q)[:, :, None]).squeeze(-1)
        else:
            e = torch.bmm(keys, q[:, :, None]).squeeze(-1)
            if self.score == "scaled_dot":
                e = e / math.sqrt(self.enc_width)
        e = e.masked_fill(~valid, float("-inf"))
        weights = torch.softmax(e, dim=-1)
        context = torch.bmm(weights[:, None, :], keys).squeeze(1)
        return context, weights


class Decoder(nn.Module):
    def __init__(self, cfg, attention):
        super().__init__()
        enc_width = cfg["encoder"]["hidden_size"] * (2 if cfg["encoder"]["bidirectional"] else 1)
        dec_hidden = cfg["decoder"]["hidden_size"]
        self.output_kind = cfg["output"]
        self.embedding = nn.Embedding(cfg["tgt_vocab_size"], cfg["embed_dim"])
        self.attention = attention
        self.rnn = nn.GRUCell(cfg["embed_dim"] + enc_width, dec_hidden)
        out_in = dec_hidden + (enc_width if self.output_kind == "state_context" else 0)
        self.output = nn.Linear(out_in, cfg["tgt_vocab_size"])

    def step(self, prev_tokens, state, keys, valid, final=None):
        """One decoder step (SPEC §1 order): attention on s_{t-1}, GRUCell on
        [embed(y_{t-1}) ; c_t], logits from s_t (or [s_t ; c_t]). With score
        "none" c_t = final at every step and the weights are None."""
        context, weights = self.attention(state, keys, valid, final)
        state = self.rnn(torch.cat([self.embedding(prev_tokens), context], dim=-1), state)
        feats = state if self.output_kind == "state" else torch.cat([state, context], dim=-1)
        return self.output(feats), state, weights


def _pad(lines, fill):
    width = max(len(l) for l in lines)
    return torch.tensor([list(l) + [fill] * (width - len(l)) for l in lines], dtype=torch.long)


def _top2_gap(row):
    top = torch.topk(row, 2).values
    return float(top[0] - top[1])


def _argmax_lowest(row):
    """argmax with the lowest index on a tie (SPEC §1)."""
    best = row.max()
    return int(torch.nonzero(row == best)[0, 0])


def _beam_candidates(live, logp, beam, n_finished, step, ties):
    """One beam step's ranking (SPEC §4): each live hypothesis (tokens, sum
    log p, ...) extended by its `beam` best tokens, the candidates ranked by
    sum log p (descending), ties to the lower token id, then the earlier
    hypothesis; -> (the kept candidates (score, token, hypothesis index), the
    gap between the last kept and the first dropped candidate over all
    tokens, inf when none is dropped), near-ties appended to ties."""
    cands, all_scores = [], []
    for i, h in enumerate(live):
        row = logp[i].tolist()
        order = sorted(range(len(row)), key=lambda v: (-row[v], v))
        for v in order[:beam]:
            cands.append((h[1] + row[v], v, i))
        all_scores.extend(h[1] + x for x in row)
    cands.sort(key=lambda c: (-c[0], c[1], c[2]))
    keep = beam - n_finished
    all_scores.sort(reverse=True)
    gap = float("inf")
    if len(all_scores) > keep:
        gap = all_scores[keep - 1] - all_scores[keep]
        if gap < NEAR_TIE:
            ties.append((step, gap))
    return cands[:keep], gap


def _beam_choice(pool, length_penalty, ties):
    """The answer among the finished (else the live) hypotheses: the highest
    sum log p / L^A, ties to the earlier one; -> (it, its score, the gap to
    the runner-up), a near-tie appended to ties as step -1."""
    def normalised(h):
        return h[1] / (len(h[0]) ** length_penalty) if length_penalty else h[1]

    ranked = sorted(range(len(pool)), key=lambda j: (-normalised(pool[j]), j))
    gap = float("inf")
    if len(ranked) > 1:
        gap = normalised(pool[ranked[0]]) - normalised(pool[ranked[1]])
        if gap < NEAR_TIE:
            ties.append((-1, gap))
    best = pool[ranked[0]]
    return best, normalised(best), gap


class Seq2Seq(nn.Module):
    """The seqcl model. attention_biases = (key, query, energy) presence for
    additive, (query,) for general."""

    def __init__(self, cfg, key_bias=True, query_bias=True, energy_bias=True):
        super().__init__()
        self.cfg = cfg
        self.bos_id, self.eos_id = cfg["bos_id"], cfg["eos_id"]
        enc_width = cfg["encoder"]["hidden_size"] * (2 if cfg["encoder"]["bidirectional"] else 1)
        dec_hidden = cfg["decoder"]["hidden_size"]
        self.encoder = Encoder(cfg)
        self.init = cfg["decoder"]["init"]
        if self.init == "bridge":
            self.bridge = nn.Linear(enc_width, dec_hidden)
        elif self.init == "final" and enc_width != dec_hidden:
            raise ValueError(f"decoder init 'final' needs H_e == H_d ({enc_width} != {dec_hidden})")
        elif self.init not in ("zeros", "final"):
            raise ValueError(f"unknown decoder init {cfg['decoder']['init']!r}")
        else:
            self.bridge = None
        att = cfg["attention"]
        attention = Attention(att["score"], enc_width, dec_hidden, att.get("dim"),
                              key_bias, query_bias, energy_bias)
        self.decoder = Decoder(cfg, attention)

    # -- shared pieces ------------------------------------------------------

    def _dtype(self):
        return self.decoder.output.weight.dtype

    def encode(self, src_lines):
        """-> keys [N,S,H_e], valid [N,S], s_0 [N,H_d], final states [N,H_e]."""
        lengths = torch.tensor([len(l) for l in src_lines], dtype=torch.long)
        if (lengths < 1).any():
            raise ValueError("every source sequence needs at least one token")
        src = _pad(src_lines, 0)
        keys, final = self.encoder(src, lengths)
        valid = torch.arange(src.shape[1])[None, :] < lengths[:, None]
        if self.bridge is not None:
            s0 = torch.tanh(self.bridge(final))
        elif self.init == "final":  # s_0 = the top layer's [h_fwd ; h_bwd] itself
            s0 = final
        else:
            s0 = torch.zeros(len(src_lines), self.cfg["decoder"]["hidden_size"], dtype=self._dtype())
        return keys, valid, s0, final

    def has_alignments(self):
        return self.decoder.attention.score != "none"

    # -- teacher forcing ----------------------------------------------------

    @torch.no_grad()
    def teacher_forced(self, src_lines, tgt_lines):
        """-> logits [N,T,V], alignments [N,T,S] (0 at steps past each line's
        end; None for score "none"), mean cross-entropy over the valid label
        positions."""
        if len(src_lines) != len(tgt_lines):
            raise ValueError("source and target need the same number of lines")
        keys, valid, state, final = self.encode(src_lines)
        steps = torch.tensor([len(l) - 1 for l in tgt_lines])
        if (steps < 1).any():
            raise ValueError("every target line needs BOS and at least one label")
        T = int(steps.max())
        inputs = _pad([l[:-1] for l in tgt_lines], self.bos_id)
        labels = _pad([l[1:] for l in tgt_lines], -100)
        logits, aligns = [], []
        for t in range(T):
            lg, state, w = self.decoder.step(inputs[:, t], state, keys, valid, final)
            logits.append(lg)
            aligns.append(w)
        logits = torch.stack(logits, dim=1)
        live = (torch.arange(T)[None, :] < steps[:, None])
        logits = logits * live[:, :, None]
        aligns = torch.stack(aligns, dim=1) * live[:, :, None] if self.has_alignments() else None
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                               ignore_index=-100, reduction="mean")
        return logits, aligns, loss

    # -- greedy -------------------------------------------------------------

    @torch.no_grad()
    def greedy(self, src_lines, max_steps=None):
        """Batched greedy decoding (SPEC §1, §4).

        -> (output lines: ids after BOS before the first EOS,
            alignments [N,Tg,S] (Tg = most steps any line took, rows after a
               line's EOS are 0),
            near-ties: [(line, step (1-based), gap)] at steps where a line not
               yet finished had its two best logits within NEAR_TIE),
           plus the smallest top-2 gap seen, as a 4th element."""
        N = len(src_lines)
        if max_steps is None:
            max_steps = 2 * max(len(l) for l in src_lines) + 10
        keys, valid, state, final = self.encode(src_lines)
        tokens = torch.full((N,), self.bos_id, dtype=torch.long)
        finished = [False] * N
        produced = [[] for _ in range(N)]
        aligns, ties, min_gap = [], [], float("inf")
        for step in range(1, max_steps + 1):
            if all(finished):
                break
            logits, state, w = self.decoder.step(tokens, state, keys, valid, final)
            row_w = w.clone() if w is not None else None
            nxt = []
            for n in range(N):
                if finished[n]:
                    nxt.append(self.eos_id)
                    if row_w is not None:
                        row_w[n].zero_()
                    continue
                gap = _top2_gap(logits[n])
                min_gap = min(min_gap, gap)
                if gap < NEAR_TIE:
                    ties.append((n, step, gap))
                tok = _argmax_lowest(logits[n])
                nxt.append(tok)
                if tok == self.eos_id:
                    finished[n] = True
                else:
                    produced[n].append(tok)
            aligns.append(row_w)
            tokens = torch.tensor(nxt, dtype=torch.long)
        S = keys.shape[1]
        if not self.has_alignments():
            al = None
        else:
            al = torch.stack(aligns, dim=1) if aligns else torch.zeros(N, 0, S, dtype=keys.dtype)
        return produced, al, ties, min_gap

    # -- beam search --------------------------------------------------------

    @torch.no_grad()
    def beam_search(self, src_line, beam, length_penalty=0.0, max_steps=None):
        """Beam search for one sentence (SPEC §4).

        Each step, every live hypothesis is extended by its `beam` best tokens;
        the candidates are ranked by Σ log p (descending), ties to the lower
        token id, then the earlier hypothesis; the first `beam - finished`
        candidates are kept, those ending in EOS becoming finished. The
        sentence stops when `beam` hypotheses have finished or after
        max_steps. The answer is the finished hypothesis (else the best
        unfinished one) with the highest Σ log p / L^A (L = tokens incl. EOS;
        ties to the earlier one in finishing order, else in beam order).

        -> (tokens before EOS, alignments [steps, S] of the chosen hypothesis
            (None for score "none"),
            near-ties [(step, gap)]: steps where the last kept and first
            dropped candidate (over all tokens) were within NEAR_TIE, step -1
            for the final choice, the smallest such gap)."""
        if max_steps is None:
            max_steps = 2 * len(src_line) + 10
        keys, valid, s0, final = self.encode([src_line])
        # hypothesis: (tokens, sum logp, state [H_d], alignment rows)
        live = [([], 0.0, s0[0], [])]
        finished = []
        ties, min_gap = [], float("inf")
        for step in range(1, max_steps + 1):
            k = len(live)
            last = torch.tensor([h[0][-1] if h[0] else self.bos_id for h in live], dtype=torch.long)
            states = torch.stack([h[2] for h in live])
            logits, new_states, w = self.decoder.step(
                last, states, keys.expand(k, -1, -1), valid.expand(k, -1), final.expand(k, -1))
            logp = torch.log_softmax(logits, dim=-1)
            kept, gap = _beam_candidates(live, logp, beam, len(finished), step, ties)
            min_gap = min(min_gap, gap)
            new_live = []
            for score, v, i in kept:
                toks, _, _, rows = live[i]
                hyp = (toks + [v], score, new_states[i], rows + [w[i] if w is not None else None])
                (finished if v == self.eos_id else new_live).append(hyp)
            live = new_live
            if len(finished) >= beam or not live:
                break
        best, _, gap = _beam_choice(finished if finished else live, length_penalty, ties)
        min_gap = min(min_gap, gap)
        toks = best[0][:-1] if best[0] and best[0][-1] == self.eos_id else best[0]
        return toks, torch.stack(best[3]) if self.has_alignments() else None, ties, min_gap


def attention_biases(tensors):
    """(key, query, energy) bias presence implied by a model file's tensors."""
    return dict(key_bias="decoder.attention.key.bias" in tensors,
                query_bias="decoder.attention.query.bias" in tensors,
                energy_bias="decoder.attention.energy.bias" in tensors)


def load_model(model_dir, dtype=torch.float64):
    """Loads a seqcl model directory into a Seq2Seq of the given dtype."""
    cfg, tensors = export_pytorch.load_model_dir(model_dir)
    model = Seq2Seq(cfg, **attention_biases(tensors))
    model.load_state_dict(tensors, strict=True)
    return model.to(dtype).eval()


def save_model(model, out_dir, dtype="f32"):
    """Writes a Seq2Seq as a seqcl model directory."""
    export_pytorch.save_model_dir(out_dir, model.cfg, dict(model.state_dict()), dtype)


# -- ensembles (seqcl_ensemble_decode) ----------------------------------------

def mixture_logp(logits_list):
    """log of the mean of the models' probabilities: the step distribution of
    an ensemble (SPEC §4, "Ensembles")."""
    lp = torch.stack([torch.log_softmax(l, dim=-1) for l in logits_list])
    return torch.logsumexp(lp, dim=0) - math.log(len(logits_list))


@torch.no_grad()
def ensemble_greedy(models, src_lines, max_steps=None):
    """Greedy decoding of an ensemble: each step's token is the argmax (lowest
    id on a tie) of mixture_logp over the models' logits; finished lines keep
    emitting EOS. -> (output lines, near-ties [(line, step, gap)], smallest
    top-2 gap)."""
    N = len(src_lines)
    if max_steps is None:
        max_steps = 2 * max(len(l) for l in src_lines) + 10
    enc = [m.encode(src_lines) for m in models]
    states = [e[2] for e in enc]
    eos = models[0].eos_id
    tokens = torch.full((N,), models[0].bos_id, dtype=torch.long)
    finished = [False] * N
    produced = [[] for _ in range(N)]
    ties, min_gap = [], float("inf")
    for step in range(1, max_steps + 1):
        if all(finished):
            break
        logits = []
        for j, m in enumerate(models):
            keys, valid, _, final = enc[j]
            lg, states[j], _ = m.decoder.step(tokens, states[j], keys, valid, final)
            logits.append(lg)
        logp = mixture_logp(logits)
        nxt = []
        for n in range(N):
            if finished[n]:
                nxt.append(eos)
                continue
            gap = _top2_gap(logp[n])
            min_gap = min(min_gap, gap)
            if gap < NEAR_TIE:
                ties.append((n, step, gap))
            tok = _argmax_lowest(logp[n])
            nxt.append(tok)
            if tok == eos:
                finished[n] = True
            else:
                produced[n].append(tok)
        tokens = torch.tensor(nxt, dtype=torch.long)
    return produced, ties, min_gap


@torch.no_grad()
def ensemble_beam_search(models, src_line, beam, length_penalty=0.0, max_steps=None):
    """Seq2Seq.beam_search's rules over mixture_logp: every hypothesis keeps
    one decoder state per model. -> (tokens before EOS, score of the chosen
    hypothesis (sum log p / L^A), near-ties [(step, gap)], smallest gap)."""
    if max_steps is None:
        max_steps = 2 * len(src_line) + 10
    enc = [m.encode([src_line]) for m in models]
    bos, eos = models[0].bos_id, models[0].eos_id
    live = [([], 0.0, [e[2][0] for e in enc])]
    finished = []
    ties, min_gap = [], float("inf")
    for step in range(1, max_steps + 1):
        k = len(live)
        last = torch.tensor([h[0][-1] if h[0] else bos for h in live], dtype=torch.long)
        logits, new_states = [], []
        for j, m in enumerate(models):
            keys, valid, _, final = enc[j]
            states = torch.stack([h[2][j] for h in live])
            lg, ns, _ = m.decoder.step(last, states, keys.expand(k, -1, -1),
                                       valid.expand(k, -1), final.expand(k, -1))
            logits.append(lg)
            new_states.append(ns)
        kept, gap = _beam_candidates(live, mixture_logp(logits), beam, len(finished), step, ties)
        min_gap = min(min_gap, gap)
        new_live = []
        for score, v, i in kept:
            hyp = (live[i][0] + [v], score, [ns[i] for ns in new_states])
            (finished if v == eos else new_live).append(hyp)
        live = new_live
        if len(finished) >= beam or not live:
            break
    best, score, gap = _beam_choice(finished if finished else live, length_penalty, ties)
    min_gap = min(min_gap, gap)
    toks = best[0][:-1] if best[0] and best[0][-1] == eos else best[0]
    return toks, score, ties, min_gap

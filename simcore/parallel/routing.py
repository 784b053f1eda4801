"""MoE token routing across ranks, uniform or skewed (`--expert-skew`).

Each token picks `top_k` distinct experts. With skew s > 0 the experts' popularity
follows a Zipf-like law, p(e) ~ 1 / rank(e)^s, over a seeded random ranking of the
experts that changes from layer to layer (real routers favour different experts in
different layers); s = 0 is uniform. Picks are drawn without replacement in proportion
to popularity (Gumbel top-k). Token counts per (source rank, expert) then decide both
the all-to-all traffic (who sends how many tokens where) and each expert's share of the
grouped matmuls -- so a hot expert's chip computes longer and the others wait for it.
"""

from __future__ import annotations

import numpy as np


def popularity(experts: int, skew: float, rng: np.random.Generator) -> np.ndarray:
    """Probability of each expert (sums to 1): Zipf-like with exponent `skew` over a random ranking."""
    if skew <= 0:
        return np.full(experts, 1.0 / experts)
    ranks = rng.permutation(experts) + 1.0
    w = ranks ** -float(skew)
    return w / w.sum()


def route(tokens: int, experts: int, top_k: int, prob: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Tokens per expert when `tokens` tokens each pick top_k distinct experts in proportion to `prob`."""
    counts = np.zeros(experts, np.int64)
    if tokens <= 0:
        return counts
    keys = np.log(prob)[None, :] - np.log(-np.log(rng.random((tokens, experts))))  # Gumbel top-k
    picks = np.argpartition(-keys, top_k - 1, axis=1)[:, :top_k]
    np.add.at(counts, picks.ravel(), 1)
    return counts


def layer_popularity(experts: int, skew: float, seed: int, layer: int) -> np.ndarray:
    """The popularity of one layer's experts: the same for every rank and microbatch of the step."""
    return popularity(experts, skew, np.random.default_rng([seed, 0x5EED, layer]))


def route_group(tokens: list[int], experts: int, top_k: int, prob: np.ndarray, seed: tuple[int, ...]) -> np.ndarray:
    """(ranks, experts) token counts for one MoE layer of one group of ranks: rank r routes tokens[r]."""
    rng = np.random.default_rng(list(seed))
    return np.stack([route(t, experts, top_k, prob, rng) for t in tokens])

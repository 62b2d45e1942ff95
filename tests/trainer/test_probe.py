"""trainer.evaluate.probe: the mate-in-one probe set and the held-out losses, with crafted networks."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from engine.evaluator import Evaluation
from engine.games import get_game
from engine.inference import RawOutput
from tests.trainer.conftest import random_games
from trainer.evaluate.probe import heldout_errors, mate_in_one_positions, paired_difference, policy_mate_rate
from trainer.store.shards import build_shard, read_shard, shard_metadata, write_shard


class RawNetwork:
    """``run(planes)`` gives uniform logits and ``value_of(z)`` for the rows of a known ``z``, in order."""

    def __init__(self, z: np.ndarray, value_of: Callable[[np.ndarray], np.ndarray], policy_size: int) -> None:
        self.values = value_of(z).astype(np.float32)
        self.policy_size = policy_size
        self.seen = 0

    def run(self, planes: np.ndarray) -> RawOutput:
        n = len(planes)
        value = self.values[self.seen : self.seen + n]
        self.seen += n
        return RawOutput(np.zeros((n, self.policy_size), np.float32), value, None)


class PickingPolicy:
    """``evaluate`` puts all prior on the first legal move of row ``i`` that is (``inside``) or is not in
    ``targets[i]``."""

    def __init__(self, targets: Sequence[frozenset[int]], inside: bool) -> None:
        self.targets = targets
        self.inside = inside

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        out = []
        for row, indices in enumerate(legal):
            slot = next(k for k, i in enumerate(indices) if (int(i) in self.targets[row]) == self.inside)
            prior = np.zeros(len(indices), np.float32)
            prior[slot] = 1.0
            out.append(Evaluation(prior, 0.0))
        return out


@pytest.mark.parametrize("label", ["chess", "shogi"])
def test_mate_probes_hold_exactly_the_mating_moves(label: str) -> None:
    game = get_game(label)
    probes = mate_in_one_positions(game, 6, seed=3)
    assert len(probes) == 6
    for probe in probes:
        state = game.new_state()
        for text in probe.moves:
            state.push(state.parse_move(text))
        moves, indices = state.legal_moves_and_indices()
        for move, index in zip(moves, indices, strict=True):
            state.push(move)
            outcome = state.outcome()
            state.pop()
            mates = outcome is not None and outcome.reason == "checkmate"
            assert (int(index) in probe.mates) == mates
    # A policy that always picks a mate solves all; one that never does, none.
    mate_sets = [p.mates for p in probes]
    assert policy_mate_rate(PickingPolicy(mate_sets, inside=True), game, probes) == 1.0
    assert policy_mate_rate(PickingPolicy(mate_sets, inside=False), game, probes) == 0.0


def _heldout_shard(folder):
    """A held-out shard of 6 random Go 5x5 games, its game info and its results ``z``."""
    game, games = random_games("go5", games=6, plies=30, seed=2)
    info = game.info
    arrays = build_shard([g for g, _ in games], info)
    write_shard(folder / "h.npz", arrays, shard_metadata(info, arrays))
    shard = read_shard(folder / "h.npz", info)
    return shard, info, shard.arrays["z"].astype(np.float64)


def test_heldout_losses_and_their_yardsticks(tmp_path) -> None:
    shard, info, z = _heldout_shard(tmp_path)
    assert z.std() > 0
    zero = heldout_errors(RawNetwork(z, np.zeros_like, info.policy_size), [shard], info).summary()
    assert zero["positions"] == len(z)
    assert zero["value_loss"] == pytest.approx(float((z**2).mean())) == pytest.approx(zero["zero_value_loss"])
    assert zero["value_corr"] == 0.0
    perfect = heldout_errors(RawNetwork(z, lambda r: r, info.policy_size), [shard], info).summary()
    assert perfect["value_loss"] == pytest.approx(0.0, abs=1e-6) and perfect["value_corr"] == pytest.approx(
        1.0
    )
    wrong = heldout_errors(RawNetwork(z, lambda r: -0.5 * r, info.policy_size), [shard], info).summary()
    assert wrong["value_corr"] == pytest.approx(-1.0) and wrong["value_loss"] > zero["value_loss"]
    # Uniform logits: the policy loss is log P for any target distribution pi.
    assert zero["policy_loss"] == pytest.approx(np.log(info.policy_size), rel=1e-5)


def test_heldout_errors_keep_each_position_and_its_game(tmp_path) -> None:
    shard, info, z = _heldout_shard(tmp_path)
    both = np.concatenate([z, z])
    errors = heldout_errors(RawNetwork(both, lambda r: 0.5 * r, info.policy_size), [shard, shard], info)
    assert len(errors.values) == 2 * len(z) and len(np.unique(errors.games)) == 12  # shards kept apart
    assert np.allclose(errors.value_errors, 0.25 * both**2)
    assert errors.summary()["value_loss"] == pytest.approx(errors.value_errors.mean())
    assert errors.summary()["games"] == 12


def test_paired_difference_is_bootstrapped_over_games() -> None:
    games = np.repeat(np.arange(40), 25)  # 40 games of 25 positions
    base = np.random.default_rng(1).random(len(games))
    mean, low, high = paired_difference(base + 0.1, base, games)
    assert mean == pytest.approx(0.1) and low == pytest.approx(0.1) and high == pytest.approx(0.1)
    # Half the games better by 1, half worse: mean 0, and the interval is as wide as 40 games allow
    # (+-1.96 / sqrt(40) = +-0.31), not as narrow as 1,000 independent positions would make it.
    shift = np.where(games % 2 == 0, 1.0, -1.0)
    mean, low, high = paired_difference(base + shift, base, games)
    assert mean == pytest.approx(0.0, abs=1e-12)
    assert -0.45 < low < -0.2 and 0.2 < high < 0.45

"""engine.ownership: GTP's dead-stone judgement from a network's ownership head, averaged over the 8
symmetries, with the play-out estimate as the fallback for networks without the head."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from engine.evaluator import Evaluation, Evaluator
from engine.games.go import GoState
from engine.inference import UniformEvaluator
from engine.ownership import network_ownership
from protocols.gtp import judge_position

# A white stone alone at C3 inside black's wall: dead, but random play-outs on a 5x5 board often keep
# it (white lives in some of them), so only an ownership head that knows better calls it dead for sure.
POSITION = "5 7.5 {side} .X.../.X.../XX.../...../....."


class StonesOwnEvaluator(Evaluator):
    """An ownership head that says every stone owns its point and empty points are the side to move's
    when ``empty_mine`` else the opponent's; counts its calls."""

    def __init__(self, empty_mine: float = 0.0) -> None:
        self.empty_mine = empty_mine
        self.batches: list[int] = []

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        raise AssertionError("not a search")

    def ownership(self, planes: np.ndarray) -> np.ndarray:
        self.batches.append(len(planes))
        own, theirs = planes[:, 0], planes[:, 1]  # [B, N, N]
        empty = 1.0 - own - theirs
        return (own - theirs + self.empty_mine * empty).reshape(len(planes), -1).astype(np.float32)


@pytest.mark.parametrize("side", ["b", "w"])
def test_network_ownership_is_from_blacks_view_whoever_is_to_move(side: str) -> None:
    state = GoState.from_text(POSITION.format(side=side))
    evaluator = StonesOwnEvaluator()
    own = network_ownership(state, evaluator)
    assert own is not None and evaluator.batches == [8]  # one call, the 8 symmetries
    board = state.board_array().reshape(-1)
    expected = np.where(board == 1, 1.0, np.where(board == 2, -1.0, 0.0))
    np.testing.assert_allclose(own, expected)  # the symmetries were undone before averaging


def test_a_network_without_the_head_gives_none_and_gtp_falls_back_to_play_outs() -> None:
    state = GoState.from_text(POSITION.format(side="b"))
    assert network_ownership(state, UniformEvaluator(state.info)) is None
    fallback = judge_position(state, 64, UniformEvaluator(state.info))
    assert fallback == judge_position(state, 64)


def test_gtp_judgement_follows_the_head() -> None:
    state = GoState.from_text("5 7.5 b XXXXX/X.O.X/XXXXX/...../.....")

    # a head that gives black everything: the white stone is dead, the score is the whole board - komi
    class BlackEverywhere(StonesOwnEvaluator):
        def ownership(self, planes: np.ndarray) -> np.ndarray:
            sign = np.where(planes[:, 16, 0, 0] == 1.0, 1.0, -1.0)[:, None]  # black to move: black's view
            return np.repeat(sign, planes.shape[-1] ** 2, axis=1).astype(np.float32)

    judgement = judge_position(state, 64, BlackEverywhere())
    assert judgement.dead == [7] and judgement.score == 25 - 7.5
    # a head that calls every stone alive and the empty points neutral: nothing dead, Tromp-Taylor-like
    alive = judge_position(state, 64, StonesOwnEvaluator())
    assert alive.dead == [] and not alive.settled


def test_exported_network_with_the_head_answers_and_one_without_does_not(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    from engine.games import get_game
    from engine.inference import InferenceSettings, OnnxEvaluator
    from trainer.network.export import export_onnx
    from trainer.network.model import build_model

    info = get_game("go9").info
    torch.manual_seed(0)
    planes = np.stack([get_game("go9").new_state().encode()] * 2)
    for heads in (True, False):
        model = build_model(info, "b1c8", ownership=heads).eval()
        path = tmp_path / f"{heads}.onnx"
        export_onnx(model, path, step=0, komi=7.5, made_by="pytest")
        ev = OnnxEvaluator(path, info, InferenceSettings(backend="cpu", batch_size=4))
        got = ev.ownership(planes)
        if heads:
            with torch.no_grad():
                expected = model(torch.from_numpy(planes)).ownership.numpy()
            assert got is not None and got.shape == (2, 81)
            np.testing.assert_allclose(got, expected, atol=1e-4)
        else:
            assert got is None

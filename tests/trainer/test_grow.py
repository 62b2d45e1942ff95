"""trainer.network.grow: a checkpoint grown into a bigger network computes exactly what it did, in evaluation and
in training mode, and the new room learns; what cannot grow is refused; a run resumes grown."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from engine.games import get_game
from trainer.config import preset_config
from trainer.learn.train import Learner
from trainer.network.grow import grow_state, grow_tensor, grows_into
from trainer.network.model import AlphaZeroNet, ModelConfig, build_model


def _trained_looking(model: AlphaZeroNet, seed: int) -> AlphaZeroNet:
    """Every parameter and batch-norm statistic away from its initial value (as after training), so
    that a wrong copy shows in the outputs."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if not tensor.is_floating_point():
                continue
            noise = torch.randn(tensor.shape, generator=gen) * 0.3
            if name.endswith("running_var"):
                tensor.copy_(0.5 + noise.abs())
            else:
                tensor.add_(noise)
    return model


def _outputs(model: AlphaZeroNet, x: torch.Tensor, train: bool) -> list[torch.Tensor]:
    model.train(train)
    with torch.no_grad():
        out = model(x)
    return [t for t in out if t is not None]


CASES = [
    # (game label, stored config options, wanted config options)
    (
        "chess",
        {"blocks": 2, "filters": 8, "value_hidden": 32},
        {"blocks": 3, "filters": 12, "value_hidden": 48},
    ),
    (
        "shogi",
        {"blocks": 1, "filters": 8, "value_hidden": 32},
        {"blocks": 2, "filters": 16, "value_hidden": 32},
    ),
    (
        "go9",
        {
            "blocks": 2,
            "filters": 8,
            "value_hidden": 16,
            "value_head": "pool",
            "global_pooling": True,
            "wdl": True,
        },
        {
            "blocks": 4,
            "filters": 16,
            "value_hidden": 24,
            "value_head": "pool",
            "global_pooling": True,
            "wdl": True,
            "ownership": True,
        },
    ),
    (
        "go9",
        {"blocks": 2, "filters": 8, "value_hidden": 16},
        {"blocks": 2, "filters": 10, "value_hidden": 16, "global_pooling": True},
    ),
]


@pytest.mark.parametrize(("label", "small", "big"), CASES)
def test_the_grown_network_computes_what_the_checkpoint_did(
    label: str, small: dict[str, object], big: dict[str, object]
) -> None:
    info = get_game(label).info
    torch.manual_seed(1)
    stored = _trained_looking(build_model(info, ModelConfig(game=info.label, **small)), seed=2)  # type: ignore[arg-type]
    grown = build_model(info, ModelConfig(game=info.label, **big))  # type: ignore[arg-type]
    report = grow_state(stored.state_dict(), stored.config, grown)
    assert set(report) == set(grown.state_dict())
    kinds = set(report.values())
    assert "grown" in kinds and "copied" in kinds
    new_parts = big["blocks"] != small["blocks"] or "ownership" in big
    new_parts = new_parts or big.get("global_pooling") != small.get("global_pooling")
    assert ("added" in kinds) == new_parts
    # Compared in float64: growing copies the float32 weights exactly and adds exact zeros, so the two
    # networks compute the same function, and only the summation order differs (more channels, other
    # kernels); in float32 that order alone moved outputs by 2.4e-4 on an AMD EPYC CPU (AVX-512 or not
    # decides the kernels), in float64 it stays near 1e-13, far inside 1e-9 on any CPU.
    stored, grown = stored.double(), grown.double()
    x = torch.rand(4, *info.input_shape, dtype=torch.float64)
    for train in (False, True):  # running statistics, then each batch's own
        for a, b in zip(
            _outputs(stored, x, train), _outputs(grown, x, train), strict=False
        ):  # grown may add heads
            assert a.shape == b.shape and a.dtype == torch.float64
            assert torch.allclose(a, b, atol=1e-9, rtol=1e-9), (label, train, float((a - b).abs().max()))
    assert grown.config.preset == f"b{big['blocks']}c{big['filters']}"


def test_the_new_room_learns_from_the_first_step() -> None:
    """The zeros that keep the function (old units reading new channels, a new block's last scale) get
    gradients at once: the grown network is not stuck at the small one."""
    info = get_game("chess").info
    torch.manual_seed(3)
    stored = _trained_looking(build_model(info, "b1c8"), seed=4)
    grown = build_model(info, "b2c12")
    grow_state(stored.state_dict(), stored.config, grown)
    grown.train()
    out = grown(torch.rand(8, *info.input_shape))
    (out.policy.square().mean() + out.value.square().mean()).backward()
    params = dict(grown.named_parameters())
    old_reads_new = params["tower.0.conv1.weight"].grad[:8, 8:]  # zero weights, old rows, new columns
    assert params["tower.0.conv1.weight"][:8, 8:].abs().max() == 0
    assert old_reads_new is not None and old_reads_new.abs().max() > 0
    new_scale = params["tower.1.bn2.weight"]
    assert new_scale.abs().max() == 0 and new_scale.grad is not None and new_scale.grad.abs().max() > 0
    head_reads_new = params["policy_head.out.weight"].grad
    assert head_reads_new is not None and head_reads_new[:, 8:].abs().max() > 0


def test_pooling_layer_inputs_keep_their_halves() -> None:
    stored = torch.arange(1.0, 9.0).reshape(2, 4)  # 2 channels: inputs mean0 mean1 max0 max1
    fresh = torch.full((3, 6), 7.0)
    out = grow_tensor("tower.1.pool_fc.weight", stored, fresh)
    expected = torch.tensor(
        [[1.0, 2.0, 0.0, 3.0, 4.0, 0.0], [5.0, 6.0, 0.0, 7.0, 8.0, 0.0], [7.0, 7.0, 7.0, 7.0, 7.0, 7.0]]
    )
    assert torch.equal(out, expected)
    assert torch.equal(fresh, torch.full((3, 6), 7.0))  # not modified


def test_what_cannot_grow_is_refused() -> None:
    small = ModelConfig(game="chess", blocks=2, filters=8, value_hidden=32)
    assert grows_into(small, dataclasses.replace(small, blocks=3, filters=16, value_hidden=64))
    assert grows_into(small, small)
    for other in (
        dataclasses.replace(small, blocks=1),
        dataclasses.replace(small, filters=4),
        dataclasses.replace(small, value_hidden=16),
        dataclasses.replace(small, value_head="pool"),
        dataclasses.replace(small, wdl=True),
        dataclasses.replace(small, game="shogi"),
    ):
        assert not grows_into(small, other), other  # a WDL head is not grown either
    assert not grows_into(dataclasses.replace(small, wdl=True), small)  # a head is never dropped
    assert not grows_into(dataclasses.replace(small, global_pooling=True), small)
    info = get_game("chess").info
    with pytest.raises(ValueError, match="cannot grow"):
        grow_state(
            build_model(info, "b2c16").state_dict(),
            ModelConfig(game="chess", blocks=2, filters=16, value_hidden=64),
            build_model(info, "b2c8"),
        )
    with pytest.raises(ValueError, match="kernel"):
        grow_tensor("stem.0.weight", torch.zeros(4, 3, 3, 3), torch.zeros(8, 3, 5, 5))
    with pytest.raises(ValueError, match="cannot grow"):
        grow_tensor("stem.0.weight", torch.zeros(8, 3, 3, 3), torch.zeros(4, 3, 3, 3))


def test_a_run_resumes_into_a_bigger_preset() -> None:
    """``Learner.load_state`` with a checkpoint of a smaller preset: step kept, same outputs; back down
    is refused."""
    info = get_game("chess").info
    small = Learner(info, preset_config("tiny", "chess").replace("model", preset="b1c8"))
    _trained_looking(small.model, seed=5)
    small.step = 1234
    big = Learner(info, preset_config("tiny", "chess").replace("model", preset="b2c16"))
    big.load_state(small.state())
    assert big.step == 1234 and big.model.config.preset == "b2c16"
    x = torch.rand(2, *info.input_shape)
    for a, b in zip(_outputs(small.model, x, False), _outputs(big.model, x, False), strict=False):
        assert torch.allclose(a, b, atol=2e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="differs"):
        small.load_state(big.state())

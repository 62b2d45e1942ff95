"""trainer.config: presets, TOML round trips, overrides."""

from __future__ import annotations

import pytest

from trainer.config import (
    PRESET_NAMES,
    RunConfig,
    apply_overrides,
    build_config,
    config_from_toml,
    config_to_toml,
    make_game,
    parse_assignment,
    preset_config,
)


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("game", ["chess", "shogi", "go9", "go19"])
def test_presets_round_trip_through_toml(preset: str, game: str) -> None:
    config = preset_config(preset, game)
    assert config.preset == preset
    assert config_from_toml(config_to_toml(config)) == config


def test_paper_preset_follows_the_paper() -> None:
    config = preset_config("paper", "chess")
    assert config.selfplay.simulations == 800
    assert config.model.preset == "paper"
    assert [lr for _, lr in config.train.lr_schedule] == [0.2, 0.02, 0.002, 0.0002]
    assert config.train.momentum == 0.9 and config.train.l2 == 1e-4
    assert config.selfplay.dirichlet_epsilon == 0.25
    assert (
        config.train.lr_at(0) == 0.2
        and config.train.lr_at(150_000) == 0.02
        and config.train.lr_at(10**6) == 0.0002
    )


def test_go_komi_defaults_and_game_settings() -> None:
    assert preset_config("tiny", "go", 7).game.effective_komi() == 9.0
    assert preset_config("tiny", "go9").game.effective_komi() == 7.5
    game = make_game(preset_config("tiny", "go", 7).game)
    assert game.info.board_size == 7 and game.new_state().komi == 9.0
    assert make_game(preset_config("tiny", "chess").game).info.policy_size == 4672


def test_overrides_files_and_flags(tmp_path) -> None:
    toml = tmp_path / "s.toml"
    toml.write_text(
        '[selfplay]\nsimulations = 42\ndirichlet_alpha = "none"\n[train]\nlr_schedule = [[0, 0.1], [10, 0.01]]\n'
    )
    config = build_config(
        "tiny",
        "go",
        9,
        [toml],
        ["train.batch_size=8", "run.device=cpu", "game.komi=6.5"],
        {"selfplay": {"workers": 0}},
    )
    assert config.selfplay.simulations == 42 and config.selfplay.dirichlet_alpha is None
    assert config.train.lr_schedule == ((0, 0.1), (10, 0.01))
    assert config.train.batch_size == 8 and config.game.komi == 6.5 and config.selfplay.workers == 0


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown setting train\.bogus"):
        apply_overrides(RunConfig(), {"train": {"bogus": 1}})
    with pytest.raises(ValueError, match="unknown section"):
        apply_overrides(RunConfig(), {"nope": {}})
    with pytest.raises(ValueError, match="integer"):
        apply_overrides(RunConfig(), {"train": {"batch_size": 1.5}})
    with pytest.raises(ValueError, match=r"section\.key=value"):
        parse_assignment("batch_size=3")
    assert parse_assignment("run.device=cuda") == {"run": {"device": "cuda"}}


def test_a_retired_setting_loads_with_a_warning(tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    # run folders and packs made before still load: selfplay.cache_size served only the Python tree
    toml = tmp_path / "config.toml"
    toml.write_text("[selfplay]\ncache_size = 20000\nsimulations = 12\n", encoding="utf-8")
    with caplog.at_level("WARNING"):
        config = build_config("tiny", "go", 9, [toml], [], {})
    assert config.selfplay.simulations == 12 and not hasattr(config.selfplay, "cache_size")
    assert "ignoring the retired setting selfplay.cache_size" in caplog.text
    with pytest.raises(ValueError, match=r"unknown setting selfplay\.cache_sizes"):
        apply_overrides(RunConfig(), {"selfplay": {"cache_sizes": 1}})


def test_shogi_presets_play_playout_caps() -> None:
    """Playout caps won their shogi A/B at equal CPU (docs/experiments.md): every shogi preset but the
    paper's searches a quarter of the moves with twice its visits and the rest with half; chess and Go
    search every move alike."""
    from trainer.config import PRESET_NAMES, preset_config

    tiny = preset_config("tiny", "shogi").selfplay
    assert (tiny.playout_cap, tiny.simulations, tiny.fast_simulations, tiny.full_search_fraction) == (
        True,
        64,
        16,
        0.25,
    )
    assert preset_config("tiny", "shogi").evaluate.simulations == 32
    for preset in PRESET_NAMES:
        shogi = preset_config(preset, "shogi").selfplay
        chess = preset_config(preset, "chess").selfplay
        assert shogi.playout_cap == (preset != "paper")
        if preset != "paper":
            assert shogi.simulations == 2 * chess.simulations
            assert shogi.fast_simulations == chess.simulations // 2
        assert not chess.playout_cap and not preset_config(preset, "go9").selfplay.playout_cap
    assert preset_config("paper", "shogi").selfplay.simulations == 800


def test_go_presets_keep_eyes_in_self_play() -> None:
    """The eye rule won its A/B on Go 9x9 (docs/experiments.md): on in every Go preset, nowhere else."""
    from trainer.config import PRESET_NAMES, preset_config

    for preset in PRESET_NAMES:
        assert preset_config(preset, "go9").selfplay.go_keep_eyes
        assert preset_config(preset, "go19").selfplay.go_keep_eyes
        assert not preset_config(preset, "chess").selfplay.go_keep_eyes

"""How the network gets the machine (``engine.network_loading.inference_plan``): ``Threads N`` is one
call on N threads; ``Threads 0`` gives every core to calls in flight of one thread each, at most
``MAX_CALLS_IN_FLIGHT`` of them, the cores shared among them."""

from __future__ import annotations

import os

import pytest

from engine.games import get_game
from engine.network_loading import (
    MAX_CALLS_IN_FLIGHT,
    InferencePlan,
    inference_plan,
    policy_temperature_for,
)
from engine.options import EngineOptions
from engine.session import Session


@pytest.mark.parametrize(
    ("threads", "cores", "plan"),
    [
        (0, 1, InferencePlan(threads=1, calls=1)),
        (0, 2, InferencePlan(threads=1, calls=2)),
        (0, 3, InferencePlan(threads=1, calls=3)),
        (0, 16, InferencePlan(threads=4, calls=4)),
        (0, 18, InferencePlan(threads=4, calls=4)),
        (1, 16, InferencePlan(threads=1, calls=1)),
        (6, 2, InferencePlan(threads=6, calls=1)),
    ],
)
def test_inference_plan(threads: int, cores: int, plan: InferencePlan) -> None:
    assert inference_plan(threads, cores) == plan


def test_the_default_uses_every_core_of_this_machine() -> None:
    cores = os.cpu_count() or 1
    plan = inference_plan(0)
    assert plan == inference_plan(0, cores) and plan.calls == min(cores, MAX_CALLS_IN_FLIGHT)
    assert plan.calls * plan.threads <= cores


@pytest.mark.parametrize(
    ("plan", "on_cpu", "off_cpu"),
    [
        (InferencePlan(threads=1, calls=1), 1, 1),
        (InferencePlan(threads=1, calls=2), 1, 2),
        (InferencePlan(threads=4, calls=4), 3, 4),
    ],
)
def test_a_network_on_the_cpu_has_one_helper_fewer(plan: InferencePlan, on_cpu: int, off_cpu: int) -> None:
    """The search thread makes queued calls itself when the network shares its cores."""
    assert plan.helpers(shares_cores=True) == on_cpu
    assert plan.helpers(shares_cores=False) == off_cpu


def test_the_session_sizes_its_helpers_by_where_the_network_runs() -> None:
    session = Session("chess", EngineOptions(threads=0))
    session.ensure_ready()
    assert session.evaluator is not None and session.evaluator.shares_cores  # the shipped network, CPU
    assert session._helpers == inference_plan(0).helpers(True)
    session.set_options(threads=2)  # one call on two threads: one helper
    assert session._helpers == 1
    session.close()


def test_policy_temperature_by_game_unless_chosen() -> None:
    chess, shogi, go = get_game("chess"), get_game("shogi"), get_game("go", board_size=9)
    assert policy_temperature_for(chess) == chess.profile.policy_temperature == 2.2
    assert policy_temperature_for(shogi) == 3.0
    assert policy_temperature_for(go) == 1.0
    assert policy_temperature_for(chess, 1.0) == 1.0
    assert policy_temperature_for(go, 2.5) == 2.5
    assert policy_temperature_for(chess, None, limit_strength=True) == 1.0  # as calibrated
    assert policy_temperature_for(chess, 1.3, limit_strength=True) == 1.3


def test_the_session_network_runs_at_the_policy_temperature_and_reloads_on_a_change() -> None:
    session = Session("chess", EngineOptions(threads=1))
    session.ensure_ready()
    assert session.evaluator is not None
    assert session.evaluator.settings.policy_temperature == 2.2  # type: ignore[attr-defined]
    session.set_options(policy_temperature=1.2)
    session.ensure_ready()
    assert session.evaluator.settings.policy_temperature == 1.2  # type: ignore[attr-defined]
    session.set_options(policy_temperature=None, limit_strength=True)
    session.ensure_ready()
    assert session.evaluator.settings.policy_temperature == 1.0  # type: ignore[attr-defined]
    session.close()

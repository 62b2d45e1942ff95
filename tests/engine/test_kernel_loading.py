"""The kernel loader (engine/kernel_loading.py): it loads on its own thread and never runs the full
collection that freezes what loading made (0.1-0.25 s with the GIL held, beside a running search); the
session asks for that freeze, once, while no search runs."""

from __future__ import annotations

import pytest

from engine import kernel_loading
from engine.kernel_loading import KernelLoader


def test_loading_freezes_nothing_until_asked_and_then_once(monkeypatch: pytest.MonkeyPatch) -> None:
    collections: list[int] = []
    freezes: list[int] = []
    monkeypatch.setattr(kernel_loading, "load_kernels", lambda name: [object() for _ in range(1000)])
    monkeypatch.setattr(kernel_loading.gc, "collect", lambda *a: collections.append(1) or 0)
    # counted, not read from gc.get_freeze_count: another test's thread ending frees frozen objects
    monkeypatch.setattr(kernel_loading.gc, "freeze", lambda: freezes.append(1))
    loader = KernelLoader("go")
    loader.start()
    assert loader.wait(30) and loader.ready
    assert collections == [] and freezes == []  # the loading thread froze nothing
    loader.freeze_once_loaded()
    assert collections == [1] and freezes == [1]
    loader.freeze_once_loaded()
    assert collections == [1] and freezes == [1]  # once


def test_a_failed_loading_is_never_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(name: str) -> None:
        raise RuntimeError("no kernels")

    collections: list[int] = []
    monkeypatch.setattr(kernel_loading, "load_kernels", fail)
    monkeypatch.setattr(kernel_loading.gc, "collect", lambda *a: collections.append(1) or 0)
    loader = KernelLoader("go")
    loader.start()
    assert loader.wait(30) and loader.done and not loader.ready
    loader.freeze_once_loaded()
    assert collections == []

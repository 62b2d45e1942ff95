"""``tabula analysis`` (protocols/analysis/): KataGo's JSON analysis protocol for Go, chess and shogi.

In-process tests drive :class:`AnalysisHandler` line by line and read its JSON answers; the bad-input
table sends each bad query and then a good one, which must still be answered.  A subprocess test drives
the real program with a plain script, as katawrap's users do; another checks that a position analysed
here gets the best move the engine's own ``go nodes`` search plays.
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.evaluator import Evaluation, Evaluator, LegalRows, uniform_rows
from engine.options import EngineOptions
from engine.search.limits import SearchLimits
from engine.session import Session
from protocols.analysis.batching import SharedNetwork
from protocols.analysis.query import QUERY_FIELDS, QueryError, parse_query
from protocols.analysis.server import AnalysisHandler, AnalysisSettings
from protocols.loop import Output
from tests.process import EngineProcess


class Capture:
    """An :class:`Output` target whose lines are read back as JSON objects."""

    def __init__(self) -> None:
        self.buffer = io.BytesIO()
        self.output = Output(self.buffer)
        self._read = 0

    def objects(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.buffer.getvalue().decode().splitlines() if line]

    def new(self) -> list[dict[str, Any]]:
        """The objects written since the last call."""
        out = self.objects()
        fresh = out[self._read :]
        self._read = len(out)
        return fresh


@pytest.fixture
def server() -> Iterator[tuple[AnalysisHandler, Capture]]:
    capture = Capture()
    handler = AnalysisHandler(capture.output, None, AnalysisSettings(analysis_threads=4, go_sizes=(9, 19)))
    yield handler, capture
    handler.close()


def go9(qid: str, moves: list[list[str]], **extra: Any) -> str:
    query = {"id": qid, "moves": moves, "rules": "chinese", "komi": 7, "boardXSize": 9, "boardYSize": 9}
    return json.dumps({**query, **extra})


def finals(objects: list[dict[str, Any]], qid: str) -> list[dict[str, Any]]:
    return [o for o in objects if o.get("id") == qid and "turnNumber" in o and not o.get("isDuringSearch")]


# ---- queries, no search -----------------------------------------------------------------------------
def test_a_go_query_is_read_into_its_turns() -> None:
    obj = json.loads(go9("q", [["B", "E5"], ["W", "C3"], ["B", "G7"]], analyzeTurns=[0, 2], priority=3))
    query = parse_query(obj)
    assert query.game == "go9"
    assert [t.number for t in query.turns] == [0, 2]
    assert [t.priority for t in query.turns] == [3, 3]
    assert query.turns[0].state.move_stack == []
    assert len(query.turns[1].state.move_stack) == 2
    assert query.turns[1].state.side_to_move == 0  # black to move after B, W


def test_initial_stones_and_player_make_the_start_position() -> None:
    obj = json.loads(go9("q", [], initialStones=[["B", "C3"], ["W", "G7"]], initialPlayer="W"))
    state = parse_query(obj).turns[0].state
    assert state.side_to_move == 1
    board = state.board_array()
    assert board[6, 2] == 1 and board[2, 6] == 2  # C3 black, G7 white (rows from the top)


def test_chess_and_shogi_queries_take_fen_sfen_and_protocol_moves() -> None:
    chess = parse_query({"id": "c", "game": "chess", "moves": ["e2e4", "e7e5"], "analyzeTurns": [1, 2]})
    assert [t.state.to_text().split()[1] for t in chess.turns] == ["b", "w"]
    fen = "4k3/8/8/8/8/8/8/4K2R w K - 0 1"
    castle = parse_query({"id": "c", "game": "chess", "initialPosition": fen, "moves": ["e1g1"]})
    assert castle.turns[0].state.to_text().startswith("4k3/8/8/8/8/8/8/5RK1 b")
    shogi = parse_query({"id": "s", "game": "shogi", "moves": ["7g7f", "3c3d"]})
    assert shogi.game == "shogi" and len(shogi.turns[0].state.move_stack) == 2


def test_allow_and_avoid_moves_restrict_the_root_of_the_side_to_move() -> None:
    allow = [{"player": "B", "moves": ["E5", "D4"], "untilDepth": 1}]
    turn = parse_query(json.loads(go9("q", [], allowMoves=allow))).turns[0]
    assert sorted(turn.state.move_to_text(m) for m in turn.searchmoves) == ["D4", "E5"]
    avoid = [{"player": "B", "moves": ["E5"], "untilDepth": 1}]
    turn = parse_query(json.loads(go9("q", [], avoidMoves=avoid))).turns[0]
    texts = {turn.state.move_to_text(m) for m in turn.searchmoves}
    assert "E5" not in texts and "D4" in texts and len(texts) == 81  # 80 points and the pass


def test_katrain_settings_are_read_and_territory_rules_warned() -> None:
    obj = json.loads(
        go9(
            "q",
            [],
            rules="japanese",
            overrideSettings={"reportAnalysisWinratesAs": "BLACK", "wideRootNoise": 0.0},
        )
    )
    query = parse_query(obj)
    assert query.perspective == "BLACK"
    assert [w.field for w in query.warnings] == ["rules"]


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ({"id": "q", "moves": [], "rules": "chinese", "boardXSize": 9, "boardYSize": 13}, "boardYSize"),
        ({"id": "q", "moves": [], "rules": "chinese", "boardXSize": 25, "boardYSize": 25}, "boardXSize"),
        ({"id": "q", "moves": [], "rules": "chinese", "boardXSize": 13, "boardYSize": 13}, "boardXSize"),
        ({"id": "q", "moves": [["B", "Z9"]], "rules": "chinese", "boardXSize": 9, "boardYSize": 9}, "moves"),
        (
            {
                "id": "q",
                "moves": [],
                "rules": "chinese",
                "boardXSize": 9,
                "boardYSize": 9,
                "analyzeTurns": [1],
            },
            "analyzeTurns",
        ),
        (
            {"id": "q", "moves": [], "rules": "chinese", "boardXSize": 9, "boardYSize": 9, "maxVisits": 0},
            "maxVisits",
        ),
        ({"id": "q", "moves": [], "rules": "no-such", "boardXSize": 9, "boardYSize": 9}, "rules"),
        ({"id": "q", "moves": [], "boardXSize": 9, "boardYSize": 9}, "rules"),
        ({"id": "q", "game": "chess", "moves": ["e2e5"]}, "moves"),
        ({"id": "q", "game": "chess", "initialPosition": "not a fen", "moves": []}, "initialPosition"),
        ({"id": "q", "game": "shogi", "moves": ["7g7f", "7g7f"]}, "moves"),
        ({"id": "q", "game": "checkers", "moves": []}, "game"),
        ({"moves": []}, "id"),
    ],
)
def test_bad_fields_are_named(obj: dict[str, Any], field: str) -> None:
    with pytest.raises(QueryError) as caught:
        parse_query(obj, go_sizes=(9, 19))
    assert caught.value.field == field


# ---- the handler: bad input, then the next query is answered ------------------------------------------
BAD_INPUTS: list[tuple[str, str, dict[str, Any]]] = [
    ("malformed json", '{"id": "x", "moves": [', {"error_contains": "Could not parse json"}),
    ("not an object", "[1, 2, 3]", {"error_contains": "not an object"}),
    (
        "illegal move",
        go9("x", [["B", "E5"], ["W", "E5"]]),
        {"id": "x", "field": "moves", "error_contains": "Illegal move 1"},
    ),
    (
        "wrong board size",
        json.dumps({"id": "x", "moves": [], "rules": "chinese", "boardXSize": 9, "boardYSize": 7}),
        {"id": "x", "field": "boardYSize"},
    ),
    ("unknown action", json.dumps({"id": "x", "action": "explode"}), {"id": "x", "field": "action"}),
    (
        "terminate unknown id",
        json.dumps({"id": "x", "action": "terminate", "terminateId": "nobody"}),
        {"id": "x", "field": "terminateId"},
    ),
    (
        "ten megabyte line",
        '{"id": "x", "moves": "' + "a" * 10_000_000 + '"}',
        {"error_contains": "longer than"},
    ),
]


@pytest.mark.parametrize(("name", "line", "expected"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_gets_katago_error_form_and_the_engine_goes_on(
    server: tuple[AnalysisHandler, Capture], name: str, line: str, expected: dict[str, Any]
) -> None:
    handler, capture = server
    assert handler.handle(line)
    (answer,) = capture.new()
    assert set(answer) <= {"id", "error", "field"} and "error" in answer
    assert expected.get("error_contains", "") in answer["error"]
    for key in ("id", "field"):
        if key in expected:
            assert answer[key] == expected[key]
    handler.handle(json.dumps({"id": "v", "action": "query_version"}))
    (version,) = capture.new()
    assert version["id"] == "v" and version["action"] == "query_version" and "version" in version


def test_unknown_fields_warn_and_the_query_is_still_analysed(server: tuple[AnalysisHandler, Capture]) -> None:
    handler, capture = server
    handler.handle(go9("u", [["B", "E5"]], maxVisits=16, colourOfTheSky="blue"))
    assert handler.wait_idle(120)
    objects = capture.new()
    assert objects[0] == {
        "id": "u",
        "warning": "Unexpected or unused field 'colourOfTheSky'",
        "field": "colourOfTheSky",
    }
    (final,) = finals(objects, "u")
    assert final["rootInfo"]["visits"] >= 16


def test_a_duplicate_id_is_refused_while_its_query_is_open(server: tuple[AnalysisHandler, Capture]) -> None:
    handler, capture = server
    handler.handle(go9("d", [], maxVisits=1_000_000))
    handler.handle(go9("d", [], maxVisits=10))
    handler.handle(json.dumps({"id": "t", "action": "terminate", "terminateId": "d"}))
    assert handler.wait_idle(60)
    objects = capture.new()
    assert {
        "id": "d",
        "error": "Duplicate id 'd': a query with this id is still being analysed",
        "field": "id",
    } in objects
    assert len(finals(objects, "d")) == 1


# ---- analysis ---------------------------------------------------------------------------------------
def test_go_analysis_answers_every_turn_with_katrain_fields(server: tuple[AnalysisHandler, Capture]) -> None:
    handler, capture = server
    moves = [["B", "E5"], ["W", "C3"], ["B", "G7"]]
    handler.handle(
        go9(
            "g",
            moves,
            analyzeTurns=[0, 1, 3],
            maxVisits=40,
            includeOwnership=True,
            includeMovesOwnership=True,
            includePolicy=True,
            overrideSettings={"reportAnalysisWinratesAs": "BLACK"},
        )
    )
    assert handler.wait_idle(120)
    objects = capture.new()
    assert not [o for o in objects if "warning" in o]
    answers = {a["turnNumber"]: a for a in finals(objects, "g")}
    assert sorted(answers) == [0, 1, 3]
    for turn, answer in answers.items():
        root = answer["rootInfo"]
        assert root["visits"] >= 40 and 0.0 <= root["winrate"] <= 1.0
        assert isinstance(root["scoreLead"], float)
        assert root["currentPlayer"] == "BW"[turn % 2]
        infos = answer["moveInfos"]
        assert [m["order"] for m in infos] == list(range(len(infos)))
        assert sum(m["visits"] for m in infos) <= root["visits"]
        assert infos[0]["visits"] == max(m["visits"] for m in infos)
        assert all(m["pv"][0] == m["move"] and "scoreLead" in m and 0 <= m["prior"] <= 1 for m in infos)
        assert len(answer["ownership"]) == 81 and all(-1 <= v <= 1 for v in answer["ownership"])
        stones = {"E5": 1, "C3": -1, "G7": 1}  # + black's (the BLACK view), the stones of the turn
        on_board = [v for v, _ in zip(stones, range(turn), strict=False)]
        for info in infos:  # after each move the stones on the board stay their players'
            assert len(info["ownership"]) == 81
            for vertex in on_board:
                point = (9 - int(vertex[1:])) * 9 + "ABCDEFGHJ".index(vertex[0])
                assert info["ownership"][point] * stones[vertex] > 0.3, (turn, info["move"], vertex)
        policy = answer["policy"]
        assert len(policy) == 82 and abs(sum(p for p in policy if p >= 0) - 1) < 1e-4
    # E5, C3 and G7 are taken at turn 3: their policy entries are -1 (rows from the top, A9 first)
    policy3 = answers[3]["policy"]
    assert policy3[4 * 9 + 4] == -1 and policy3[6 * 9 + 2] == -1 and policy3[2 * 9 + 6] == -1


def test_black_perspective_turns_the_values_of_white_to_move(server: tuple[AnalysisHandler, Capture]) -> None:
    handler, capture = server
    for qid, perspective in (("b", "BLACK"), ("s", "SIDETOMOVE")):
        handler.handle(
            go9(qid, [["B", "E5"]], maxVisits=24, overrideSettings={"reportAnalysisWinratesAs": perspective})
        )
    assert handler.wait_idle(120)
    objects = capture.new()
    (black,), (mover,) = finals(objects, "b"), finals(objects, "s")
    assert black["rootInfo"]["winrate"] == pytest.approx(1 - mover["rootInfo"]["winrate"])
    assert black["rootInfo"]["scoreLead"] == pytest.approx(-mover["rootInfo"]["scoreLead"])


def test_chess_and_shogi_answers_carry_wdl_centipawns_and_mates(
    server: tuple[AnalysisHandler, Capture],
) -> None:
    handler, capture = server
    mate_in_one = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # Ra8#
    handler.handle(
        json.dumps({"id": "m", "game": "chess", "initialPosition": mate_in_one, "moves": [], "maxVisits": 30})
    )
    handler.handle(
        json.dumps({"id": "s", "game": "shogi", "moves": ["7g7f"], "maxVisits": 30, "includePolicy": True})
    )
    assert handler.wait_idle(120)
    objects = capture.new()
    (mate,), (shogi,) = finals(objects, "m"), finals(objects, "s")
    best = mate["moveInfos"][0]
    assert best["move"] == "a1a8" and best["mate"] == 1 and best["wdl"] == [1000, 0, 0]
    line = shogi["moveInfos"][0]
    assert isinstance(line["scoreCp"], int) and sum(line["wdl"]) == 1000
    assert shogi["rootInfo"]["currentPlayer"] == "W"
    assert abs(sum(shogi["policy"].values()) - 1) < 1e-4 and line["move"] in shogi["policy"]


def test_reports_during_search_then_one_final_answer(server: tuple[AnalysisHandler, Capture]) -> None:
    handler, capture = server
    handler.handle(go9("r", [], maxVisits=1_000_000, reportDuringSearchEvery=0.05))
    time.sleep(1.0)
    handler.handle(json.dumps({"id": "t", "action": "terminate", "terminateId": "r"}))
    assert handler.wait_idle(30)
    objects = [o for o in capture.new() if o.get("id") == "r"]
    assert len(objects) >= 2 and all(o["isDuringSearch"] for o in objects[:-1])
    assert objects[-1]["isDuringSearch"] is False
    assert objects[-1]["rootInfo"]["visits"] >= objects[-2]["rootInfo"]["visits"]
    # every Go move of every report has its scoreLead (KaTrain keeps the moves of earlier reports)
    assert all("scoreLead" in info for o in objects for info in o["moveInfos"])


def test_terminate_stops_a_search_at_once_and_answers_queued_turns_without_results(
    server: tuple[AnalysisHandler, Capture],
) -> None:
    handler, capture = server
    handler.handle(go9("k", [["B", "E5"]] * 0, analyzeTurns=[0], maxVisits=10_000_000))
    many = [["B", "E5"], ["W", "C3"], ["B", "G7"], ["W", "C7"], ["B", "G3"], ["W", "D5"]]
    handler.handle(go9("many", many, analyzeTurns=list(range(7)), maxVisits=10_000_000))
    time.sleep(1.0)
    started = time.monotonic()
    handler.handle(json.dumps({"id": "t1", "action": "terminate", "terminateId": "many"}))
    handler.handle(json.dumps({"id": "t2", "action": "terminate", "terminateId": "k", "turnNumbers": [0]}))
    assert handler.wait_idle(10)
    assert time.monotonic() - started < 5.0
    objects = capture.new()
    assert {"id": "t1", "action": "terminate", "terminateId": "many"} in objects
    answers = finals(objects, "many")
    assert sorted(a["turnNumber"] for a in answers) == list(range(7))
    assert any(a.get("noResults") for a in answers)  # 4 threads: some turns never started
    assert any("moveInfos" in a for a in answers)  # the running ones answer with what they have


def test_queued_positions_are_taken_by_priority_then_arrival() -> None:
    capture = Capture()
    handler = AnalysisHandler(capture.output, None, AnalysisSettings(analysis_threads=1, go_sizes=(9,)))
    try:
        handler.handle(go9("block", [], maxVisits=10_000_000))
        time.sleep(0.5)  # the one worker is busy: the next three queue up
        handler.handle(go9("low", [], maxVisits=8, priority=-1))
        handler.handle(go9("first", [], maxVisits=8, priority=5))
        handler.handle(go9("second", [], maxVisits=8, priority=5))
        handler.handle(json.dumps({"id": "t", "action": "terminate", "terminateId": "block"}))
        assert handler.wait_idle(60)
        order = [o["id"] for o in capture.objects() if "turnNumber" in o]
        assert order == ["block", "first", "second", "low"]
    finally:
        handler.close()


def _session_best(label: str, moves: list[str], visits: int) -> str:
    session = Session(label, EngineOptions())
    try:
        session.ensure_ready()
        session.set_position(None, moves)
        result = session.search(SearchLimits(nodes=visits))
        return session.state.move_to_text(result.best_move)
    finally:
        session.close()


@pytest.mark.slow
def test_the_best_moves_are_those_of_the_engines_own_node_limited_search(
    server: tuple[AnalysisHandler, Capture],
) -> None:
    handler, capture = server
    chess = ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4"]
    shogi = ["7g7f", "3c3d", "2g2f", "8c8d"]
    handler.handle(
        json.dumps(
            {"id": "c", "game": "chess", "moves": chess, "analyzeTurns": list(range(7)), "maxVisits": 120}
        )
    )
    handler.handle(
        json.dumps(
            {"id": "s", "game": "shogi", "moves": shogi, "analyzeTurns": list(range(5)), "maxVisits": 120}
        )
    )
    assert handler.wait_idle(300)
    objects = capture.new()
    for qid, label, moves in (("c", "chess", chess), ("s", "shogi", shogi)):
        got = {a["turnNumber"]: a["moveInfos"][0]["move"] for a in finals(objects, qid)}
        want = {t: _session_best(label, moves[:t], 120) for t in got}
        assert got == want


# ---- the shared network ---------------------------------------------------------------------------------
class CountingEvaluator(Evaluator):
    """Uniform priors, value = the first plane's first entry; counts the rows of each call."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def evaluate(self, planes: np.ndarray, legal: Any) -> list[Evaluation]:
        raise AssertionError("the shared network uses evaluate_dense")

    def evaluate_dense(self, planes: np.ndarray, legal: LegalRows) -> tuple[np.ndarray, np.ndarray]:
        self.calls.append(len(legal))
        return uniform_rows(legal), planes[:, 0, 0, 0].astype(np.float32)


def _rows(values: list[float]) -> tuple[np.ndarray, LegalRows]:
    planes = np.zeros((len(values), 2, 3, 3), np.float32)
    planes[:, 0, 0, 0] = values
    legal = LegalRows(np.tile(np.arange(4, dtype=np.int64), (len(values), 1)), np.full(len(values), 4))
    return planes, legal


def test_batches_of_many_searches_share_one_call_and_known_rows_are_not_evaluated_again() -> None:
    evaluator = CountingEvaluator()
    network = SharedNetwork(evaluator, calls=1, max_rows=64, linger_s=5.0)
    jobs = [network.attach() for _ in range(3)]
    results: list[tuple[np.ndarray, np.ndarray]] = [None] * 3  # type: ignore[list-item]

    def run(i: int) -> None:
        results[i] = jobs[i].evaluate_dense(*_rows([float(i), 10.0 + i]))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert evaluator.calls == [6]  # every attached search waited: one call, long before the linger
    assert [r[1].tolist() for r in results] == [[0.0, 10.0], [1.0, 11.0], [2.0, 12.0]]
    assert results[0][0].shape == (2, 4) and np.allclose(results[0][0], 0.25)
    again = jobs[0].evaluate_dense(*_rows([1.0, 2.0]))  # both rows were evaluated for other searches
    assert evaluator.calls == [6] and again[1].tolist() == [1.0, 2.0] and network.rows_cached == 2
    network.clear_cache()
    for job in jobs[1:]:
        job.close()
    jobs[0].evaluate_dense(*_rows([1.0]))
    assert evaluator.calls == [6, 1]
    network.close()


# ---- the real program, driven by a plain script ------------------------------------------------------
@pytest.mark.slow
def test_a_plain_subprocess_script_analyses_a_game() -> None:
    from tests.process import tabula_command

    proc = EngineProcess(["analysis", "--analysis-threads", "4"], command=tabula_command())
    try:
        moves = [["B", "E5"], ["W", "C3"], ["B", "G7"], ["W", "C7"]]
        proc.send(json.dumps({"id": "ver", "action": "query_version"}))
        proc.send(go9("game", moves, analyzeTurns=list(range(5)), maxVisits=30, includeOwnership=True))
        proc.send("this is not json")
        answers: dict[int, dict[str, Any]] = {}
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + 120
        while len(answers) < 5 and time.monotonic() < deadline:
            obj = json.loads(proc.read_line(timeout=120))
            seen.append(obj)
            if obj.get("id") == "game" and not obj.get("isDuringSearch"):
                answers[obj["turnNumber"]] = obj
        assert sorted(answers) == [0, 1, 2, 3, 4]
        assert any(o.get("id") == "ver" and "version" in o for o in seen)
        assert any(o.get("error", "").startswith("Could not parse json") for o in seen)
        assert all(len(a["ownership"]) == 81 for a in answers.values())
        assert proc.proc.stdin is not None
        proc.proc.stdin.close()  # EOF: the engine finishes and exits
        assert proc.proc.wait(timeout=60) == 0
    finally:
        if proc.proc.poll() is None:
            proc.proc.kill()


# ---- fuzz: any JSON object is a query or a QueryError, never another exception -------------------------
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 400) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
FIELDS = sorted(QUERY_FIELDS - {"maxVisits"})


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, max_size=8),
    st.sampled_from(["go", "chess", "shogi"]),
    st.lists(st.sampled_from(["E5", "C3", "pass", "e2e4", "7g7f", "Z0"]), max_size=4),
)
def test_any_query_object_is_read_or_refused_with_a_field(
    obj: dict[str, Any], game: str, moves: list[str]
) -> None:
    base: dict[str, Any] = {
        "id": "f",
        "game": game,
        "moves": moves,
        "rules": "chinese",
        "boardXSize": 9,
        "boardYSize": 9,
    }
    if game == "go":
        base["moves"] = [["B" if i % 2 == 0 else "W", m] for i, m in enumerate(moves)]
    try:
        query = parse_query({**base, **obj}, go_sizes=(9, 19))
    except QueryError as exc:
        assert exc.message
        return
    assert query.id and query.turns


def test_katago_command_line_words_are_read(tmp_path: Path) -> None:
    from protocols.analysis.cli_settings import analysis_settings
    from protocols.cli import _settings

    config = tmp_path / "analysis.cfg"
    config.write_text(
        "# KataGo config\nmaxVisits = 7\nreportAnalysisWinratesAs = SIDETOMOVE\nnumAnalysisThreads = 3\n"
    )
    flags = {**_engine_flag_defaults(), "katago_model": "kata.bin.gz", "katago_config": str(config)}
    flags["katago_override"] = "maxVisits=9,homeDataDir=/x"
    settings = analysis_settings(_settings, flags)
    assert (settings.default_visits, settings.perspective, settings.analysis_threads) == (9, "SIDETOMOVE", 3)
    assert settings.engine.weights_file is None  # a KataGo model is not a network Tabula runs
    config.write_text("reportAnalysisWinratesAs = UPSIDEDOWN\n")
    with pytest.raises(ValueError, match="reportAnalysisWinratesAs"):
        analysis_settings(_settings, flags)


def _engine_flag_defaults() -> dict[str, Any]:
    """The engine flags as click gives them when none is set (``tabula analysis`` alone)."""
    import click

    from protocols.cli import analysis

    ctx = click.Context(analysis)
    return {p.name: p.get_default(ctx) for p in analysis.params if p.name is not None}


def test_a_finished_game_is_answered_with_its_result(server: tuple[AnalysisHandler, Capture]) -> None:
    handler, capture = server
    mated = "R5k1/5ppp/8/8/8/8/8/6K1 b - - 1 1"
    stalemate = "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"
    for qid, fen in (("mated", mated), ("stalemate", stalemate)):
        handler.handle(
            json.dumps({"id": qid, "game": "chess", "initialPosition": fen, "moves": [], "maxVisits": 20})
        )
    handler.handle(go9("passes", [["B", "pass"], ["W", "pass"]], maxVisits=20))
    assert handler.wait_idle(60)
    objects = capture.new()
    roots = {qid: finals(objects, qid)[0] for qid in ("mated", "stalemate", "passes")}
    assert all(a["moveInfos"] == [] and a["rootInfo"]["visits"] == 0 for a in roots.values())
    assert (
        roots["mated"]["rootInfo"]["wdl"] == [0, 0, 1000]
        and roots["mated"]["rootInfo"]["gameOver"] == "checkmate"
    )
    assert (
        roots["stalemate"]["rootInfo"]["wdl"] == [0, 1000, 0]
        and roots["stalemate"]["rootInfo"]["winrate"] == 0.5
    )
    # empty board, komi 7: white wins by 7, black's lead -7
    assert (
        roots["passes"]["rootInfo"]["scoreLead"] == -7.0
        and roots["passes"]["rootInfo"]["gameOver"] == "two-passes"
    )

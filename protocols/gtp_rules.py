"""GTP counting rules: what ``kata-set-rules`` / ``kgs-rules`` accept and ``kata-get-rules`` reports.

Tabula counts a Go game in one of two ways (``ProtocolSettings.go_scoring``):

* ``area`` (Chinese, and the area counts of AGA, BGA and New Zealand): stones plus surrounded points,
  with the stones the count calls dead removed first, as GUIs, gogui-twogtp's referee and KGS count;
  Tabula then passes only in a settled position.
* ``tromp-taylor``: every stone on the board is alive (CGOS); a pass never waits.

Territory counting (Japanese, Korean) is refused: it needs prisoners, a seki tax and a dispute phase
that Tabula does not keep, and its network learnt area values.  The move rules stay Tabula's either way
(positional superko for its own moves, no suicide).  The names follow KataGo's ``kata-set-rules``
shorthands (KataGo's GTP extensions page) and kgsGtp's ``kgs-rules`` words.
"""

from __future__ import annotations

import json

from protocols.gtp_format import GtpError

AREA = "area"
TROMP_TAYLOR = "tromp-taylor"
#: The values of ``ProtocolSettings.go_scoring`` (``--scoring``).
SCORINGS = (AREA, TROMP_TAYLOR)

#: ``kata-set-rules`` names -> the scoring they count with.
KATA_RULES = {
    "tromp-taylor": TROMP_TAYLOR,
    "chinese": AREA,
    "chinese-ogs": AREA,
    "chinese-kgs": AREA,
    "aga": AREA,
    "bga": AREA,
    "new-zealand": AREA,
    "area": AREA,
}
#: ``kgs-rules`` words (kgsGtp) -> the scoring they count with.
KGS_RULES = {"chinese": AREA, "aga": AREA, "new_zealand": AREA}
#: Rule names that count territory: refused.
TERRITORY_RULES = frozenset(("japanese", "korean"))


def parse_rules(args: tuple[str, ...], names: dict[str, str]) -> str:
    """The scoring (:data:`AREA` or :data:`TROMP_TAYLOR`) of a ``kata-set-rules`` / ``kgs-rules``
    argument, looked up in ``names`` (any case).

    Raises:
        GtpError: ``syntax error`` without exactly one argument; a message naming the accepted rules
            for territory rules or an unknown name.
    """
    if len(args) != 1:
        raise GtpError("syntax error")
    name = args[0].lower()
    if name in names:
        return names[name]
    if name in TERRITORY_RULES:
        raise GtpError(f"territory scoring ({name}) is not supported; rules: {', '.join(names)}")
    raise GtpError(f"unknown rules {args[0]}; rules: {', '.join(names)}")


def rules_json(scoring: str) -> str:
    """``kata-get-rules``: the rules Tabula plays by, as KataGo's JSON dictionary (its keys; see the
    module doc).  ``friendlyPassOk`` tells the two countings apart: under area counting a pass may
    leave dead stones on the board, under Tromp-Taylor every stone counts as it stands."""
    return json.dumps(
        {
            "hasButton": False,
            "ko": "POSITIONAL",
            "scoring": "AREA",
            "suicide": False,
            "tax": "NONE",
            "whiteHandicapBonus": "0",
            "friendlyPassOk": scoring == AREA,
        },
        separators=(",", ":"),
        sort_keys=True,
    )

"""Measuring networks: matches against networks or external engines, held-out probes, Elo, the SPRT and
the opening suites (shipped in ``openings/``)."""

"""``tabula analysis``: KataGo's JSON analysis protocol for Go, chess and shogi (docs/analysis.md).

* :mod:`protocols.analysis.query`: a JSON line into a checked query (pure);
* :mod:`protocols.analysis.report`: a search's report into KataGo's response object (pure);
* :mod:`protocols.analysis.batching`: the network calls shared by every position being searched;
* :mod:`protocols.analysis.server`: the handler (queue by priority, terminate, answers).
"""

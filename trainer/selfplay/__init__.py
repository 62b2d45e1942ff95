"""Self-play: the player of many games at once (:mod:`.player`), the Go root rules of self-play and
matches (:mod:`.root_rules`), and the worker processes that write shards (:mod:`.worker`).  No torch."""

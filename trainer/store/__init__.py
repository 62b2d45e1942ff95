"""What the trainer keeps on disk: atomic writes, the run folder's layout, self-play shards, game records
and run packs."""

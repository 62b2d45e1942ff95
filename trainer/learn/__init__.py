"""Learning: the replay window over the shards and the learner's training step."""

"""A training run: the driver's loop, self-play workers as Ray actors, and the run's status and plot."""

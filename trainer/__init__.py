"""``tabula-train``: AlphaZero self-play reinforcement learning (PyTorch), ONNX export."""

"""The trainer's network: the torch model, its checkpoints, the ONNX export under the network contract,
the int8 copy and its uint8-planes model, and growing or transferring a network to a new shape."""

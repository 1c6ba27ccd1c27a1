#!/usr/bin/env python3
"""Exports small real models from PyTorch to ONNX (opset 17, what Debian's ONNX 1.12 reads), with
one input set and PyTorch's outputs, for kiln's ONNX model tests (tests/onnx/models/).

Needs torch (the GPU machine has it; run there with `python3 bench/onnx/export_torch_models.py
OUTDIR`). Writes OUTDIR/<model>/model.onnx and OUTDIR/<model>/{input,output}_<i>.npy;
bench/onnx/npy_to_pb.py then turns the .npy files into the ONNX test-case layout
(test_data_set_0/{input,output}_<i>.pb) that onnx_conformance reads.

Models: an MLP (Linear, erf-GELU, Softmax), a ResNet-style CNN (Conv, BatchNorm in eval mode,
ReLU, MaxPool, a residual block, global average pooling, Linear) and a transformer encoder layer
(pre-LayerNorm, multi-head self-attention with the head split exporters write, erf-GELU MLP,
residuals).
"""
import math
import os
import sys

import numpy as np
import torch
from torch import nn

torch.manual_seed(7)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(32, 64), nn.Linear(64, 16)

    def forward(self, x):
        return torch.softmax(self.fc2(nn.functional.gelu(self.fc1(x))), dim=-1)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(x + self.b2(self.c2(y)))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem, self.bn = nn.Conv2d(3, 8, 3, stride=1, padding=1), nn.BatchNorm2d(8)
        self.block, self.down = Block(8), nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.bn(self.stem(x))), 2)
        x = torch.relu(self.down(self.block(x)))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class Encoder(nn.Module):
    def __init__(self, d=32, heads=4, ff=64):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        split = lambda t: t.reshape(b, s, self.h, self.dh).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.dh), dim=-1)
        x = x + self.out((att @ v).transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "torch_models"
    models = {"torch_mlp": (Mlp(), [torch.randn(4, 32)]),
              "torch_resnet_cnn": (Cnn(), [torch.randn(2, 3, 16, 16)]),
              "torch_encoder_layer": (Encoder(), [torch.randn(2, 8, 32)])}
    for name, (m, inputs) in models.items():
        m.eval()
        # BatchNorm statistics that are not the identity, so the test sees them applied.
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 1.5)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        with torch.no_grad():
            outputs = m(*inputs)
            torch.onnx.export(m, tuple(inputs), os.path.join(d, "model.onnx"), opset_version=17, dynamo=False,
                              input_names=[f"x{i}" for i in range(len(inputs))], output_names=["y"])
        for i, t in enumerate(inputs):
            np.save(os.path.join(d, f"input_{i}.npy"), t.numpy())
        np.save(os.path.join(d, "output_0.npy"), outputs.numpy())
        print(name, "exported,", os.path.getsize(os.path.join(d, "model.onnx")), "bytes")
    print("torch", torch.__version__)


if __name__ == "__main__":
    main()

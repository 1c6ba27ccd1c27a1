#!/usr/bin/env python3
"""Turns the .npy files export_torch_models.py writes into the ONNX test-case layout onnx_conformance
reads: DIR/<model>/test_data_set_0/{input,output}_<i>.pb (TensorProto). Needs only the Python
standard library (float32 .npy files, little-endian, C order).

    python3 bench/onnx/npy_to_pb.py DIR
"""
import ast
import glob
import os
import struct
import sys


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    major = data[6]
    hlen = struct.unpack("<H", data[8:10])[0] if major == 1 else struct.unpack("<I", data[8:12])[0]
    start = 10 if major == 1 else 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    if header["descr"] != "<f4" or header["fortran_order"]:
        raise ValueError(f"{path}: only little-endian float32 in C order ({header})")
    return list(header["shape"]), data[start + hlen:]


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def tensor_proto(name, shape, raw):
    # TensorProto: dims = 1 (int64), data_type = 2 (1: FLOAT), name = 8, raw_data = 9.
    msg = b"".join(varint(1 << 3 | 0) + varint(d) for d in shape)
    msg += varint(2 << 3 | 0) + varint(1)
    msg += varint(8 << 3 | 2) + varint(len(name)) + name.encode()
    msg += varint(9 << 3 | 2) + varint(len(raw)) + raw
    return msg


def main():
    root = sys.argv[1]
    for model in sorted(glob.glob(os.path.join(root, "*", "model.onnx"))):
        d = os.path.dirname(model)
        out = os.path.join(d, "test_data_set_0")
        os.makedirs(out, exist_ok=True)
        for npy in sorted(glob.glob(os.path.join(d, "*.npy"))):
            stem = os.path.basename(npy)[:-4]  # input_0, output_0
            shape, raw = read_npy(npy)
            name = ("x" if stem.startswith("input") else "y") + ("" if stem.startswith("output") else stem.split("_")[1])
            with open(os.path.join(out, stem + ".pb"), "wb") as f:
                f.write(tensor_proto(name, shape, raw))
            os.remove(npy)
        print(d, "->", sorted(os.listdir(out)))


if __name__ == "__main__":
    main()

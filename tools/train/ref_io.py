"""ref_io.py: what the PyTorch references (tools/train/mtp_reference.py,
tests/diag/mtp_reference_archs.py) read and write. read_gguf: a GGUF file's
scalars and strings (arrays skipped) and its F32/F16 tensors as float32
numpy arrays in numpy's order (ggml's dimensions reversed: a matrix is
out x in). write_rows: logit rows as little-endian float32, published
whole (a temporary name, then renamed).
"""
import os
import struct
import sys

import numpy as np

# GGUF value types: struct format of the scalars; 8 string, 9 array
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
F32, F16 = 0, 1


def read_gguf(path):
    """The key/values (scalars and strings; arrays skipped) and the F32/F16 tensors as float32 arrays."""
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n].decode("utf-8")
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            for _ in range(n):
                value(et)
            return None
        return take(SCALAR[t])

    if data[:4] != b"GGUF":
        sys.exit("%s: not a GGUF file" % path)
    pos = 4
    _, n_t, n_kv = take("I"), take("Q"), take("Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("I"))
    infos = []
    for _ in range(n_t):
        name = string()
        nd = take("I")
        dims = [take("Q") for _ in range(nd)]
        infos.append((name, dims, take("I"), take("Q")))
    align = kv.get("general.alignment", 32)
    base = (pos + align - 1) // align * align
    tensors = {}
    for name, dims, t, off in infos:
        if t not in (F32, F16):
            sys.exit("%s: %s has ggml type %d; only F32 and F16 are read" % (path, name, t))
        n = int(np.prod(dims))
        a = np.frombuffer(data, dtype="<f4" if t == F32 else "<f2", count=n, offset=base + off)
        tensors[name] = a.astype(np.float32).reshape(list(reversed(dims)))
    return kv, tensors


def write_rows(out, rows):
    rows = rows.astype("<f4")
    tmp = out + ".tmp"
    rows.tofile(tmp)
    os.replace(tmp, out)
    print("%s: %d rows of %d logits" % (out, rows.shape[0], rows.shape[1]))

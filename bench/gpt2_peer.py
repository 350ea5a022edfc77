#!/usr/bin/env python3
"""PyTorch eager peer of gpt2_bench: the same GPT-2 (examples/gpt2), the same weights, the same
rows: prefill of 128 and 512 tokens, and one decoded token at contexts of 128 and 1024, with a
per-layer KV cache written in place, on the CPU, f32, torch.inference_mode().

Optional tooling: the build and the tests never need it; without torch it says so and exits 0.

    build/release/examples/gpt2/gpt2_make_weights /tmp/gpt2.safetensors      # seed 1
    python3 bench/gpt2_peer.py /tmp/gpt2.safetensors [--repeats 7]

Prints one line per row: median and min ms of --repeats timed calls after three warm-up calls
(block_peers.timed).
"""

import argparse
import json
import math
import struct
import sys

from block_peers import timed  # (first, median, min) ms of a call after warm-up


def load(path, torch):
    """The safetensors file's f32 tensors (read with the format's header, no extra package)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    start = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        if e["dtype"] != "F32":
            sys.exit(f"gpt2_peer: {name} is {e['dtype']}; this script reads f32 files")
        b, end = e["data_offsets"]
        t = torch.frombuffer(bytearray(data[start + b : start + end]), dtype=torch.float32)
        out[name.removeprefix("transformer.")] = t.reshape(e["shape"])
    meta = header.get("__metadata__", {})
    return out, int(meta.get("n_head", out["wte.weight"].shape[1] // 64))


class Gpt2:
    def __init__(self, w, heads, torch):
        self.t, self.w, self.heads = torch, w, heads
        self.layers = sum(1 for k in w if k.endswith(".ln_1.weight"))
        self.vocab, self.embd = w["wte.weight"].shape
        self.positions = w["wpe.weight"].shape[0]
        self.reset()

    def reset(self):
        d = self.embd // self.heads
        z = lambda: self.t.zeros(self.heads, self.positions, d)
        self.k = [z() for _ in range(self.layers)]
        self.v = [z() for _ in range(self.layers)]
        self.pos = 0

    def forward(self, ids):
        t, w, F = self.t, self.w, self.t.nn.functional
        n, C, H = len(ids), self.embd, self.heads
        D = C // H
        x = w["wte.weight"][t.tensor(ids)] + w["wpe.weight"][self.pos : self.pos + n]
        seen = self.pos + n
        mask = None
        if n > 1:
            mask = t.arange(seen)[None, :] <= t.arange(self.pos, seen)[:, None]
        for l in range(self.layers):
            p = f"h.{l}."
            h = F.layer_norm(x, (C,), w[p + "ln_1.weight"], w[p + "ln_1.bias"])
            qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
            q, k, v = (qkv[:, i * C : (i + 1) * C].reshape(n, H, D).permute(1, 0, 2) for i in range(3))
            self.k[l][:, self.pos : seen] = k
            self.v[l][:, self.pos : seen] = v
            s = q @ self.k[l][:, :seen].transpose(-2, -1) / math.sqrt(D)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            y = (s.softmax(-1) @ self.v[l][:, :seen]).permute(1, 0, 2).reshape(n, C)
            x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
            h = F.layer_norm(x, (C,), w[p + "ln_2.weight"], w[p + "ln_2.bias"])
            h = F.gelu(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"], approximate="tanh")
            x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
        self.pos = seen
        x = F.layer_norm(x[-1:], (C,), w["ln_f.weight"], w["ln_f.bias"])
        return x @ w["wte.weight"].T


def tokens(n):
    return [(i * 7919 + 13) % 50257 for i in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weights")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("gpt2_peer: torch is not installed (pip install torch); skipped")
        return
    torch.set_grad_enabled(False)
    w, heads = load(args.weights, torch)
    m = Gpt2(w, heads, torch)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    with torch.inference_mode():
        for n in (128, 512):
            def prefill():
                m.reset()
                return int(m.forward(tokens(n)).argmax())
            _, med, lo = timed(prefill, args.repeats)
            print(f"torch eager  prefill {n:4d}: median {med:8.2f} ms  min {lo:8.2f} ms")
        for n in (128, 1024):
            m.reset()
            m.forward(tokens(n - 1))
            context = m.pos
            def decode():
                m.pos = context
                return int(m.forward([42]).argmax())
            _, med, lo = timed(decode, args.repeats)
            print(f"torch eager  decode at {n:4d}: median {med:8.2f} ms  min {lo:8.2f} ms")


if __name__ == "__main__":
    main()

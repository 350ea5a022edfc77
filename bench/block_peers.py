#!/usr/bin/env python3
"""Peers of block_bench: the same GPT-2-style block in PyTorch (eager and torch.compile) and JAX
(jax.jit), on the CPU, f32, at the same (B, T), beside the block's six matrix products alone.

Optional tooling: the build and the tests never need it. Each framework that is not installed is
skipped with a message (`pip install torch jax`); the script exits 0 either way.

    python3 bench/block_peers.py [--sizes 1x128,4x256,8x512] [--repeats 7] [--only torch|jax]

Prints one line per row: framework, (B, T), median and min ms of `--repeats` timed calls after
warm-up, tokens/s, and for compiled rows the first call's time (tracing and compilation).
The block matches bench/gpt2_block.h op for op: pre-LN, qkv = ln1(x) @ W + b split into 12 heads,
scores = q @ kᵀ / 8, where(causal mask, scores, -inf), softmax, @ v, heads merged, @ W_proj + b;
MLP gelu_tanh(x @ W_fc + b) @ W_out + b; weights stored [in, out], GPT-2's 0.02 scale.
"""

import argparse
import importlib.util
import math
import os
import statistics
import sys
import time

C, HEADS, HIDDEN = 768, 12, 3072
D = C // HEADS


def parse_sizes(text):
    return [tuple(int(v) for v in s.split("x")) for s in text.split(",")]


def timed(fn, repeats, warmup=2):
    """Returns (first call ms, median ms, min ms) of fn(), which must block until done."""
    start = time.perf_counter()
    fn()
    first = (time.perf_counter() - start) * 1e3
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return first, statistics.median(times), min(times)


def report(framework, row, size, first, median, low, show_first):
    b, t = size
    first_text = f"  first call {first / 1e3:.1f} s" if show_first else ""
    print(f"{framework:<22} {row:<9} {b}x{t:<5} median {median:9.2f} ms  min {low:9.2f} ms  "
          f"{b * t / (median / 1e3):10.0f} tokens/s{first_text}", flush=True)


# ---- PyTorch -------------------------------------------------------------------------------------

def run_torch(sizes, repeats):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    torch.manual_seed(1)
    w = lambda *s: torch.randn(*s) * 0.02
    ln = lambda n: 1.0 + torch.randn(n) * 0.02
    p = dict(ln1_w=ln(C), ln1_b=w(C), w_qkv=w(C, 3 * C), b_qkv=w(3 * C), w_proj=w(C, C),
             b_proj=w(C), ln2_w=ln(C), ln2_b=w(C), w_fc=w(C, HIDDEN), b_fc=w(HIDDEN),
             w_out=w(HIDDEN, C), b_out=w(C))

    def heads(qkv, i):
        b, t, _ = qkv.shape
        return qkv[..., i * C:(i + 1) * C].reshape(b, t, HEADS, D).permute(0, 2, 1, 3)

    def block(x, mask):
        b, t, _ = x.shape
        h = F.layer_norm(x, (C,), p["ln1_w"], p["ln1_b"], 1e-5)
        qkv = h @ p["w_qkv"] + p["b_qkv"]
        scores = heads(qkv, 0) @ heads(qkv, 1).transpose(-2, -1) * (1.0 / math.sqrt(D))
        att = torch.softmax(torch.where(mask, scores, float("-inf")), -1)
        y = (att @ heads(qkv, 2)).permute(0, 2, 1, 3).reshape(b, t, C)
        x = x + (y @ p["w_proj"] + p["b_proj"])
        h = F.layer_norm(x, (C,), p["ln2_w"], p["ln2_b"], 1e-5)
        h = F.gelu(h @ p["w_fc"] + p["b_fc"], approximate="tanh")
        return x + (h @ p["w_out"] + p["b_out"])

    def products(x, q, k_t, att, v, h):
        return (x @ p["w_qkv"], q @ k_t, att @ v, x @ p["w_proj"], x @ p["w_fc"], h @ p["w_out"])

    compiled = torch.compile(block, dynamic=False)  # specialized per (B, T), as XLA is
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{torch.backends.mkldnn.is_available() and 'oneDNN available' or 'no oneDNN'}")
    with torch.inference_mode():
        for b, t in sizes:
            x = torch.randn(b, t, C)
            mask = torch.ones(t, t, dtype=torch.bool).tril()
            qkv = torch.randn(b, t, 3 * C)
            operands = (torch.randn(b, t, C), heads(qkv, 0), heads(qkv, 1).transpose(-2, -1),
                        torch.softmax(torch.randn(b, HEADS, t, t), -1), heads(qkv, 2),
                        torch.randn(b, t, HIDDEN))
            report("pytorch eager", "products", (b, t),
                   *timed(lambda: products(*operands), repeats), False)
            report("pytorch eager", "block", (b, t), *timed(lambda: block(x, mask), repeats), False)
            report("pytorch torch.compile", "block", (b, t),
                   *timed(lambda: compiled(x, mask), repeats), True)


# ---- JAX -----------------------------------------------------------------------------------------

def run_jax(sizes, repeats):
    import jax
    import jax.numpy as jnp

    key = iter(jax.random.split(jax.random.PRNGKey(1), 32))
    w = lambda *s: jax.random.normal(next(key), s, jnp.float32) * 0.02
    ln = lambda n: 1.0 + jax.random.normal(next(key), (n,), jnp.float32) * 0.02
    p = dict(ln1_w=ln(C), ln1_b=w(C), w_qkv=w(C, 3 * C), b_qkv=w(3 * C), w_proj=w(C, C),
             b_proj=w(C), ln2_w=ln(C), ln2_b=w(C), w_fc=w(C, HIDDEN), b_fc=w(HIDDEN),
             w_out=w(HIDDEN, C), b_out=w(C))

    def layer_norm(x, g, b):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * g + b

    def heads(qkv, i):
        b, t, _ = qkv.shape
        return qkv[..., i * C:(i + 1) * C].reshape(b, t, HEADS, D).transpose(0, 2, 1, 3)

    @jax.jit
    def block(p, x, mask):
        b, t, _ = x.shape
        qkv = layer_norm(x, p["ln1_w"], p["ln1_b"]) @ p["w_qkv"] + p["b_qkv"]
        scores = heads(qkv, 0) @ heads(qkv, 1).swapaxes(-2, -1) * (1.0 / math.sqrt(D))
        att = jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), -1)
        y = (att @ heads(qkv, 2)).transpose(0, 2, 1, 3).reshape(b, t, C)
        x = x + (y @ p["w_proj"] + p["b_proj"])
        h = jax.nn.gelu(layer_norm(x, p["ln2_w"], p["ln2_b"]) @ p["w_fc"] + p["b_fc"],
                        approximate=True)
        return x + (h @ p["w_out"] + p["b_out"])

    @jax.jit
    def products(p, x, qkv, att, h):  # views are taken inside: XLA has no strided operands
        return (x @ p["w_qkv"], heads(qkv, 0) @ heads(qkv, 1).swapaxes(-2, -1),
                att @ heads(qkv, 2), x @ p["w_proj"], x @ p["w_fc"], h @ p["w_out"])

    print(f"# jax {jax.__version__}, devices {jax.devices()}")
    for b, t in sizes:
        x = jax.random.normal(next(key), (b, t, C), jnp.float32)
        mask = jnp.tril(jnp.ones((t, t), bool))
        qkv = jax.random.normal(next(key), (b, t, 3 * C), jnp.float32)
        att = jax.nn.softmax(jax.random.normal(next(key), (b, HEADS, t, t), jnp.float32), -1)
        h = jax.random.normal(next(key), (b, t, HIDDEN), jnp.float32)
        report("jax jit", "products", (b, t),
               *timed(lambda: jax.block_until_ready(products(p, x, qkv, att, h)), repeats), True)
        report("jax jit", "block", (b, t),
               *timed(lambda: block(p, x, mask).block_until_ready(), repeats), True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1x128,4x256,8x512", help="BxT,BxT,...")
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per row")
    parser.add_argument("--only", choices=["torch", "jax"], help="run one framework")
    args = parser.parse_args()
    sizes = parse_sizes(args.sizes)
    ran = 0
    for name, run in (("torch", run_torch), ("jax", run_jax)):
        if args.only and args.only != name:
            continue
        if importlib.util.find_spec(name) is None:
            print(f"block_peers: {name} is not installed, its rows are skipped "
                  f"(pip install {name})")
            continue
        run(sizes, args.repeats)
        ran += 1
    if ran == 0:
        print("block_peers: no peer framework installed, nothing measured")
    return 0


if __name__ == "__main__":
    sys.exit(main())

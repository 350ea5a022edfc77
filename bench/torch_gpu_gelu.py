#!/usr/bin/env python3
"""PyTorch's peer of bench/gpu_gelu_bench.cpp, run on the same GPU: torch.nn.functional.gelu
(erf form) over f32 (32, 512, 2048) on cuda:0, timed with CUDA events like the C++ benchmark,
beside a device-to-device copy of the same bytes. Prints the median of --repetitions runs of
--iterations calls each, in microseconds per call and GB/s (input read + output written).

    python3 bench/torch_gpu_gelu.py [--iterations 200] [--repetitions 9]
"""
import argparse
import statistics

import torch


def time_per_call(fn, iterations):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1e3 / iterations  # microseconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--repetitions", type=int, default=9)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("torch_gpu_gelu: no CUDA device")
    torch.manual_seed(0)
    x = torch.randn(32, 512, 2048, device="cuda")
    y = torch.empty_like(x)
    bytes_moved = 2 * x.numel() * x.element_size()
    cases = {
        "copy": lambda: y.copy_(x),
        "gelu": lambda: torch.nn.functional.gelu(x),
    }
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    for name, fn in cases.items():
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        runs = [time_per_call(fn, args.iterations) for _ in range(args.repetitions)]
        us = statistics.median(runs)
        print(f"{name}: median {us:.1f} us per call, {bytes_moved / us / 1e3:.0f} GB/s")


if __name__ == "__main__":
    main()

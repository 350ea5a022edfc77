"""PyTorch eager rows for bench/conv_bench.cpp: the same layers, shapes and batch, f32 on the CPU,
medians of timed runs after a warm-up (optional peer; `pip install torch`)."""
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def timed(fn, runs=30):
    for _ in range(3):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    torch.manual_seed(3)
    w64, b64 = torch.randn(64, 64, 3, 3) * 0.05, torch.randn(64)
    w7 = torch.randn(64, 3, 7, 7) * 0.05
    dw = torch.randn(128, 1, 3, 3) * 0.3
    w1x1 = torch.randn(128, 64, 1, 1) * 0.1
    layers = [
        ("conv7x7 s2 3->64 224 + relu", (8, 3, 224, 224),
         lambda x: F.relu(F.conv2d(x, w7, b64, stride=2, padding=3))),
        ("conv3x3 64->64 56 + bias + relu", (8, 64, 56, 56),
         lambda x: F.relu(F.conv2d(x, w64, b64, padding=1))),
        ("conv1x1 s2 64->128 56", (8, 64, 56, 56), lambda x: F.conv2d(x, w1x1, stride=2)),
        ("depthwise3x3 128 28", (8, 128, 28, 28), lambda x: F.conv2d(x, dw, padding=1, groups=128)),
        ("max_pool3x3 s2 64 112", (8, 64, 112, 112),
         lambda x: F.max_pool2d(x, 3, stride=2, padding=1)),
        ("avg_pool2x2 64 56", (8, 64, 56, 56), lambda x: F.avg_pool2d(x, 2)),
    ]
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads")
    with torch.inference_mode():
        for name, shape, fn in layers:
            x = torch.randn(*shape)
            print(f"{name:36s} {timed(lambda: fn(x)):8.3f} ms")


if __name__ == "__main__":
    sys.exit(main())

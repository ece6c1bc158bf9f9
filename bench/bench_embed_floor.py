#!/usr/bin/python3
"""bench_embed_floor.py - the sgemm floor of bench/run_embed.sh's batch: the 24
    products of all-MiniLM-L6-v2's shape (Q/K/V, output, two FFN per layer) alone,
    as torch.mm on the OpenBLAS both sides use, at M = 1,273 rows (the batch
    packed: what the service computes) and M = 2,048 (padded: what PyTorch
    computes). The best of 7, one thread's CPU time (wall time with more threads).

    /usr/bin/python3 bench/bench_embed_floor.py [threads]
"""
import torch, time, sys
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
clock = time.process_time if torch.get_num_threads() == 1 else time.perf_counter
def floor(M):
    ws = [torch.randn(384, 1152), torch.randn(384, 384), torch.randn(384, 1536), torch.randn(1536, 384)]
    xs = [torch.randn(M, 384), torch.randn(M, 384), torch.randn(M, 384), torch.randn(M, 1536)]
    for x, w in zip(xs, ws): torch.mm(x, w)
    best = 1e9
    for _ in range(7):
        t = clock()
        for _ in range(6):
            for x, w in zip(xs, ws): torch.mm(x, w)
        best = min(best, clock() - t)
    return best * 1e3
for rnd in range(2):  # two rounds: the spread says how noisy the machine is
    p = floor(1273); d = floor(2048)
    gp = 6 * 2 * 1273 * (384*1152 + 384*384 + 2*384*1536) / p / 1e6
    gd = 6 * 2 * 2048 * (384*1152 + 384*384 + 2*384*1536) / d / 1e6
    print(f"threads {torch.get_num_threads()}: the 24 products alone, packed (M=1273) {p:.1f} ms ({gp:.1f} GFLOP/s), padded (M=2048) {d:.1f} ms ({gd:.1f} GFLOP/s), ratio {d/p:.2f}")

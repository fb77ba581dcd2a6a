# ---
# jupyter:
#   accelerator: GPU
#   colab:
#     gpuType: T4
#     provenance: []
#   jupytext:
#     formats: ipynb,sources//py:percent
#     notebook_metadata_filter: accelerator,colab
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 5 · Reduction: adding up 2^28 numbers at the speed of memory
#
# A **reduction** combines many values into one: a sum, a maximum, a dot product. On a CPU it is
# one loop. On a GPU, thousands of threads each add a part, and then the parts must be combined;
# *how* they are combined decides whether the kernel runs at the memory's speed or at a few
# percent of it.
#
# This notebook follows Mark Harris's *Optimizing Parallel Reduction in CUDA* (NVIDIA, 2007) as
# the blog post *CUDA编程学习<2>——归约算法的7种优化方法详解* ("seven ways to optimise a
# reduction") reproduces it. Each of its seven kernels is shown, run, checked against NumPy and
# drawn from a trace of what its threads did; where the article's code is wrong, the notebook runs
# it, shows the bug and fixes it. Then it goes past the article: warp shuffles, 16-byte loads and a
# single-pass kernel, measured against a device-to-device copy and `cupy.sum`.
#
# What you will see matter, in the order it starts to matter: **divergence** (kernel 1), **bank
# conflicts** (kernel 2), **instruction overhead** (kernels 4–6), **work per thread and latency
# hiding** (kernel 7), and **bytes in flight** (beyond). Every cell runs without a GPU, on the
# course's emulator; on a GPU the timing cells measure, on the emulator they say they cannot.

# %%
# On Google Colab: install the course, with CuPy for the GPU's driver (CUDA 12 or 13). Elsewhere: nothing.
import sys

if "google.colab" in sys.modules:
    import importlib, re, shutil, subprocess

    repo = "https://github.com/OWNER/gpu-patterns-course"
    if "/OWNER/" in repo:  # the placeholder: the course has no public address yet
        print(f"Not installed: the course is not published at {repo} yet; upload it and `pip install -e .` there.")
    else:
        smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout if shutil.which("nvidia-smi") else ""
        cuda = int(re.search(r"CUDA Version: (\d+)", smi)[1]) if "CUDA Version" in smi else 0  # 0: no GPU
        spec = "gpu-patterns-course{} @ git+" + repo
        wanted = [spec.format("[gpu]")] if cuda >= 13 else [spec.format(""), *(["cupy-cuda12x"] if cuda else [])]
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *wanted], check=True)
        importlib.invalidate_caches()

# %% tags=["nbval-ignore-output"]
import matplotlib.pyplot as plt
import numpy as np

import course
from course import analysis, reduction, source

course.notebook()

# %% [markdown]
# ## The problem, and the answer to check against
#
# The article sums 1 + 2 + … + N for nine sizes from N = 131 072 to 33 554 432. The answer,
# N(N+1)/2, no longer fits in 32 bits from N = 92 682 on, so a kernel adding in `unsigned int`
# would silently wrap around. The article loads `unsigned int` and adds in `long long`; our kernels
# take both types as compile-time options (`-DELEM=unsigned int -DACC=long long`).

# %%
n = 131072
x = np.arange(1, n + 1, dtype=np.uint32)
print("N(N+1)/2          =", n * (n + 1) // 2)
print("summed in 32 bits =", x.sum(dtype=np.uint32), "(wrapped around 2**32)")
print("the reference     =", reduction.reference(x), "as", reduction.accumulator(x.dtype))

# %% [markdown]
# ## Kernel 1: interleaved addressing
#
# Each block of 128 threads copies its 128 numbers into **shared memory** (fast on-chip memory the
# threads of one block share) and adds them in a tree: in step 1 every even thread adds its right
# neighbour, in step 2 every fourth thread adds the element two places away, and so on.
# `__syncthreads()` between steps makes every thread of the block wait until the whole step is
# done, so nobody reads a partial sum too early.

# %%
source.show("reduction.cu", "reduce1")

# %% [markdown]
# **The launch.** A kernel runs as a *grid* of *blocks*; here each block sums 128 elements, so the
# grid needs ⌈N / 128⌉ blocks, each leaving one sum in `out`. `sdata` is declared
# `extern __shared__`: its size is not in the source but given at launch, as *dynamic* shared
# memory (`shared_mem`, in bytes: one 8-byte `long long` per thread). A `__shared__ acc_t s[32]`
# would be *static*, its size fixed when the kernel is compiled. The tree halves the active
# threads each step, so the block size must be a power of two. This is the call the rest of the
# notebook makes for you, written out once; the host then adds the block sums, as the article does:

# %%
block = 128
grid = (n + block - 1) // block
k1 = reduction.kernel("reduce1", np.uint32, block)
sums = course.zeros(grid, np.int64)
k1((grid,), (block,), (course.asarray(x), sums, np.int32(n)), shared_mem=block * 8)
print(f"{grid} blocks of {block}; their sums added on the host: {course.asnumpy(sums).sum()}")

# %% [markdown]
# `reduction.run(version, x)` makes the same launch and adds the block sums on the GPU, with a
# second, one-block pass (the last kernel of this notebook), so every version is compared on the
# whole job:

# %%
print(reduction.run("reduce1", x) == reduction.reference(x))

# %% [markdown]
# **The tree, from the trace.** Block 0 of 64 threads (two warps), summing ones, so each cell shows
# how many inputs it holds: one row per step, an arrow from each element a thread read to the
# element it wrote, colour by warp. Under each row, threads 0–63: coloured if the thread added
# something in that step, grey if it idled, a red frame round a warp that had idle lanes.

# %%
fig, ax = plt.subplots(figsize=(11, 5.8))
reduction.draw_tree(ax, "reduce1")

# %% [markdown]
# Read it row by row: the partial sums double (2, 4, … 64) and the busy threads halve, but they
# stay spread over *both* warps until the last step, every warp framed red.
#
# **Warps and divergence.** A GPU issues instructions for a *warp* of 32 threads at a time. When
# only some lanes of a warp take a branch, the warp still spends the instruction's time, its other
# lanes idle: the warp has *diverged*. `tid % (2*s) == 0` picks threads 0, 2, 4, … then 0, 4, 8, …,
# so the busy threads sit in every warp. In a 256-thread block (8 warps), counted from the trace:

# %%
reduction.step_table("reduce1")

# %% [markdown]
# In step 1, 128 threads add, and all 8 warps are busy, each with half its lanes idle; by step 5
# only 8 threads add, yet all 8 warps still issue every instruction of the step. The `%` operator
# is slow on a GPU too.
#
# ## Kernel 2: a strided index, and bank conflicts
#
# Kernel 2 keeps the tree but lets thread `t` work on element `2*s*t`: the busy threads are now
# 0, 1, 2, …, contiguous, so whole warps finish early and divergence is gone from the early steps.

# %%
source.show("reduction.cu", "reduce2")

# %%
fig, ax = plt.subplots(figsize=(11, 5.8))
reduction.draw_tree(ax, "reduce2")

# %% [markdown]
# Warp 1 (orange) does nothing after the load: warp 0's threads 0–31 do all the adding, and from
# step 2 on only its first lanes. But look at the right column: every step from 1 to 5 is a
# **2-way bank conflict**.
#
# **Shared-memory banks.** Shared memory is split into 32 *banks* of 4-byte words; word `w` is in
# bank `w % 32`. A warp's access takes one pass when its lanes hit 32 different banks (or the same
# word: a broadcast); when `k` lanes hit different words of one bank, it takes `k` passes, a
# *k-way conflict*. With the index `2*s*t` the lanes are `2s` words apart. Counted in a block of
# 256 threads (float sums: one word per element, as in Harris's slides):

# %%
reduction.step_table("reduce2")

# %% [markdown]
# The conflicts climb with the stride to 8-way at s = 4, 8 and 16, then fall as fewer lanes take
# part. Lane by lane, warp 0's read in step 3 of kernel 2 (left) beside the same step of kernel 3
# (right, next section): each lane points at the bank of the word it reads, and a stack of words
# under one bank is a conflict.

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.2))
step = reduction.worst_step("reduce2")
reduction.draw_banks(a, "reduce2", step)
reduction.draw_banks(b, "reduce3", step)

# %% [markdown]
# Kernel 2's 32 lanes land in 4 banks, 8 words in each: the read is served in 8 passes. Kernel 3's
# lanes read 32 consecutive words, one per bank: one pass.
#
# ## Kernel 3: sequential addressing
#
# Start with a stride of half the block and halve it: thread `t` adds element `t + s`. The busy
# threads are contiguous, *and* a warp reads 32 consecutive words.

# %%
source.show("reduction.cu", "reduce3")

# %%
fig, ax = plt.subplots(figsize=(11, 5.8))
reduction.draw_tree(ax, "reduce3")

# %% [markdown]
# The same sums as kernels 1 and 2, but the work moves to the left: the first steps keep whole
# warps busy, no red frame until only one warp is left, and no conflicts. Side by side over a
# 256-thread block: the worst conflict per step of kernels 2 and 3, and the warps left running
# with idle lanes in kernels 1 and 3:

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 3.6))
reduction.compare_steps(a, ["reduce2", "reduce3"], "worst bank conflict")
reduction.compare_steps(b, ["reduce1", "reduce3"], "of them divergent", ylabel="divergent warps")

# %% [markdown]
# Kernel 3 has no conflict in any step, and its divergent warps appear only in the last steps,
# where a single warp is left. The same lane by lane: how many lanes of each warp add in each
# step (white: the warp has nothing left to do, and costs nothing):

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 3.8))
reduction.draw_lanes(a, "reduce1")
reduction.draw_lanes(b, "reduce3")

# %% [markdown]
# Kernel 1 keeps all 8 warps issuing instructions for 16, 8, 4, 2, 1 lanes; kernel 3 retires
# whole warps, so from step 3 on only warp 0 issues anything.
#
# ## Kernels 4–6: instruction overhead
#
# Kernel 3's memory accesses are clean, yet (the timing section shows it) it reaches a small
# fraction of the memory's speed. What is left is **instructions**: the loop, the index
# arithmetic, the `__syncthreads()`, the half of the threads that idle from the first step on.
# Counted by the emulator for each version's own launch (N = 65 536, blocks of 256; the exact
# counts depend on the compiler version, the proportions do not):

# %% tags=["nbval-ignore-output"]
reduction.instructions_per_element()

# %% [markdown]
# Kernel 3 issues about 2.6 warp instructions per element it sums; the next three kernels cut that
# to under one, without touching the memory traffic: that is what makes them faster.
#
# **Kernel 4: first add during load.** Each block takes twice the data and every thread adds two
# elements while loading, so no thread idles in the first step and the grid needs half the
# blocks. The article's version:

# %%
source.show("reduction.cu", "reduce4_article")

# %% [markdown]
# **The article's bug.** `x[i + blockDim.x]` is read whenever `i < n`, also when `i + blockDim.x`
# is past the end: the kernel only works when N is a multiple of 2 × 128, as all nine of the
# article's sizes are. With N = 1000 the emulator stops at the first stray read and says who made
# it (a GPU would read whatever lies there, or fault):

# %%
with course.expect_error():
    reduction.run("reduce4_article", np.arange(1, 1001, dtype=np.uint32))

# %% [markdown]
# The fix checks each load on its own, and widens to `long long` *before* adding (two
# `unsigned int`s can overflow too):

# %%
source.show("reduction.cu", "reduce4")

# %%
small = np.arange(1, 1001, dtype=np.uint32)
print(reduction.run("reduce4", small), "=", reduction.reference(small))

# %% [markdown]
# **Kernel 5: unroll the last warp.** When `s <= 32` only warp 0 still works, and a warp needs no
# `__syncthreads()` to wait for itself. Unrolling those six steps saves the loop and the barrier
# not just in warp 0 but in *every* warp, since all warps run the loop's bookkeeping. The article's
# version lets the warp run "in lockstep" through a `volatile` pointer:

# %%
source.show("reduction.cu", "warp_reduce_article")

# %% [markdown]
# **Two bugs.** First, since the Volta generation (2017) the lanes of a warp are scheduled
# independently: nothing guarantees that lane 0 reads `sdata[16]` *after* lane 16 wrote it. The
# code is a data race that happens to work on many GPUs. Warp 0's trace shows the article's
# version never synchronises the warp; the fixed one calls `__syncwarp()` between every read and
# write:

# %%
print("__syncwarp() calls by warp 0:", reduction.warp_syncs("reduce5_article"), "(article)",
      reduction.warp_syncs("reduce5"), "(fixed)")  # fmt: skip

# %% [markdown]
# The course's checker reads the whole trace and names the race: which lines, which threads, which
# element, and what to do about it (NVIDIA's `compute-sanitizer --tool racecheck` looks for the
# same thing on a GPU; `docs/checker-vs-sanitizer.md` compares the two on every kernel here):

# %%
reduction.check("reduce5_article", small, block=64)

# %%
reduction.check("reduce5", small, block=64)

# %% [markdown]
# Second, every lane of warp 0 reads `sdata[tid + 32]`: with blocks of fewer than 64 threads that
# is past the block's shared memory:

# %%
with course.expect_error():
    reduction.run("reduce5_article", small, block=32)

# %% [markdown]
# The fixed warp step reads, waits for the whole warp, then writes, and skips partners past the
# block:

# %%
source.show("reduction.cu", "warp_reduce")

# %% [markdown]
# **Kernel 6: completely unrolled.** If the block size is a compile-time constant, every
# `if (blockSize >= ...)` is decided by the compiler and the loop disappears. The block size
# becomes a C++ template parameter, and each size is compiled through `name_expressions`, as with
# `cupy.RawModule`:

# %%
source.show("reduction.cu", "block_reduce_unrolled", "reduce6")

# %%
k6 = reduction.kernel("reduce6", np.uint32, block=128)
print(k6.name, "is compiled as", k6.ptx_name)
print(reduction.run("reduce6", x) == reduction.reference(x))

# %% [markdown]
# ## Kernel 7: many elements per thread, and latency hiding
#
# Each thread of kernels 1–6 adds one or two elements, then spends the rest of its life in the
# tree. **Brent's theorem** says a parallel algorithm with N/log N threads, each first adding
# log N elements on its own, does the same O(N) work in the same O(log N) time as N threads:
# Harris calls it *algorithm cascading*. Kernel 7 does it with a grid-stride loop: a grid smaller
# than N/2 covers any N, and the tree (with its barriers) runs once per block instead of once per
# 256 elements.
#
# But the article launches kernel 7 with N / 128 blocks, as it launches kernel 1: twice as many as
# there are pairs, so half the blocks find nothing to do and no thread loops. Counting each
# thread's loads in the trace:

# %%
print("the article's launch:", reduction.loads_per_thread("reduce7_article", 4096, grid=4096 // 128))
print("a grid of 4 blocks  :", reduction.loads_per_thread("reduce7", 4096, grid=4))

# %% [markdown]
# That is why the article found kernel 7 no faster than kernel 6. Its loop also reads
# `x[i + blockSize]` unchecked, so N = 1000 fails as kernel 4 did:

# %%
with course.expect_error():
    reduction.run("reduce7_article", small)

# %%
source.show("reduction.cu", "reduce7")

# %% [markdown]
# **How many blocks, then?** A load from DRAM takes about 600 ns to come back. To keep the memory
# busy, each SM must have enough loads waiting at all times: by **Little's law**, bytes in flight =
# bandwidth × latency, about 4.8 TB/s × 600 ns ≈ 2.9 MB for the whole H200, or 22 KB per SM. Each
# thread of kernel 7 has two 4-byte loads in flight; an SM holds at most 2048 threads, so at most
# 16 KB, and only if the grid fills every SM. The fixed kernel 7 is launched with one *wave*: as
# many blocks as all the SMs hold at once (here for a block of 128):

# %%
reduction.ENGINE.plan("reduce7", course.asarray(np.ones(2**24, np.uint32)), block=128).launches[0]

# %% [markdown]
# The same kernel with a grid from 1/16 of a wave to a full one, and what it keeps in flight (on a
# GPU, also its speed at N = 2^26, beside a device copy of the same bytes):

# %% tags=["nbval-ignore-output"]
reduction.latency_table()

# %% [markdown]
# Bandwidth follows the bytes in flight per SM: on an H200, 132 blocks of 128 (1 KB in flight per
# SM) read about 0.37 TB/s, and each doubling of the grid nearly doubles it, up to about 3.6 TB/s
# for a full wave of 2112 blocks (16 KB per SM), close to the copy. Even a full wave keeps less in
# flight than Little's law asks: the 16-byte loads beyond the article are the way past that.
#
# **Fewer, busier threads** also mean less tree work. Kernel 7 on 65 536 elements with three
# launches: the elements per thread counted from each launch's trace, the tree's barrier steps and
# additions from its block size (a block of b threads adds b - 1 times in log2 b steps):

# %%
reduction.tradeoff()

# %% [markdown]
# With 512 blocks of 32 every thread adds 4 elements and the trees add 15 872 times; with 8 blocks
# of 512, 16 elements each and 4 088 tree additions. Too few threads, though, and the loads in
# flight drop: the table above is the limit.
#
# ## Timing a kernel from the inside
#
# The article's kernels end with `*time = clock() - start;` (ours: `clock64()`), executed by every
# thread of every block. All those threads write one word: a race, and whichever write lands last
# holds the cycles of one block on one SM, not the kernel's time. In the trace of a 512-element
# launch:

# %%
print(reduction.writes_to("reduce3_timed", "time"), "threads wrote the single `time` word")
reduction.check("reduce3_timed", small, block=128)

# %% [markdown]
# Time kernels from the host with CUDA events instead, as `course.bench` does below.
#
# ## Beyond the article
#
# **Warp shuffles.** `__shfl_down_sync(mask, v, k)` hands each lane the register `v` of the lane
# `k` above it, without shared memory and without a separate `__syncwarp()` (the `_sync` is the
# synchronisation). A block then needs one shared slot per warp. The warp and block sums live in
# `common.cuh`, shared with the dot product and the scan:

# %%
source.show("reduction.cu", "warp_sum", "block_sum", "reduce_shfl")

# %% [markdown]
# `reduce_shfl` keeps kernel 7's loop (two loads in flight per thread) and replaces only the tree.
# It runs at kernel 7's speed, not faster: by then the tree was never where the time went.
#
# **16-byte loads.** Global memory moves in 32-byte *sectors*; a warp's request touches as few
# sectors as its addresses allow (*coalescing*). One 16-byte load per lane moves 512 bytes per
# request instead of 128, and `LOADS` of them are issued before any is used: four times the bytes
# in flight of kernel 7, for the same number of threads. From the traces, bytes and sectors per
# global load request:

# %%
for name in ("reduce3", "reduce_vec4"):
    loads = analysis.sectors(reduction.first_trace(name, np.ones(8192, np.float32), block=256).where(op="ld"))
    print(f"{name:12s} {loads.bytes.mean():5.0f} bytes and {loads.sectors.mean():4.1f} sectors per request")

# %%
source.show("reduction.cu", "sum_vectorised")

# %% [markdown]
# The vector loads assume `x` starts on a 16-byte boundary. The course's arrays always do; a view
# into one (`x[1:]`) may not, and `run` refuses it rather than fault on a GPU.
#
# **One pass.** Every kernel so far leaves one sum per block, for the host or a second launch to
# add. Blocks cannot simply wait for each other: nothing guarantees they all run at once, and a
# block spinning on one that never started would hang the GPU. But a block can tell whether it is
# the *last* to finish:

# %%
source.show("reduction.cu", "reduce_single_pass")

# %% [markdown]
# Thread 0 stores its block's sum, `__threadfence()` makes that store visible to every other block
# *before* the ticket that follows it (without the fence, the last block could read a sum still on
# its way to memory), and `atomicInc` hands out tickets 0, 1, 2, … and wraps the counter to 0 for
# the next launch. The block that draws the last ticket knows every other sum is written; its warp
# 0 reads them through a `volatile` pointer (from memory, not from a register or a stale cache
# line) and adds them with shuffles. One launch, the whole sum:

# %%
plan = reduction.ENGINE.plan("reduce_single_pass", course.asarray(x))
print(len(plan.launches), "launch:", plan() == reduction.reference(x))

# %% [markdown]
# ## Try it
#
# Pick a version, a block size and N (slide or type it). The panel runs the kernel on this
# machine's backend, compares the sum with NumPy's and shows what the checker finds, traces block 0
# and draws it, and lists numbers read from that trace:
#
# - **barrier steps**, **additions in shared memory**: the tree's length and work;
# - **shared requests**, **shared wavefronts** and how many of those **bank conflicts** add (an
#   8-byte `long long` access takes two wavefronts with no conflict at all), the **worst bank
#   conflict**;
# - **warp instructions with idle lanes**: divergence; **global sectors per load**: coalescing;
# - the **grid** and the most **elements per thread**, from the launch; on a GPU, the time of the
#   whole sum.
#
# Try `reduce5_article` with a block of 32, `reduce4_article` with N = 1000, or watch the barrier
# steps fall as the block shrinks.

# %% tags=["nbval-ignore-output"]
reduction.panel(version="reduce1", n=1000, block=128)

# %% [markdown]
# ## How fast on a GPU
#
# A reduction does one addition per 4 bytes it loads: it is limited by memory bandwidth, not by
# arithmetic. So its speed is counted in GB/s of data read, and held against what the memory can
# do: a device-to-device copy of the same bytes, timed in the same run. A copy reads *and writes*
# its bytes; a reduction only reads, so a good one can beat the copy (DRAM turns between reading
# and writing cost the copy time).
#
# **The article's table, with both launches.** The article's `main()` launches every kernel with
# N / 128 blocks of 128; the fixed code gives kernels 4–6 half that and kernel 7 one wave. Each
# column is one launch policy, all in one run, the kernel alone (its block sums), median of 20
# CUDA-event timings with inputs rotated out of the L2 cache; the copy row is the ceiling:

# %% tags=["nbval-ignore-output"]
table = reduction.article_table()
table

# %% [markdown]
# Read the N = 131 072 rows last: half a megabyte takes a few microseconds whatever the kernel, the
# time of a launch, not of memory. At 4 M and 32 M elements the steps of the story show: on an
# H200 at 32 M, kernel 1 reads at about 450 GB/s; kernels 2 and 3 remove divergence and conflicts
# (about 830 GB/s). Under the article's launch, kernels 4 to 7 stay there: half their blocks have
# nothing to add, and kernel 7's loop never loops. With the fixed launches, 4, 5 and 6 cut
# instructions (about 1.6 TB/s), and kernel 7 over one wave jumps to about 3.4 TB/s: 4× kernel 6
# as the article launches it, twice kernel 6 as it should be launched. That jump is the climax of
# Harris's deck, and the article's table never shows it.
#
# **Then and now.** Harris measured on a G80 (86.4 GB/s peak) at 4 M elements; here, each GPU
# against its own DRAM peak, this one at 32 M elements, where its copy nears its peak:

# %% tags=["nbval-ignore-output"]
reduction.g80_comparison(table)

# %% [markdown]
# The same seven steps take a 2007 GPU from 2 % to 73 % of its peak and this one from 9 % to about
# 70 %: the lessons carry over. The copy row says what "peak" means in practice: no kernel that
# reads and writes gets much closer to the number on the box.
#
# **Beyond the article, against N.** The fixed kernel 7, the shuffle, 16-byte and one-pass kernels
# (each the whole sum, on the GPU) beside `cupy.sum` and the copy, from 2^16 to 2^28 elements:

# %% tags=["nbval-ignore-output"]
records = reduction.speed_against_n()
fig, ax = plt.subplots(figsize=(8, 4))
reduction.plot_speed(ax, records)

# %% [markdown]
# Below 2^20 every kernel is launch-bound (a few µs); from 2^26 on, the 16-byte and one-pass
# kernels read faster than the copy moves the same bytes, at `cupy.sum`'s speed, and kernel 7 and
# `reduce_shfl` (on top of each other) sit about a fifth lower, short of bytes in flight. At 2^22
# the one-pass kernel reaches 80 to 87 % of the copy from run to run: its last block's round
# trips to L2 (store, ticket, read the block sums) cost more than a microsecond on a job of 8
# (`docs/reduction-tail.md` measures each link). The full sweep and the course's goals are in
# `docs/benchmarks/`.
#
# ## Exercises
#
# Each exercise is checked by a call: `reduction.exercises.<name>.check(answer)` says what is wrong
# (which case, which stride and column, which thread, line and buffer) and the rule to apply, never
# the answer. `reduction.exercises.<name>.hint()` gives a hint when you ask, one more each time,
# and `reduction.exercises.<name>.show(mine)` draws your kernel's tree as this notebook draws the
# course's. Kernels you write run on the emulator first, with the checker, whatever the machine: a
# race, a stray access, a barrier only part of the block reaches or an endless loop ends in a
# verdict, never in a crashed GPU.
#
# **1. Predict, then check: kernel 2 at a block of 1024.** The step table of kernel 2 above counted
# a block of 256. For one block of **1024** float sums, predict for each stride `s` the three
# numbers that table counts: the warps busy (at least one of their threads adds), how many of them
# are divergent (some lanes add, others not), and the worst bank conflict of the step's
# shared-memory accesses, in ways (1: none). Replace each `None`; the check counts them from a
# trace and names the first stride and column that differ, with the rule for that column.

# %%
my_steps = {  # s: (warps busy, of them divergent, worst bank conflict)
    1: (None, None, None),
    2: (None, None, None),
    4: (None, None, None),
    8: (None, None, None),
    16: (None, None, None),
    32: (None, None, None),
    64: (None, None, None),
    128: (None, None, None),
    256: (None, None, None),
    512: (None, None, None),
}
reduction.exercises.ways.check(my_steps)

# %% [markdown]
# **2. Write: kernel 3's tree for any block size.** Kernel 3 halves `s` from `blockDim.x / 2`:
# with a block that is not a power of two, some partial sums never reach `sdata[0]`. Rewrite the
# marked part so that `sdata[0]` ends with every element of the block, for any `blockDim.x`, and
# still as a tree. The check launches N = 1 to 3007 in blocks of 1, 7, 33, 96, 100, 128, 160 and
# 1000 threads (N = block − 1 and block + 1 among them), one element per thread, and compares
# every block's sum with NumPy's; a wrong one is traced back to the values that never reached
# `sdata[0]` or reached it twice. The target, read from the trace: **a tree**, at most ⌈log₂ block⌉
# barrier steps, with no thread adding more than two partners into its own in one step. Every
# thread must reach every `__syncthreads()`. On a GPU it then times yours with blocks of 96 beside
# `reduce3` and a copy of the same bytes.

# %%
mine = r"""
extern "C" __global__ void reduce3_any(const elem_t* x, acc_t* out, int n) {
    extern __shared__ acc_t sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? x[i] : 0;
    __syncthreads();
    // ---- your tree: it must add every sdata[0 .. blockDim.x - 1] into sdata[0], for any blockDim.x
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    // ----
    if (tid == 0) out[blockIdx.x] = sdata[0];
}"""
reduction.exercises.any_block.check(mine)

# %% [markdown]
# **3. Measure, then choose: a grid for blocks of 640.** `reduce_shfl` (beyond the article) runs
# kernel 7's grid-stride loop, two loads in flight per thread, and adds the block's sum with
# shuffles; it takes any block that is a multiple of 32. Choose its number of blocks for blocks of
# **640** threads and N = 50 000 000: every SM full, no wave left partly empty, and at least 8
# elements per thread, so that trees and block sums stay few. On a GPU the check times your grid
# beside half a wave, one wave, two waves and one pair per thread, and passes within 10 % of the
# fastest; without one it checks the launch's arithmetic against this device, and once it is right
# sets the loads in flight beside Little's law. Replace `None` with your number of blocks.

# %%
reduction.exercises.grid.check(None)

# %% [markdown]
# **4. Write: the last warp with shuffles.** The stub's last warp is the article's warp-synchronous
# code, a race since Volta. Rewrite the marked part with `__shfl_down_sync(0xffffffff, v, offset)`:
# the last 64 partial sums are added in registers. Keep the stub's last line (lane 0 leaves the
# block's sum in `sdata[0]`) or write `out` from the register, as you like. The check launches
# N = 1 to 4103 in blocks of 64, 128, 256 and 1024 (kernel 5's loop needs a power of two of at
# least 64; N = 2 × block ± 1 among them), two elements per thread, and compares every block's sum
# with NumPy's. The target, read from warp 0's trace from its first shuffle on: **at least five
# shuffles, each lane loads `sdata[tid]` and `sdata[tid + 32]` once at most** (reading back what the
# warp stored itself does not count), **and at most one shared-memory store**. On a GPU it then
# times yours beside `reduce5` and a copy.

# %%
mine = r"""
extern "C" __global__ void reduce5_mine(const elem_t* x, acc_t* out, int n) {
    extern __shared__ acc_t sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    acc_t v = (i < n) ? (acc_t)x[i] : 0;
    if (i + blockDim.x < n) v += x[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    // ---- your last warp: sdata[0 .. 63] to the block's sum, with __shfl_down_sync
    if (tid < 32) {
        volatile acc_t* vs = sdata;
        vs[tid] += vs[tid + 32]; vs[tid] += vs[tid + 16]; vs[tid] += vs[tid + 8];
        vs[tid] += vs[tid + 4]; vs[tid] += vs[tid + 2]; vs[tid] += vs[tid + 1];
    }
    // ----
    if (tid == 0) out[blockIdx.x] = sdata[0];
}"""
reduction.exercises.shuffle.check(mine)

# %% [markdown]
# ## Summary
#
# - A tree reduction's cost is first in *how threads address memory*: `tid % (2*s)` leaves every
#   warp divergent, `2*s*tid` causes bank conflicts, sequential addressing avoids both.
# - Then in *instructions*: add during the load, unroll the last warp (with `__syncwarp()`, not
#   `volatile`), unroll the loop with a template.
# - Then in *work per thread and bytes in flight*: a grid-stride loop over one wave of the GPU
#   (Brent's theorem), and 16-byte loads, so each SM keeps enough loads waiting (Little's law).
# - Shuffles make the block's sum simpler, not faster: by then the loads are the time. One pass
#   saves the second launch; its last block's round trips are what is left at small N.
# - The article's code reads past the end of `x` unless N is a multiple of 2 × block, relies on
#   warp-synchronous `volatile` code that has been a race since Volta, reads past shared memory
#   with blocks under 64 threads, times itself with a race on one word, and launches kernel 7 so
#   that its loop never loops.

# %%
course.my_progress("reduction")

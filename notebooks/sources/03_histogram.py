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
# # 3 · Histogram: atomics, contention and privatisation
#
# A **histogram** counts how often each value occurs. For bytes there are 256 values, so 256
# counters, and every thread of the GPU may need to add 1 to any of them at any moment: two
# threads adding to the same counter at once must not lose an update. That is what **atomic**
# operations are for, and what they cost depends on the data: on how many threads want the same
# counter at the same time (**contention**). The usual cure is **privatisation**: let each group
# of threads count into its own copy of the bins, and add the copies up at the end.
#
# This notebook follows the blog post *cuda原子操作进行直方图计算* ("computing a histogram with
# CUDA atomic operations"): 100 MiB of random bytes into 256 bins, first on the CPU, then with one
# atomic add in global memory per byte, then with a histogram per block in shared memory (29.22 ms
# in the article). Each of its kernels is shown, run, checked against NumPy and traced; where its
# code is wrong, the notebook runs it, shows the bug and fixes it. Then it goes past the article:
# 16-byte loads, warp-aggregated atomics, a copy of the bins per lane, and 4096 bins, measured
# against a device-to-device copy and `cupy.bincount`, on four kinds of data.
#
# Every cell runs without a GPU, on the course's emulator, which records every memory access; the
# pictures and counts below are read from those records. On a GPU the timing cells measure; on
# the emulator they say they cannot.

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
from course import histogram, source

course.notebook()

# %% [markdown]
# ## The problem, and the answer to check against
#
# The article's CPU version is one loop, `for (int i = 0; i < DATA_LEN; ++i) hist[buffer[i]]++;`.
# NumPy's `np.bincount(x, minlength=256)` is the same loop in C, and it is our reference: 256
# counts, as 64-bit integers. The article counts 100 MiB; a million bytes keep the emulator quick
# (the timings near the end use the article's size and more).

# %%
n = 1_000_003
x = histogram.histogram_bytes(n, "uniform", np.random.default_rng(0))
want = histogram.reference(x)
print("bins 0-7:", want[:8], "...", want.sum(), "bytes in", len(want), "bins")

# %% [markdown]
# About 3 900 bytes fall in each bin (10^6 / 256), give or take the random spread.
#
# **The article's random bytes are not uniform.** It fills the buffer with
# `rnd(255) = static_cast<int>(255 * rand() / RAND_MAX)`: the product is rounded down, so the
# value 255 comes out only when `rand()` returns (nearly) `RAND_MAX`. Over every value `rand()`
# can return:

# %%
histogram.rnd_table()

# %% [markdown]
# With Microsoft's C library, bin 255 gets one value of `rand()` in 32 768, where every other bin
# gets about 128 of them; with glibc (computed in `float`), 64 values in 2^31. The article's bin
# 255 is nearly empty, and its check cannot notice: it compares the GPU's counts with the CPU's on
# the same bytes. (`rand() % 256` or NumPy's `integers(0, 256)` give every bin its share.)
#
# **Four kinds of data.** The time of a histogram depends on its data, so this notebook uses four:
# uniform bytes, all bytes equal (7), a skewed (geometric) distribution where small values are
# common, and real bytes, the RGB pixels of a photograph that ships with matplotlib:

# %%
fig, axes = plt.subplots(1, 4, figsize=(13, 2.8))
histogram.draw_data(axes)

# %% [markdown]
# Uniform bytes spread over all 256 bins; all-equal bytes put everything in one; the skewed bytes
# crowd the first few dozen bins; the photograph is lumpy, with a few peaks.
#
# ## Kernel 1: one global atomic per byte (the article's first kernel)
#
# Every thread takes a byte, and adds 1 to its bin in global memory with `atomicAdd`. A plain
# `hist[b]++` would be a read, an add and a write: two threads doing it to the same bin at once
# can both read 5 and both write 6, losing a count. `atomicAdd` makes the read-modify-write one
# indivisible operation (on a GPU, global atomics are carried out in the L2 cache).
#
# The kernel uses a **grid-stride loop**: thread `i` of the grid handles bytes `i`, `i + stride`,
# `i + 2·stride`, … where the stride is the number of threads in the grid, so a grid of any size
# covers any N.

# %%
source.show("histogram.cu", "hist1_article")

# %% [markdown]
# **The launch.** The article launches one block of 256 threads per streaming multiprocessor
# (SM): `cal_hist<<<prop.multiProcessorCount, 256>>>`. Written out as the rest of the notebook
# makes it for you: the bins are zeroed (`course.zeros` is `cudaMalloc` plus a `cudaMemset` of all
# 1024 bytes), then the grid and block sizes, then the arguments (`long` is 64 bits on Linux):

# %%
sms = course.device().sm_count
k1 = histogram.kernel("hist1_article", np.uint8)
hist = course.zeros(256, np.uint32)
k1((sms,), (256,), (course.asarray(x), hist, np.int64(n)))
print(f"{sms} blocks of 256 threads: matches NumPy: {(course.asnumpy(hist) == want).all()}")

# %% [markdown]
# 132 SMs on an H100 or an H200 (and on the emulator, which models one), so 132 × 256 = 33 792
# threads, each looping over about 30 of the million bytes.
#
# **The article's first bug: `cudaMemset(d_hist, 0, sizeof(int))`.** `cudaMemset` counts bytes,
# so this clears 4 of the histogram's 1024 bytes: bin 0. The other 255 bins start from whatever
# the memory held. The emulator replays the article's host code: `course.empty` stands for
# `cudaMalloc` (memory that holds no value yet: the emulator fills it with `0xFF` bytes and
# remembers that nobody wrote it), then the 4-byte memset, then the kernel:

# %%
histogram.memset_replay(cleared=4)

# %% [markdown]
# The checker names the buffer, the line and a thread that read a bin nobody had written. Each of
# the 255 bins is one short: `0xFFFFFFFF + count` wraps round to `count - 1` in 32 bits. On a GPU
# the counts would be off by whatever the memory held: often nothing, on a fresh allocation, which
# is how such a bug survives. Clearing all `256 * sizeof(unsigned int)` bytes is the fix:

# %%
histogram.memset_replay(cleared=1024)

# %% [markdown]
# **The second bug: an `int` index.** `index += stride` is computed in 32-bit `int`. Past
# 2^31 - 1 it wraps to a negative number, which is still `< data_size`, and the kernel reads before
# the start of the buffer. The article's 100 MiB is far from it, but nothing in the code says so.
# Computed in 32-bit arithmetic, as the GPU does it:

# %%
histogram.int_index_bug()

# %% [markdown]
# The emulator cannot trace 2 GiB, so the course refuses the input instead of launching it. The
# fix indexes with `long long`, and reads the input through the read-only path (`const
# __restrict__`); everything else is the article's kernel:

# %%
source.show("histogram.cu", "hist1")

# %%
print("hist1 matches NumPy:", (histogram.run("hist1", x) == want).all())

# %% [markdown]
# ## Contention: which lanes meet on which bin
#
# A GPU issues instructions for a **warp** of 32 threads (lanes) at a time, so one `atomicAdd`
# instruction asks for 32 additions at once. Lanes that add to different bins can be served side
# by side; lanes that add to the *same* bin are the read-modify-write the atomic must serialise.
# The emulator records the address of every lane. Here is the first atomic instruction of warps
# 0 to 3 of block 0, lane by lane: the number is the bin each lane adds 1 to, the colour says how
# many lanes of that warp hit the same bin:

# %%
fig, axes = plt.subplots(3, 1, figsize=(12, 7.5))
histogram.draw_lane_bins(axes, "hist1", ["uniform", "skewed", "all-equal"])

# %% [markdown]
# On uniform bytes a warp's 32 lanes hit about 30 different bins, now and then two lanes on one;
# on skewed bytes a small bin (0, or 6) draws 3 or 4 lanes of every warp and the lanes spread over
# only about 20 bins; when every byte is 7, all 32 lanes of every warp add to bin 7. Counted over the whole
# launch (4096 bytes, blocks of 256), per atomic warp instruction:

# %%
histogram.contention_table(["hist1"])

# %% [markdown]
# "Lanes on one bin" is the busiest bin's share of each warp instruction: about 2 on uniform
# bytes, about 4 on skewed ones, 32 on all-equal bytes. If the hardware served the lanes on one
# address one after another, all-equal bytes would cost 16 times what uniform bytes do. On an
# H200, at 2^28 bytes (the table near the end measures it), `hist1` takes about 33 ms on uniform
# bytes and about 200 ms on all-equal ones: about 6 times slower, not 16. The trace counts what
# the code asks for, not how the L2's atomic units carry it out; what both times say is that one
# global atomic per byte is hopeless: at best about 8 GB/s against the copy's 4 000.
#
# ## Kernel 2: a private histogram per block (the article's second kernel)
#
# The article's second kernel gives each block its own 256 bins in **shared memory** (on-chip
# memory the threads of a block share, about as fast as a register file): each thread zeroes one
# bin, the block counts its bytes with shared-memory atomics, and then each thread adds one bin of
# the block's histogram to the global one. Global atomics drop from one per byte to 256 per block.

# %%
source.show("histogram.cu", "hist2_article")

# %% [markdown]
# On a GPU, `histogram.run` first runs the article's kernels on the emulator, which checks every
# access before the GPU sees them; it does that for up to 2^16 bytes, so they get the first 60 000
# bytes here:

# %%
small = x[:60_000]
print("hist2_article matches NumPy:", (histogram.run("hist2_article", small) == histogram.reference(small)).all())

# %% [markdown]
# Where the atomics go, counted from the traces of each version on 2^14 bytes with blocks of 256:

# %%
histogram.merge_table()

# %% [markdown]
# `hist1` makes 16 384 global atomics, one per byte. The versions after it make their 16 384
# atomics in shared memory and at most 256 global ones per block. `hist2`'s grid-stride loop hands
# each thread one byte when it launches a block per 256 bytes (64 blocks here), so the merge costs
# 0.63 global atomics per byte; the vectorised versions below run 4 blocks of 4096 bytes each, and
# their merge costs 1/16 of an atomic per byte. Privatising pays when a block counts many more
# bytes than it has bins.
#
# **The article's third bug: exactly 256 threads.** `temp[threadIdx.x] = 0` zeroes one bin per
# thread, and `atomicAdd(&hist[threadIdx.x], temp[threadIdx.x])` merges one bin per thread. With
# blocks of 128 threads, bins 128 to 255 are never zeroed and never merged:

# %%
histogram.block_bug(128)

# %% [markdown]
# The bins 128–255 stay at 0 in `hist`, and the checker names the shared array and the line that
# read bins nobody zeroed. On all-equal bytes (every byte 7) the same launch gives the right
# answer: the bins it drops are empty anyway. A test on one kind of data can hide a bug.

# %%
histogram.block_bug(128, data="all-equal")

# %% [markdown]
# With 512 threads, threads 256 to 511 write past the 256-entry shared array on the first line.
# On a GPU that is undefined behaviour (another variable, or a fault); the emulator stops at the
# first such write and says who made it:

# %%
histogram.block_bug(512)

# %% [markdown]
# The fix zeroes and merges the 256 bins in a loop over the block, whatever its size, and skips
# the global atomic for an empty bin:

# %%
source.show("histogram.cu", "hist2")

# %%
print("hist2 matches NumPy with blocks of 128, 256 and 512:", all((histogram.run("hist2", x, block=b) == want).all() for b in (128, 256, 512)))

# %% [markdown]
# ## The article's launch: blocks = SM count
#
# The article's text says it launches twice as many blocks as there are SMs "to make good use of
# the GPU"; its code launches one per SM. Either way, every SM gets a block or two of 256
# threads, each thread looping over thousands of the 100 MiB (read from the traces at 2^16 bytes,
# and scaled to 100 MiB):

# %%
histogram.article_grids()

# %% [markdown]
# Both launches are **one wave**: all their blocks are resident at once, none waits for a free SM.
# But an SM can hold far more: 2048 threads (64 warps), 32 blocks and 228 KiB of shared memory, so
# eight blocks of 256 threads with their 1 KiB of bins each. The article's grid fills 8 of each
# SM's 64 warp slots.
#
# **Why that matters here: bytes in flight.** A load from DRAM takes about 600 ns to come back.
# To keep the memory busy, every SM must have enough loads waiting at all times: by **Little's
# law**, bytes in flight = bandwidth × latency, about 4.8 TB/s × 600 ns ≈ 2.9 MB on an H200, or
# 22 KB per SM. The trace shows how many bytes a thread of each kernel loads before it needs them
# (its first atomic needs the byte just loaded): one, for the article's kernels. Launch by launch:

# %% tags=["nbval-ignore-output"]
histogram.launch_table()

# %% [markdown]
# Read the last column: the article's `hist2_article` keeps 256 bytes in flight per SM, about 1 %
# of what Little's law asks; twice the blocks, twice that; a full wave of 8 blocks per SM, eight
# times; the 16-byte loads of `hist3_vec` (next section) another 16 times, past what is needed.
# `hist5_lanes` fits only 6 blocks per SM: its 32 KiB of shared memory per block runs out before
# the threads do. Timed on the article's 100 MiB (on a GPU; the emulator has nothing to time):

# %% tags=["nbval-ignore-output"]
histogram.grid_timing()

# %% [markdown]
# On an H200 the speed follows the bytes in flight as long as they are short of Little's law:
# `hist2_article` with one block per SM reads about 90 GB/s, with two about 180 GB/s (the
# article's text was right, its code was not), with a full wave roughly 700 GB/s. `hist3_vec`'s
# 16-byte loads reach about 2 TB/s, `hist5_lanes` about 3 to 3.5 TB/s, most of the copy. The global-
# atomic kernels stay at about 8 GB/s whatever their grid: their limit is the L2's atomics, not
# the bytes in flight.
#
# ## The article's 29.22 ms
#
# The article measures with CUDA events from before the first `cudaMalloc` to after the result is
# copied back: the time includes allocating, the 100 MiB `cudaMemcpy` from pageable host memory
# (`new unsigned char[]`), `cudaGetDeviceProperties`, the kernel and the 1 KiB copy back. It does
# not name its GPU (its screenshots of the run are lost), so its number cannot be held against
# another GPU's; what can be compared is where the time goes. The same span and its parts on this
# GPU:

# %% tags=["nbval-ignore-output"]
histogram.article_timing()

# %% [markdown]
# On the H200 machine the copy from pageable memory takes about 22 ms (about 4.7 GB/s over the
# host link), and the article's shared-memory kernel about 1.2 ms of the span: the article's
# 29.22 ms measures mostly its host-to-device copy, not its kernel. Kernel against kernel, the
# article's global-atomic version takes about 13 ms and its shared-memory version about 1.2 ms:
# privatising was worth a factor of about 11. `hist5_lanes`, below, counts the same 100 MiB in
# about 0.03 ms, some 30 to 40 times faster again.
#
# ## Kernel 3: 16-byte loads (beyond the article)
#
# The cure for too few bytes in flight is more bytes per load: each thread reads 16 bytes at once
# (a `uint4`, one instruction), then counts them from registers. A warp then asks for 512
# contiguous bytes per load instruction instead of 32. Bytes before the first 16-byte boundary
# and after the last whole vector are counted one at a time. The counting and the merge are
# `hist2`'s:

# %%
source.show("histogram.cu", "for_each_key", "hist3_vec")

# %%
print("hist3_vec matches NumPy:", (histogram.run("hist3_vec", x) == want).all())

# %% [markdown]
# From the traces (4096 uniform bytes, blocks of 256): global load instructions, the bytes and
# 32-byte sectors each asks for, and what a thread loads before its first atomic:

# %%
histogram.load_table()

# %% [markdown]
# `hist1` and `hist2` issue 128 warp loads of 32 bytes (one sector each); the 16-byte versions
# issue 8 of 512 bytes (16 sectors, fully used), and each thread has 16 bytes in flight instead of
# one.
#
# **Bank conflicts.** Shared memory is split into 32 *banks* of 4-byte words; word `w` is in bank
# `w % 32`. A warp's access takes one pass when its lanes hit different banks (or the same word);
# when `k` lanes hit *different words* of one bank it takes `k` passes, a *k-way conflict*. Bin
# `b` of `temp` is word `b`, in bank `b % 32`, so 32 random bytes put two or three lanes on
# different words of some bank in almost every instruction. The banks `hist3_vec`'s atomics hit,
# warp instruction by warp instruction, on uniform bytes:

# %%
fig, ax = plt.subplots(figsize=(11, 3.6))
histogram.draw_banks(ax, "hist3_vec", "uniform")

# %% [markdown]
# Every row has a bank holding 2, 3 or 4 distinct words: each of those instructions takes 2 to 4
# passes. All-equal bytes put every lane on one word, which the hardware combines (the table near
# the end shows all-equal `hist3_vec` at the copy's speed); on uniform bytes it is the
# conflicts that cost.
#
# ## Kernel 4: warp-aggregated atomics
#
# If lanes holding the same byte cost time, let them agree first: `__match_any_sync` gives each
# lane the mask of the lanes of its warp that hold the same key, and only the lowest lane of each
# group adds the group's size. All-equal bytes then make one atomic per warp instruction instead
# of 32:

# %%
source.show("histogram.cu", "add_aggregated", "hist4_warp_agg")

# %% [markdown]
# Every lane of the warp must call `__match_any_sync` with the full mask, so the loop runs the same
# number of trips in every lane and lanes past the end pass `valid = false` (the kernel's helper
# `for_each_key_warp` does that).

# %%
print("hist4_warp_agg matches NumPy:", (histogram.run("hist4_warp_agg", x) == want).all())

# %% [markdown]
# The same picture as for `hist1`, now of `hist4_warp_agg`'s first shared atomic in each warp: a
# lane drawn "–" made no atomic, because a lower lane of its group added for it:

# %%
fig, axes = plt.subplots(2, 1, figsize=(12, 5))
histogram.draw_lane_bins(axes, "hist4_warp_agg", ["skewed", "all-equal"])

# %% [markdown]
# On all-equal bytes lane 0 alone updates bin 7 for the whole warp, adding 32. On skewed bytes
# every bin still gets one lane, and the lanes whose byte another lane already holds sit out: about
# a third of each warp here. How many atomics that saves on every kind of data is in the table at
# the end of the next section.
#
# ## Kernel 5: a sub-histogram per lane
#
# Privatise further: give every lane of a warp its own copy of the 256 bins, so no two lanes of
# a warp ever touch the same word, *and* lay the copies out bin-major, `temp[bin * 32 + lane]`, so
# lane `l`'s copy of every bin is in bank `l`. Then no data can make two lanes of a warp meet on a
# word or a bank. The price: 32 KiB of shared memory per block, and a merge that adds 32 copies
# per bin:

# %%
source.show("histogram.cu", "count_per_lane", "hist5_lanes")

# %% [markdown]
# The same uniform bytes as `hist3_vec`'s picture above: every lane in its own bank, one pass
# per instruction:

# %%
fig, ax = plt.subplots(figsize=(11, 3.6))
histogram.draw_banks(ax, "hist5_lanes", "uniform")

# %% [markdown]
# **The launch changes.** 32 KiB a block decides how many blocks fit on an SM: with the course's
# default block of 1024 threads, two (the H200 sweep's best: two big blocks zero and merge fewer
# copies than four of 512); with 256 threads, six, not eight. The plan for the million bytes above
# (it needs fewer blocks than a full wave: 16 bytes a thread a trip, N / (1024 × 16) blocks):

# %%
histogram.ENGINE.plan("hist5_lanes", course.asarray(x)).launches[0]

# %%
print("hist5_lanes matches NumPy:", (histogram.run("hist5_lanes", x) == want).all())

# %% [markdown]
# **How many copies?** Between one copy per block (`hist3_vec`) and one per lane (`hist5_lanes`),
# the tuning's template `hist5_copies<C>` gives lane `l` copy `l % C`. From traces of one block of
# 256 on 4096 bytes: shared memory, blocks per SM, and the worst contention of the counting atomic:

# %%
histogram.copies_table()

# %% [markdown]
# All-equal bytes put 32 / C lanes on one word, uniform bytes cause fewer bank conflicts as C
# grows, and only 32 copies leave exactly one lane per word and per bank on any data. The H200
# sweep (`docs/tuning/nvidia-h200-2026-11-24.log`, 2^28 bytes, blocks of 1024) found the same:
# on uniform bytes 32 copies reach about 94 % of the copy and 16 copies about 75 %; on all-equal
# bytes every C from 1 to 32 runs at 95 to 100 %.
#
# **What each kind of data costs, counted.** Every story version on every kind of data (4096
# bytes, blocks of 256): atomic warp instructions on the counting buffer, the busiest bin's lanes
# and the distinct bins per instruction, the mean bank conflict of the shared atomics, and every
# atomic performed (the merges included):

# %%
histogram.contention_table()

# %% [markdown]
# Read it by column. `hist1` and `hist2` make the same 128 warp instructions with the same
# contention; `hist2`'s atomics are in shared memory, where uniform bytes conflict about 3-way.
# `hist4_warp_agg` leaves 1 lane per bin and cuts all-equal atomics from 4 097 to 129, but leaves
# the bank conflicts of uniform bytes as they were (3.14). `hist5_lanes` shows 1 lane on a bin and
# 1-way on every kind of data. Skewed and real bytes fall between uniform and all-equal.
#
# Which of these counts turn into time? On an H200 at 2^28 bytes (the table below): `hist3_vec`'s
# time follows its bank conflicts: all-equal (1-way) fastest at about 0.065 ms, then skewed, real,
# and uniform (about 3-way) slowest at about 0.12 ms. `hist4_warp_agg`, with by far the fewest
# atomics, is the *slowest* of the shared-memory kernels on every kind of data (about 2 ms on
# uniform bytes): `__match_any_sync` costs more than the conflicts it removes. `hist5_lanes`
# takes about 0.07 ms on all four. Fewer atomics in a trace is not a faster kernel; which atomics
# the hardware must serialise is. (`hist6_runs`, reachable by name, adds each run of equal bytes
# once: 16 times fewer atomics on all-equal bytes, and slower than `hist5_lanes` on every kind of
# data, for the same reason.)
#
# ## More bins than shared memory holds
#
# 256 bins are 1 KiB. A histogram of 12-bit pixels, or of colours quantised to 16 levels per
# channel, has 4096 bins: 16 KiB for one copy, and 512 KiB for `hist5`'s 32 copies, more than an
# SM has:

# %%
histogram.shared_table()

# %% [markdown]
# One copy of 4096 bins still fits, so `hist_wide` (reachable as `histogram.wide`) keeps one copy
# per block, in *dynamic* shared memory sized at launch (`4 * bins` bytes), and uses warp
# aggregation against all-equal keys. The launch, for a million 16-bit keys:

# %%
keys = histogram.wide_keys(n, "real")
histogram.wide_plan(course.asarray(keys)).launches[0]

# %%
print("hist_wide matches NumPy:", (histogram.wide(keys) == histogram.wide_reference(keys)).all())

# %% [markdown]
# From the traces (2^14 keys, blocks of 256): warp aggregation leaves one lane per word, but the
# banks still conflict on uniform keys, and the merge is now up to 4096 global atomics per block:

# %%
histogram.wide_table()

# %% [markdown]
# With 2^14 keys in 8 blocks the merge costs almost as many global atomics as there are keys;
# with millions of keys per block it is small. Timed on 2^27 keys (on a GPU):

# %% tags=["nbval-ignore-output"]
histogram.wide_timing()

# %% [markdown]
# On an H200 all-equal keys take about 0.13 ms (about half the copy's speed), the photograph's
# colours about 0.55 ms and uniform keys about 1.1 ms, only about twice `cupy.bincount`: the
# `__match_any_sync` per key that makes all-equal keys cheap is what makes uniform keys slow, as
# in `hist4_warp_agg`. When shared memory runs out, privatisation per lane is gone, and what is
# left is a choice between costs.
#
# ## Try it
#
# Pick a version, a block size, N and the kind of data. The panel runs the kernel on this
# machine's backend, compares the counts with NumPy's, shows what the checker finds, traces the
# first 16 × block bytes of block 0 and draws their atomics, and lists numbers read from that
# trace:
#
# - **counting atomics** on `hist` (global) or `temp` (shared) made by block 0, and the **atomic
#   warp instructions** that made them;
# - **lanes on one bin: most / mean**: the busiest bin's lanes per warp instruction; **serialised
#   atomic rounds**: their sum, the passes the atomics take if same-address lanes go one at a time;
# - **bank conflict of the atomics: worst / mean** (shared memory only), and the **global atomics
#   of the merge**;
# - **bytes per warp load**: 32 for one byte a lane, 512 for 16;
# - the **grid** and the most **elements per thread**, from the launch; on a GPU, the time.
#
# Try `hist2_article` at block 128 on uniform and on all-equal bytes, `hist1` on all-equal bytes
# (32 lanes on one bin in every row), or `hist3_vec` against `hist5_lanes` on uniform bytes.

# %% tags=["nbval-ignore-output"]
histogram.panel(version="hist1", n=4096, block=256, data="all-equal")

# %% [markdown]
# ## How fast on a GPU
#
# A histogram reads every byte once and writes 1 KiB: it is limited by memory bandwidth at best,
# so its speed is counted in bytes read per second and held against a device-to-device copy of
# the same number of bytes (the copy reads half and writes half), timed in the same run, and
# against `cupy.bincount`. Every version, the article's with the article's launch (blocks = SM
# count, 256 threads), the others with their own (one wave, blocks of 1024), on each kind of data
# at 2^28 bytes; ms and % of the copy's speed, median of 20 CUDA-event runs (about a minute:
# `hist1` takes up to 0.2 s a run):

# %% tags=["nbval-ignore-output"]
table = histogram.gpu_table()
table

# %% [markdown]
# On an H200 the copy takes about 0.066 ms. `hist5_lanes` stays within a few per cent of it on
# every kind of data (about 95 %, about 40 to 60 times faster than `cupy.bincount`, which takes
# 3 to 4 ms); `hist3_vec` ranges from about the copy's speed (all-equal) to about 55 % (uniform).
# `hist2` takes about 0.37 ms whatever the data: its one byte per load leaves it short of bytes
# in flight, and that hides every other cost. The article's kernels: about 3 ms for
# `hist2_article` (one block per SM) and 33 to 200 ms for `hist1_article`, the only one that
# all-equal bytes slow down by much. The same times as bars (log scale):

# %% tags=["nbval-ignore-output"]
fig, ax = plt.subplots(figsize=(12, 4))
histogram.plot_times(ax, table)

# %% [markdown]
# Each group is a kernel, each colour a kind of data: the bars of `hist1` and `hist4_warp_agg`
# change with the data, those of `hist2` and `hist5_lanes` do not.
#
# **Against N.** `hist2`, `hist3_vec` and `hist5_lanes` on uniform and all-equal bytes, beside
# `cupy.bincount` and the copy, from 2^16 to 2^28 bytes:

# %% tags=["nbval-ignore-output"]
records = histogram.speed_against_n()
fig, ax = plt.subplots(figsize=(9, 4.5))
histogram.plot_speed(ax, records)

# %% [markdown]
# Below about 2^20 bytes every kernel takes a few microseconds, the time of a launch; these points
# say nothing about the kernels. From 2^26 on `hist5_lanes` follows the copy on both kinds of
# data, `hist3_vec` only on all-equal bytes, and `hist2` stays far below, short of bytes in
# flight. The full sweep and the course's goals are in `docs/benchmarks/`.
#
# ## Exercises
#
# Each exercise is checked by a call: `histogram.exercises.<name>.check(answer)` says what is wrong
# (which pattern and which column, which case, which thread and line) and the rule to apply, never
# the answer. `histogram.exercises.<name>.hint()` gives a hint when you ask, one more each time, and
# `histogram.exercises.<name>.show(mine)` draws what your kernel did, as the pictures above draw
# the course's kernels. Kernels you write run on the emulator first, with the checker, whatever the
# machine: a stray access or an endless loop ends in a verdict, never in a crashed GPU.
#
# **1. Predict, then check: lanes and banks.** One warp of `hist2` counts 32 bytes, lane `l`
# holding the byte given by each pattern below. For each, predict how many lanes hit the busiest
# bin and how many ways the shared-memory atomic's worst bank conflict has (bin `b` is word `b`,
# in bank `b % 32`; lanes on the same word are not a conflict). Replace each `None`; the check
# traces the warp and names the pattern and the column that are off.

# %%
my_guess = {  # (lanes on the busiest bin, bank ways)
    "l": (None, None),
    "7": (None, None),
    "l % 4": (None, None),
    "8 * l": (None, None),
    "32 * (l % 8)": (None, None),
}
histogram.exercises.patterns.check(my_guess)

# %% [markdown]
# Then think about which of the five would be slow in `hist1` (global atomics) and which in
# `hist3_vec` (shared atomics) on an H200, going by the times above.
#
# **2. Fix: a sub-histogram per warp.** A middle road between `hist2` and `hist5_lanes`: a copy of
# the 256 bins per *warp*, so lanes of different warps never meet on a word (`blockDim.x / 32`
# copies in dynamic shared memory, launched with `blockDim.x / 32 * 1024` bytes). The kernel below
# has two bugs. The check runs it on the emulator on N from 1 to 20 000 (1, a block ± 1, no powers
# of two), one to five blocks of 32, 96, 128, 256 and 1024 threads, every kind of bytes, and
# stops at the first problem: a bug the checker found (its thread, line and buffer), a count that
# differs from `np.bincount`, or a target missed: **each warp counts in its own copy**, and **each
# block adds a bin to `hist` with one global atomic at most**. On a GPU it then times your kernel
# beside `hist5_lanes` and a copy of the same bytes.

# %%
mine = r"""
extern "C" __global__ void hist_warps(const unsigned char* x, unsigned int* hist, long long n) {
    extern __shared__ unsigned int temp[];                  // blockDim.x / 32 copies of 256 bins
    const int warps = blockDim.x / 32;
    for (int k = threadIdx.x; k < 256; k += blockDim.x) temp[k] = 0;
    __syncthreads();
    unsigned int* mine = temp + (threadIdx.x / 32) * 256;   // this warp's copy
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&mine[x[i]], 1u);
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {   // merge: add the warps' copies of bin b
        unsigned int sum = 0;
        for (int w = 0; w < warps; ++w) sum += temp[w * 256 + b];
        if (sum) atomicAdd(&hist[b], sum);
    }
}"""
histogram.exercises.warp_copies.check(mine)

# %% [markdown]
# **3. Write: warp aggregation where contention costs.** `hist1`'s global atomics are where equal
# bytes hurt: 32 lanes on one bin wait for each other in L2. Below is `hist1` as a kernel of your
# own. Make the lanes of a warp that hold the same byte agree, so that one of them adds for all of
# them, straight into `hist`. The check runs it on N from 1 to 5003 (1, a block ± 1, no powers of
# two), one to four blocks of 32 to 256 threads (whole warps), every kind of bytes, and holds it to
# two targets read from the trace: **at most one atomic on a bin per trip of a warp's loop** (one
# per distinct byte the warp holds) and **no shared memory** (the lanes agree among themselves; a
# histogram per block was exercise 2). On a GPU it then times your kernel beside `hist1` on
# all-equal and on uniform bytes.

# %%
mine = r"""
extern "C" __global__ void hist_agg(const unsigned char* x, unsigned int* hist, long long n) {
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned int byte = x[i];
        // ---- your code: the lanes holding the same byte agree, and one of them adds for all
        atomicAdd(&hist[byte], 1u);
        // ---- end of your code
    }
}"""
histogram.exercises.aggregate.check(mine)

# %% [markdown]
# **4. Measure, then choose: a grid for 9 600 bins.** `hist_wide` keeps one copy of its bins per
# block in dynamic shared memory, 4 bytes a bin. Choose its number of blocks for **9 600 bins**
# and blocks of **256** threads: one wave, every SM holding as many blocks as it can, none waiting
# for a second wave. On a GPU the check times `hist_wide` on 2^28 bytes of keys with your grid
# beside one wave, two waves, a wave counted by threads alone and one block per SM, and passes
# within 10 % of the fastest; without one it checks the launch's arithmetic against this device.
# Replace `None` with your number of blocks.

# %%
histogram.exercises.grid.check(None)

# %% [markdown]
# ## Summary
#
# - A histogram's threads collide on its bins; `atomicAdd` makes the collisions correct, and
#   **contention** decides their cost: the trace shows which lanes of a warp meet on one bin (2
#   on uniform bytes, 32 on all-equal ones) and which meet in one shared-memory bank.
# - **Privatisation** moves the atomics where they are cheap: a histogram per block in shared
#   memory (the article's second kernel, about 11× its first on an H200 with uniform bytes),
#   then a copy per lane laid out so that no two lanes of a warp share a word or a bank,
#   whatever the data.
# - Then the loads: the article's grid of one block per SM, one byte per thread at a time, keeps
#   about 1 % of the bytes in flight that Little's law asks for; a full wave and 16-byte loads
#   take the histogram to the copy's speed, 40 to 60 times `cupy.bincount`.
# - What the data does to the time depends on where the atomics are: global atomics slow down on
#   equal bytes, shared ones on bank conflicts; warp aggregation removes atomics and costs more
#   than it saves. When the bins outgrow shared memory (4096 bins), per-lane copies no longer fit.
# - The article's code clears one bin of 256 with `cudaMemset(d_hist, 0, sizeof(int))`, indexes
#   with `int`, assumes 256 threads per block (128 drop half the bins, 512 write past the shared
#   array), launches one block per SM where its text says two, draws bytes that almost never hit
#   bin 255, and times mostly its 100 MiB host-to-device copy.

# %%
course.my_progress("histogram")

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
# atomic add in global memory per byte, then with a histogram per block in shared memory (29.22 ms<!-- given: article -->
# in the article). Each of its kernels is shown, run, checked against NumPy and traced; where its
# code is wrong, the notebook runs it, shows the bug and fixes it. Then it goes past the article:
# lanes of a warp that agree before a global atomic, 16-byte loads, a copy of the bins per lane,
# and 4096 bins, measured against a device-to-device copy and `cupy.bincount`, on four kinds of
# data. Outside this course, the histogram to call is CUB's `cub::DeviceHistogram::HistogramEven`
# with 32-bit counters (from C++; from Python, `cuda.compute` wraps it, not timed here);
# `cupy.bincount` is the built-in a NumPy user reaches for first, and it calls the same CUB with
# 64-bit counters. Both are timed beside the course's kernels near the end, where the counter width
# turns out to matter.
#
# Every cell runs without a GPU, on the course's emulator, which records every memory access; the
# pictures and counts below are read from those records. On a GPU the timing cells measure; on
# the emulator they say they cannot.

# %%
# On Google Colab: install the course, with CuPy for the GPU's driver (CUDA 12 or 13). Elsewhere: nothing.
import sys

if "google.colab" in sys.modules:
    import glob, importlib, os, pathlib, re, shutil, subprocess

    repo = "https://github.com/OWNER/gpu-patterns-course"
    # a copy of the repository uploaded (or git-cloned) into /content installs as well as the address
    copies = [p for p in glob.glob("/content/*/pyproject.toml") if 'name = "gpu-patterns-course"' in pathlib.Path(p).read_text()]
    source = "file://" + os.path.dirname(copies[0]) if copies else None if "/OWNER/" in repo else "git+" + repo
    if source is None:  # the placeholder address and no copy: nothing to install from
        print(f"Not installed: the course is not published at {repo} yet; upload its folder to /content, run again.")
    else:
        smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout if shutil.which("nvidia-smi") else ""
        cuda = int(re.search(r"CUDA Version: (\d+)", smi)[1]) if "CUDA Version" in smi else 0  # 0: no GPU
        spec = "gpu-patterns-course{} @ " + source
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
# NumPy's `np.bincount(x, minlength=256)` gives the same 256 counts, as 64-bit integers, and it is
# our reference. It is not that loop, though: it first widens the bytes to 64-bit integers and
# scans for the largest, then counts, so the CPU timing further down times the article's own loop,
# compiled. The article counts 100 MiB; a million bytes keep the emulator quick (the timings near the end use the
# article's size and more).

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
# An H100 SXM and an H200 have 132 SMs (an H100 PCIe 114), and so has the emulator's model: 132 ×
# 256 = 33 792 threads, each looping over about 30 of the million bytes.
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
# Two more flaws of the article's host code cannot show here, because the course does it for you.
# Its `CHECK` macro prints a failed call's error and carries on. A kernel that faults is not
# silent: the `cudaMemcpy` of the result back to the host runs on the default stream after the
# kernel and returns only when the copy is done, so it waits for the kernel and returns its fault,
# which `CHECK` prints before the program goes on to use the wrong counts. What is silent is a launch that never starts
# (too many threads a block, too much shared memory): the `<<<...>>>` returns nothing, only
# `cudaGetLastError()` right after it reports the error, and the article never calls it. And its
# check of each generated byte, `if (buffer[i] > 255)` on an `unsigned char`, is never true: dead
# code that looks like a guard (and cannot see the real flaw of `rnd(255)`, the nearly empty bin
# 255).

# %% [markdown]
# **The second bug: an `int` index.** `index += stride` is computed in 32-bit `int`. Past
# 2^31 - 1 a signed `int` overflows, which C++ leaves undefined: the compiler may assume it never
# happens (and, say, keep the index in a 64-bit register), or the sum may wrap to a negative
# number that is still `< data_size`, so the kernel reads before the start of the buffer. The
# article's 100 MiB is far from it, but nothing in the code says so. The wrap, one possible outcome,
# in 32-bit two's-complement arithmetic:

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
# by side; lanes that add to the *same* bin are the read-modify-write the atomic must serialise
# (in global memory, as here; in shared memory, below, the course's `atomicAdd` of 1 into a 32-bit
# word combines them). The emulator records the address of every lane. Here is the first atomic
# instruction of warps 0 to 3 of block 0, lane by lane: the number is the bin each lane adds 1 to, the colour says how
# many lanes of that warp hit the same bin:

# %%
fig, axes = plt.subplots(3, 1, figsize=(12, 7.5))
histogram.draw_lane_bins(axes, "hist1", ["uniform", "skewed", "all-equal"])

# %% [markdown]
# On uniform bytes a warp's 32 lanes hit about 30 different bins, and most warps have a pair of
# lanes on one bin: 32 random bytes fall in 32 different bins of 256 only about 14 times in a
# hundred. On skewed bytes a small bin (0, or 6) draws 3 or 4 lanes of every warp and the lanes
# spread over only about 20 bins; when every byte is 7, all 32 lanes of every warp add to bin 7.
# Counted over the whole launch (4096 bytes, blocks of 256), per atomic warp instruction:

# %%
histogram.contention_table(["hist1"])

# %% [markdown]
# "Lanes on one word" is the busiest bin's share of each warp instruction (a bin is one word of
# `hist`): about 2 on uniform bytes, about 4 on skewed ones, 32 on all-equal bytes. If the
# hardware served the lanes on one address one after another, all-equal bytes would cost 16 times
# what uniform bytes do. The GPU table near the end times `hist1` on all four kinds of data:
# all-equal bytes are the slowest, but by a few times, not 16 (how many depends on where the
# uniform run's bins happen to land, as the next table and the paragraph after it show). The trace
# counts what the code asks for, not how the hardware carries it out.
#
# **Where global atomics wait.** An SM does not carry out a global atomic: it sends it to the L2
# cache, and the L2 slice that holds the word's 128-byte line does the read-modify-write, the
# updates of one line one after another. `hist1`'s 256 bins are 1 KiB: **eight lines**. Every
# atomic of the whole grid, from every SM, queues at one of eight lines, in at most eight of the
# L2's slices, while the other slices idle. Uniform bytes share the eight queues; all-equal bytes
# put every atomic on one word of one line. Two changes tell these costs apart: the same kernel
# with its bins one line apart (`hist1_spread`: 256 lines, so up to 256 queues), and `hist1_agg`
# (next section), whose lanes holding the same byte agree first, so that one atomic adds for all
# of them. All three with the same launch, on 2^26 bytes (on a GPU; the emulator has nothing to
# time):

# %% tags=["nbval-ignore-output"]
histogram.global_atomics_timing()

# %% [markdown]
# Read it by column. Spacing the bins a line apart changes nothing on all-equal bytes (one word
# is in one line however far apart the others are) and makes uniform bytes several times faster
# on this H100: on uniform bytes the eight lines, not global atomics as such, were `hist1`'s limit.
# On all-equal bytes the queue is one word's, and only fewer atomics help: that is what `hist1_agg`
# does, some thirty times faster than `hist1` there, and hardly faster on uniform bytes.
# How much each change gains is this GPU's.
#
# **Where the bins land.** `hist1`'s time on uniform bytes also depends on its allocation.
# `scripts/gpu_facts_histogram.py` timed it on this H100 (2^28 uniform bytes, the GPU table's
# launch) in eight rounds, each with freshly allocated bins and input: within a round the runs
# agreed to 1 %, and the rounds fell in two groups, 33 ms<!-- given: reference --> and
# 69 ms<!-- given: reference -->, nothing between. The four slow rounds had their 1 KiB of bins
# starting on a 1 KiB boundary, the four fast ones 512 bytes past one. So the time follows where
# the eight lines sit; why, the script cannot say (how the L2 maps addresses to its slices is not
# documented, and each round moved the input too). The boundary is not the whole story either:
# CuPy hands out memory in 512-byte steps, so those two are the only places a 1 KiB array can start
# within a KiB, yet the GPU table near the end measured
# 38.4 ms<!-- from gpu_table: uniform ms @ version=hist1 -->, in neither group, and what else
# moves the time is not measured here. Any one time of `hist1` on uniform bytes belongs to one set
# of allocations: the table above is one, the GPU table another, and neither need match the
# script's rounds or each other, while all-equal bytes, one word wherever it lands, do not move. Read `hist1`'s uniform figures as "this allocation's", and
# all-equal against uniform as a few times, not as one ratio.
#
# ## Kernel 1, aggregated: lanes that agree before the global atomic
#
# `__match_any_sync(mask, value)` gives each lane the mask of the lanes of its warp that passed
# the same value. The lowest lane of each group (`__ffs(peers) - 1`) adds the group's size
# (`__popc(peers)`) to the bin, the others add nothing: a warp makes one global atomic per
# distinct byte it holds, 1 instead of 32 on all-equal bytes, about 30 on uniform ones. Every lane
# named in the mask must make the call, so the loop runs the same trips in every lane of a warp
# (it steps over whole warps: `base` is the index of lane 0), and lanes past the end take part
# with `valid = false`:

# %%
source.show("histogram.cu", "add_aggregated", "hist1_agg")

# %%
print("hist1_agg matches NumPy:", (histogram.run("hist1_agg", x) == want).all())

# %% [markdown]
# The picture of `hist1`'s lanes, now of `hist1_agg`: the bin each lane's atomic updates, and under
# it what the atomic adds (`__popc(peers)`); a lane drawn "–" made no atomic, because a lower lane
# of its group added for it:

# %%
fig, axes = plt.subplots(2, 1, figsize=(12, 5))
histogram.draw_lane_bins(axes, "hist1_agg", ["skewed", "all-equal"])

# %% [markdown]
# On all-equal bytes lane 0 of each warp adds 32 to bin 7 and the other 31 lanes make no atomic;
# on skewed bytes the lanes holding a common small byte leave it to the lowest of them.
#
# The atomics each version makes, and the most lanes on one word per warp instruction, counted
# from the traces (4096 bytes, blocks of 256):

# %%
histogram.contention_table(["hist1", "hist1_agg"])

# %% [markdown]
# On all-equal bytes `hist1_agg` makes 128 atomics where `hist1` makes 4 096, each adding 32; on
# uniform bytes it saves only the pairs, about one atomic in sixteen, and pays for a
# `__match_any_sync` per byte. The GPU table near the end times both on all four kinds of data.
#
# **Exercises** sit where their idea is taught, nine in all. Each is checked by a call:
# `histogram.exercises.<name>.check(answer)` says what is wrong (which pattern and which column,
# which case, which thread and line) and the rule to apply, never the answer;
# `histogram.exercises.<name>.hint()` gives a hint when you ask, one more each time; and for a
# kernel, `histogram.exercises.<name>.show(mine)` draws what it did, as the pictures here draw the
# course's kernels. Kernels you write run on the emulator first, with the checker, whatever the
# machine: a stray access or an endless loop ends in a verdict, never in a crashed GPU.
#
# **Exercise: predict what `hist1_agg`'s atomics do.** One warp of `hist1_agg` counts 32 bytes,
# lane `l` holding the byte each pattern gives (`//` is integer division, `min(l, 8)` is `l` up to
# 8 and 8 after). For each, predict how many global atomics the warp makes and the largest number
# one of them adds. The check traces the warp and names the pattern and the column that are off,
# never the count.

# %%
my_guess = {  # (global atomics of the warp, largest number one atomic adds)
    "l": (None, None),
    "min(l, 8)": (None, None),
    "l % 4": (None, None),
    "l // 4": (None, None),
    "l % 3": (None, None),
}
histogram.exercises.agg_atomics.check(my_guess)

# %% [markdown]
# **Exercise: aggregation without `__match_any_sync`.** `__match_any_sync` came with Volta; before
# it, and in code that must run where it is slow, the lanes find their groups with warp votes:
# pick a lane not yet counted, let every lane compare its byte with that lane's (`__shfl_sync`
# hands the byte round, `__ballot_sync` collects the yes/no into a mask), let one lane add the
# group's size, and repeat with the lanes left. Below is `hist1` as a kernel of your own: make its
# lanes agree that way. The check runs it on N from 1 to 5003 (1, a block ± 1, no powers of two),
# one to four blocks of 32 to 256 threads, every kind of bytes, and holds it to three targets read
# from the trace and the compiled code: **at most one atomic on a bin per trip of a warp's loop**,
# **no shared memory**, and **no `__match_any_sync`**. On a GPU it then times your kernel beside
# `hist1_agg` on all-equal and on uniform bytes: one round per distinct byte is cheap when there
# are few. `histogram.exercises.aggregate.show(mine)` draws your kernel's first trip in each warp as
# `hist1_agg`'s is drawn above, with what each atomic adds.

# %%
mine = r"""
extern "C" __global__ void hist_agg(const unsigned char* x, unsigned int* hist, long long n) {
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned int byte = x[i];
        // FILL ME IN (about 8 lines): the lanes holding the same byte agree, without __match_any_sync,
        // and one of them adds for all of them
        atomicAdd(&hist[byte], 1u);
    }
}"""
histogram.exercises.aggregate.check(mine)

# %% [markdown]
#
# ## Kernel 2: a private histogram per block (the article's second kernel)
#
# The article's second kernel gives each block its own 256 bins in **shared memory**: on-chip
# SRAM in each SM, beside its L1 cache, that the threads of a block share. It is slower than
# registers (a load takes some 20 to 30 cycles, a register operand none, and it moves far fewer
# bytes per cycle), but its atomics are carried out in the SM itself, without a trip to L2 and
# without queueing behind the other SMs. Each thread zeroes one bin, the block counts its bytes
# with shared-memory atomics, and then each thread adds one bin of the block's histogram to the
# global one. Global atomics drop from one per byte to 256 per block.
#
# The article says that atomics inside a block are serial (一个block内部的原子操作是串行的). They
# are not: a warp's shared atomic on 32 different words in 32 different banks is one pass; only
# lanes on *different words of one bank* take a pass each (a bank conflict, below), and lanes on
# the *same* word are combined, by the atomic instruction itself (kernel 4 shows the machine
# code; in the GPU table `hist3_vec` counts all-equal bytes, 32 lanes on one word, at the copy's
# speed, and uniform bytes slowest).

# %%
source.show("histogram.cu", "hist2_article")

# %% [markdown]
# The article's kernels have bugs that can write past an array, so `histogram.run` runs them on a
# GPU only after the emulator has checked the same launch on the same bytes, which it can do for up
# to 2^16 bytes: 60 000 bytes here. (The timings further on launch them on 100 MiB and 2^28 bytes
# with the one launch that checked clean, blocks of 256.)

# %%
small = x[:60_000]
print("hist2_article matches NumPy:", (histogram.run("hist2_article", small) == histogram.reference(small)).all())

# %% [markdown]
# Where the atomics go, counted from the traces of each version on 2^14 bytes with blocks of 256:

# %%
histogram.merge_table()

# %% [markdown]
# `hist1` makes 16 384 global atomics, one per byte, and `hist1_agg` nearly as many, still global
# (15 405: on uniform bytes few lanes of a warp agree). The shared-memory versions, `hist2` and
# after, make theirs in shared memory (16 384, or 15 409 where `hist4_warp_agg`'s lanes agree) and
# at most 256 global ones per block. `hist2`'s grid-stride loop hands
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
for b in (128, 256, 512):
    print(f"hist2 with blocks of {b} matches NumPy:", (histogram.run("hist2", x, block=b) == want).all())

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
# **Why that matters here: bytes in flight.** A load from DRAM takes hundreds of nanoseconds to
# come back. To keep the memory busy, every SM must have enough loads waiting at all times: by
# **Little's law**, bytes in flight = bandwidth × latency, shared among the SMs. The two figures
# this machine uses, and where each comes from:

# %% tags=["nbval-ignore-output"]
course.device().describe()

# %% [markdown]
# On a GPU the course measures both with `course.probe`: the **DRAM read stream** (bandwidth) and
# the **DRAM latency** (a pointer chase on an idle memory). The H100 this notebook was run on gave
# about 350 ns and 2.9 TB/s<!-- given: reference -->: about 1 MB in flight, some 7.7 KB per SM.
# On the emulator there is no GPU to measure: its model takes the datasheet peak and 600 ns, so
# it asks for about twice as many bytes per SM. Either way it is a floor: a memory under load
# answers later than an idle one. The trace shows how many bytes a thread of each kernel loads before it needs them (its first
# atomic needs the byte just loaded): one, for the article's kernels. Launch by launch:

# %% tags=["nbval-ignore-output"]
histogram.launch_table()

# %% [markdown]
# Read the last column: the article's `hist2_article` keeps 256 bytes in flight per SM, about 3 %
# of what Little's law asks; twice the blocks, twice that; a full wave of 8 blocks per SM, eight
# times; the 16-byte loads of `hist3_vec` (next section) another 16 times, past what is needed.
# `hist5_lanes` fits only 6 blocks per SM: its 32 KiB of shared memory per block runs out before
# the threads do. Timed on the article's 100 MiB (on a GPU; the emulator has nothing to time):

# %% tags=["nbval-ignore-output"]
histogram.grid_timing()

# %% [markdown]
# Read the GB/s column: the shared-memory kernels follow the bytes in flight as long as they are
# short of Little's law. `hist2_article` with two blocks per SM reads about twice what it reads
# with one (the article's text asks for twice as many blocks as SMs, its code launches one per SM;
# more do help, though two per SM still reach only a small share of the copy), with a full wave
# several times more;
# `hist3_vec`'s 16-byte loads and `hist5_lanes` take most of the copy's speed. The global-atomic
# kernels read about the same with one block per SM as with a full wave: their limit is the queue
# at the eight lines of the bins in L2 (the table after the contention pictures), not the bytes in
# flight.
#
# **Exercise: predict the bytes in flight.** For each launch below (a kernel, its block and how
# many blocks an SM runs), predict the bytes an SM has in flight and what % of Little's law that
# is on the machine you run it on (to 0.1): the bytes an SM needs are bandwidth × latency / SMs
# from `course.device().describe()` above (the read stream on a GPU, the peak on the emulator),
# the same figure the launch table divides by. The check names the launch and the column that are
# off.

# %%
my_guess = {  # (bytes in flight an SM, % of Little's law)
    "hist2, blocks of 640, 3 blocks an SM": (None, None),
    "hist3_vec, blocks of 96, 10 blocks an SM": (None, None),
    "hist3_vec, blocks of 1024, 1 block an SM": (None, None),
    "hist1, blocks of 64, 12 blocks an SM": (None, None),
}
histogram.exercises.in_flight.check(my_guess)

# %% [markdown]
# ## The article's 29.22 ms<!-- given: article -->
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
# Read the table from the top: on this H100 the copy from pageable host memory is most of the
# span and the article's shared-memory kernel a small part of it. That split is this GPU's: the
# article's kernel keeps so few bytes in flight that its time grows as the GPU has fewer SMs (the
# launch and grid tables above), so on the article's unknown GPU the kernel may have been a much
# larger share of its 29.22 ms<!-- given: article -->; the table cannot say. Kernel against kernel,
# the article's shared-memory version is some ten times faster than its global-atomic one
# (whose uniform time depends on where its bins land, as above), and
# `hist5_lanes`, below, tens of times faster again.
#
# The CPU row is the article's starting point: its loop `hist[buffer[i]]++`, compiled with this
# machine's C compiler (`cc -O2`) and timed on one core of the host, warmed up (the row says if no
# compiler was found and `np.bincount` stood in, which reads many times the bytes). Every GPU
# kernel in the table counts the 100 MiB faster than it. Whether the GPU still wins when the bytes
# start on the host is the CPU row against the copy row plus a kernel's row: compare them for
# `hist1_article` and for `hist5_lanes` (with `hist5_lanes`, the copy is nearly all of the GPU's
# side).
#
# ## Kernel 3: 16-byte loads (beyond the article)
#
# The cure for too few bytes in flight is more bytes per load: each thread reads 16 bytes at once
# (a `Vec` of 16 bytes, one instruction), then counts them from registers. A warp then asks for 512
# contiguous bytes per load instruction instead of 32. A vector load must be aligned, so `split`
# cuts x into a head (the bytes before the first 16-byte boundary: none for an array CuPy or the
# course allocated), the whole vectors, and a tail (the bytes after the last whole vector), and
# `for_each_vector` loads each vector with one instruction (`const Vec p = s.v[i]`) and the head and
# tail a byte at a time. The counting and the merge are `hist2`'s:

# %%
source.show("histogram.cu", "split", "for_each_vector", "for_each_key", "hist3_vec")

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
# **Exercise: write a kernel that loads four bytes at a time.** Between one byte and sixteen: below
# is `hist2` with the counting loop still reading one byte a load. Make it read x as 4-byte words
# (`words[i]` holds bytes `4i` to `4i + 3`, the lowest first), count the four keys of each, and
# count the bytes after the last whole word one at a time. The check runs it on N from 1 to 5001
# (1, 3, no multiples of 4 but one), one to four blocks of 32 to 256 threads, every kind of bytes,
# and holds it to a target read from the trace: **every byte of x loaded once, all but the last
# N % 4 by 4-byte loads**.

# %%
mine = r"""
extern "C" __global__ void hist_vec4(const unsigned char* x, unsigned int* hist, long long n) {
    __shared__ unsigned int temp[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) temp[b] = 0;
    __syncthreads();
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)blockDim.x * gridDim.x;
    const unsigned int* words = (const unsigned int*)x;  // x starts on a 16-byte boundary
    // FILL ME IN (about 8 lines): count every byte of x into temp, four bytes a load
    for (long long i = first; i < n; i += stride) atomicAdd(&temp[x[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (temp[b]) atomicAdd(&hist[b], temp[b]);
}"""
histogram.exercises.vec4.check(mine)

# %% [markdown]
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
# conflicts that cost. For this shared atomic, then, an `atomicAdd` of 1 into a 32-bit word, lanes
# on one word are nearly free and lanes on one bank are not (the SASS table below names the
# instruction that combines them; it is that instruction's doing, not shared memory's); in global
# memory (the section after kernel 1) lanes on one word are what costs.
#
# **Exercise: predict lanes and banks.** One warp of `hist2` counts 32 bytes, lane `l` holding the
# byte given by each pattern below. For each, predict how many lanes hit the busiest bin and how
# many ways the shared-memory atomic's worst bank conflict has (bin `b` is word `b`, in bank
# `b % 32`; lanes on the same word are not a conflict). Replace each `None`; the check traces the
# warp and names the pattern and the column that are off.

# %%
my_guess = {  # (lanes on the busiest bin, bank ways)
    "l": (None, None),
    "l % 16": (None, None),
    "l % 4": (None, None),
    "8 * l": (None, None),
    "32 * (l % 8)": (None, None),
}
histogram.exercises.patterns.check(my_guess)

# %% [markdown]
# ## Kernel 4: warp-aggregated atomics
#
# `hist1_agg` made the lanes holding one byte agree before a global atomic, where 32 lanes on one
# word cost the most. Kernel 4 tries the same on `hist3_vec`'s shared atomics, with the same
# `add_aggregated`: one atomic per distinct byte of a warp instruction.
#
# **What the compiler makes of an atomic.** Before running it, read the machine code. The SASS
# (the GPU's instructions) of every kernel of `histogram.cu`, compiled for sm_90 (H100, H200) and
# read with CUDA's `cuobjdump -sass`: how many of each instruction of the counting and the
# agreement it holds (a static count: an unrolled loop repeats its instruction):

# %% tags=["nbval-ignore-output"]
histogram.sass_table()

# %% [markdown]
# `REDG.E.ADD` is a global atomic add whose result nobody reads, sent to L2: the count of `hist1`
# and `hist1_agg`, and the merge of every other kernel. A shared `atomicAdd(&temp[b], 1u)` compiles to
# `ATOMS.POPC.INC.32`: one instruction that, for each address, counts the lanes of the warp on it
# (a population count of their mask) and adds that number once. This instruction already
# aggregates lanes on one word, which is why 32 lanes on one bin cost `hist3_vec` no more (other
# shared atomics need not: a 64-bit add is a compare-and-swap loop, near the end);
# what costs there is lanes on *different* words of one bank. `hist4_warp_agg` replaces that
# instruction with `MATCH.ANY` (find the lanes holding the same byte), `POPC` (count them) and
# `ATOMS.ADD` (the lowest lane adds the count): software aggregation in front of an instruction that
# already aggregates, and no fewer bank conflicts. Expect it to be slower than `hist3_vec` on every
# kind of data. (`hist1_agg`'s one `MATCH.ANY` pays where the table after the contention pictures
# measured it: global atomics on one word queue in L2.)

# %%
source.show("histogram.cu", "add_aggregated", "hist4_warp_agg")

# %% [markdown]
# Every lane of the warp must call `__match_any_sync` with the full mask, so the loop runs the same
# number of trips in every lane and lanes past the end pass `valid = false` (the kernel's helper
# `for_each_key_warp` does that).

# %%
print("hist4_warp_agg matches NumPy:", (histogram.run("hist4_warp_agg", x) == want).all())

# %% [markdown]
# The picture of `hist1`'s lanes, now of `hist4_warp_agg`'s first shared atomic in each warp (each
# lane's byte is the first of its 16-byte vector): a lane drawn "–" made no atomic, because a lower
# lane of its group added for it:

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
histogram.launch("hist5_lanes", x)

# %%
print("hist5_lanes matches NumPy:", (histogram.run("hist5_lanes", x) == want).all())

# %% [markdown]
# **How many copies?** Between one copy per block (`hist3_vec`) and one per lane (`hist5_lanes`),
# the tuning's template `hist5_copies<C>` gives lane `l` copy `l % C`. From traces of one block of
# 256 on 4096 bytes: shared memory, blocks per SM, and the worst contention of the counting atomic:

# %%
histogram.copies_table()

# %% [markdown]
# All-equal bytes put 32 / C lanes on one word. On uniform bytes the mean conflict hardly moves
# from C = 1 to C = 4 and drops only from C = 8 on: bin `b` of copy `c` is word `b·C + c`, in bank
# `(b·C + c) mod 32`, so more copies move bins out of a bank as often as into it until the copy
# number alone picks the bank (C = 32: lane `l` always in bank `l`). Only 32 copies leave exactly
# one lane per word and per bank on any data. The H200 sweep (`docs/tuning/nvidia-h200-2026-11-24.log`,
# 2^28 bytes, blocks of 1024) found the same: on uniform bytes 32 copies were the fastest, and
# on all-equal bytes the number of copies made little difference.
#
# **Exercise: predict words and banks for C copies.** In `hist5_copies<C>` lane `l` counts bin `b`
# in copy `l % C`, word `b·C + l % C`. For one warp whose lane `l` holds the byte each case gives,
# predict the most lanes on one word and the worst bank conflict of the counting atomic. The check
# traces `hist5_copies<C>` and names the case and the column that are off.

# %%
my_guess = {  # (lanes on one word (most), bank ways (worst))
    "C=1, byte 4*l": (None, None),
    "C=8, byte 4*l": (None, None),
    "C=32, byte 4*l": (None, None),
    "C=2, byte l": (None, None),
    "C=4, byte l % 2": (None, None),
}
histogram.exercises.copies_banks.check(my_guess)

# %% [markdown]
# **Exercise: fix a sub-histogram per warp.** A middle road between `hist2` and `hist5_lanes`: a copy of
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
# **What each kind of data costs, counted.** Every story version, and `hist6_runs` (below), on
# every kind of data (4096 bytes, blocks of 256): atomic warp instructions on the counting buffer,
# the busiest bin's lanes and the distinct bins per instruction, the mean bank conflict of the
# shared atomics, and every atomic performed (the merges included):

# %%
histogram.contention_table()

# %% [markdown]
# Read it by column. "Lanes on one word" and "distinct words" count words of the counting buffer:
# for `hist5_lanes` a bin has 32 words, one per lane, so all-equal bytes show 1 lane on a word and
# 32 distinct words, though every lane adds to bin 7. `hist1` and `hist2` make the same 128 warp
# instructions with the same contention; `hist2`'s atomics are in shared memory, where uniform
# bytes conflict about 3-way. `hist1_agg` and `hist4_warp_agg` leave 1 lane per word and cut the
# all-equal atomics about 32-fold, but on uniform bytes they make nearly as many as `hist1` and
# `hist3_vec`, and `hist4_warp_agg` leaves the bank conflicts as they were. `hist5_lanes` shows 1
# lane on a word and 1-way on every kind of data. Skewed and real bytes fall between uniform and
# all-equal.
#
# Which of these counts turn into time? The GPU table at the end: `hist3_vec`'s time follows its
# bank conflicts, all-equal (1-way) fastest and uniform (about 3-way) slowest. `hist4_warp_agg` is
# the slowest of the 16-byte-load kernels (`hist3_vec`, `hist5_lanes`, `hist6_runs`) on every kind
# of data. It has `hist3_vec`'s loads and bank conflicts (the rows above), and the same-word lanes
# it removes were already combined by `ATOMS.POPC.INC.32` (the SASS table), so it saves nothing on
# any data; what it adds is the agreement. Its time over `hist3_vec`'s grows with the distinct
# words a warp instruction holds (the "distinct words" column): least on all-equal bytes
# (0.227 ms<!-- from gpu_table: all-equal ms @ version=hist4_warp_agg --> against
# 0.0904 ms<!-- from gpu_table: all-equal ms @ version=hist3_vec -->), then skewed, real, and most
# on uniform bytes (2.06 ms<!-- from gpu_table: uniform ms @ version=hist4_warp_agg --> against
# 0.121 ms<!-- from gpu_table: uniform ms @ version=hist3_vec -->). The agreement is cheap where a
# warp holds one value and dearest where there is nothing to combine. Of its parts, the match is
# the likely cost: `hist6_runs` below makes most of its shared atomics with the same `ATOMS.ADD` and
# counts uniform bytes in 0.154 ms<!-- from gpu_table: uniform ms @ version=hist6_runs -->
# (`scripts/gpu_facts_histogram.py`, section 6, times `__match_any_sync` alone against 1 to 32
# distinct keys a warp). `hist1_agg`'s same agreement pays on all-equal bytes, where global atomics
# on one word queue in L2. Fewer atomics in a trace is not a faster kernel; which atomics the
# hardware must carry out one after another, and where, is.
#
# `hist6_runs` (the last rows; reachable by name, not a listed version) takes another road to
# fewer atomics: each thread walks its 16 bytes in registers, keeping the current run of equal
# bytes and its length, and adds the length once when the byte changes. On all-equal bytes that
# is one atomic per 16 bytes (16 times fewer, the table's last rows), on uniform bytes a run is
# almost always one byte long. In the SASS most of its shared atomics become `ATOMS.ADD` of a run
# length instead of `ATOMS.POPC.INC.32`, and it pays a compare per byte. The GPU table times it:
# slower than `hist5_lanes` on every kind of data, by little on all-equal bytes, since
# `hist5_lanes`' conflict-free atomics were not its limit. Its code, on `hist5_lanes`' 32 copies:

# %%
source.show("histogram.cu", "count_runs", "hist6_runs")

# %% [markdown]
# ## More bins than per-lane copies can hold
#
# 256 bins are 1 KiB. A histogram of 12-bit pixels, or of colours quantised to 16 levels per
# channel, has 4096 bins: 16 KiB for one copy, and 512 KiB for `hist5`'s 32 copies, more than an
# SM has:

# %%
histogram.shared_table()

# %% [markdown]
# One copy of 4096 bins still fits, so `hist_wide` (reachable as `histogram.wide`) keeps one copy
# per block, in *dynamic* shared memory sized at launch (`4 * bins` bytes), and tries warp
# aggregation (`add_aggregated`) against all-equal keys; the timing below sets it beside the same
# kernel without it. The launch, for a million 16-bit keys:

# %%
keys = histogram.wide_keys(n, "real")
histogram.wide_launch(keys)

# %%
print("hist_wide matches NumPy:", (histogram.wide(keys) == histogram.wide_reference(keys)).all())

# %% [markdown]
# From the traces (2^14 keys, blocks of 256): warp aggregation leaves one lane per word, but the
# banks still conflict on uniform keys, and the merge is now up to 4096 global atomics per block:

# %%
histogram.wide_table()

# %% [markdown]
# With 2^14 keys in 8 blocks the merge costs almost as many global atomics as there are keys;
# with millions of keys per block it is small. Timed on 2^27 keys (on a GPU), beside
# `hist_wide_plain`: the same kernel and launch with a plain shared `atomicAdd` per key, no match:

# %% tags=["nbval-ignore-output"]
histogram.wide_timing()

# %% [markdown]
# Read the rows: all-equal keys are `hist_wide`'s fastest, uniform keys its slowest. The trace
# above names three candidates for its uniform time: the `__match_any_sync` per key, bank
# conflicts of about 3.5 ways, and a merge of up to 4096 global atomics per block. The plain
# column takes the agreement away (the match, and the `ATOMS.ADD` of a group's count, which
# becomes one `ATOMS.POPC.INC.32` per key) and keeps the other two: compare the two time columns
# row by row. On this H100 `scripts/gpu_facts_histogram.py` also timed the loads and the merge
# alone (`hist_wide_load`): all but a few per cent of the plain kernel's uniform time. So the
# agreement is the cost, and the bank conflicts and the merge hardly show; the difference between
# the columns is largest on uniform keys, where a warp holds the most distinct keys, and smallest
# on all-equal ones, as for `hist4_warp_agg`. As for 256 bins, agreement in front of the +1
# shared atomic does not pay: `hist_wide_plain`'s shared atomic is
# the same `ATOMS.POPC.INC.32` (the SASS table above), which combines same-word lanes itself, and
# the plain column is the one to read against `cupy.bincount`. When shared memory runs out,
# privatisation per lane is gone, and what is left is a choice between costs.
#
# **Exercise: write a histogram of `bins` bins.** `hist2` with its 256 bins fixed at compile time
# becomes a kernel for any number of bins up to what shared memory holds: the bins in *dynamic*
# shared memory (`extern __shared__`, sized by the launch's `shared_mem=4 * bins`), keys of 16
# bits, and keys at or past `bins` not counted. The stub counts straight into `hist` and never
# checks a key. The check runs it on 1 to 5003 keys, 7 to 4096 bins, one to four blocks of 32 to
# 256 threads, uniform, all-equal and real keys with a fifth of them past the last bin, and holds
# it to a target read from the trace: **each block adds a bin to `hist` with one global atomic at
# most**.

# %%
mine = r"""
extern "C" __global__ void hist_bins(const unsigned short* x, unsigned int* hist, long long n, int bins) {
    extern __shared__ unsigned int counts[];  // bins words, sized at launch: shared_mem = 4 * bins
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)blockDim.x * gridDim.x;
    // FILL ME IN (about 10 lines): zero the block's bins, count the keys below `bins` into them,
    // then add them to hist
    for (long long i = first; i < n; i += stride) atomicAdd(&hist[x[i]], 1u);
}"""
histogram.exercises.wide_bins.check(mine)

# %% [markdown]
# **Exercise: measure, then choose a grid for 9 600 bins.** `hist_wide` keeps one copy of its bins per
# block in dynamic shared memory, 4 bytes a bin. Choose its number of blocks for **9 600 bins**
# and blocks of **256** threads: one wave, every SM holding as many blocks as it can, none waiting
# for a second wave. On a GPU the check times `hist_wide` on 2^28 bytes of keys with your grid
# beside one wave, two waves, a wave counted by threads alone and one block per SM, and passes
# within 10 % of the fastest; without one it checks the launch's arithmetic against this device.
# `course.device().describe()` lists what one SM holds: its threads, its block slots and its
# shared memory, of which the driver keeps 1 KiB for each resident block ("shared memory
# reserved per block") besides what the block asks for. Replace `None` with your number of blocks.

# %%
histogram.exercises.grid.check(None)

# %% [markdown]
# ## Try it
#
# Pick a version, a block size, N and the kind of data. The panel runs the kernel on this
# machine's backend, compares the counts with NumPy's, shows what the checker finds, traces the
# first 16 × block bytes of block 0 and draws their atomics, and lists numbers read from that
# trace:
#
# - **counting atomics** on `hist` (global) or `temp` (shared) made by block 0, and the **atomic
#   warp instructions** that made them;
# - **lanes on one bin: most / mean**: the busiest bin's lanes per warp instruction;
# - for global atomics only (`hist1`, `hist1_agg`), **same-word rounds**: the sum of those, the
#   updates of one word that L2 carries out one after another. Shared memory has no such rounds
#   (`ATOMS.POPC.INC.32` combines same-word lanes), and its picture says so;
# - **bank conflict of the atomics: worst / mean** (shared memory only: what costs there), and the
#   **global atomics of the merge**;
# - **bytes per warp load**: 32 for one byte a lane, 512 for 16;
# - the **grid** and the most **elements per thread**, from the launch; on a GPU, the time; and
#   **run on**, the machine that ran the kernel. The trace and its counts are always the
#   emulator's. The panel below was recorded where this notebook was last executed; if it says
#   "no time to show", that was the emulator, not the GPU of the tables around it.
#
# Try `hist1` against `hist1_agg` on all-equal and on uniform bytes (the lanes that agree make one
# atomic where 32 queued), `hist2_article` at block 128 on uniform and on all-equal bytes, or
# `hist3_vec` against `hist5_lanes` on uniform bytes.

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
# Read it row by row, with the launch column. `hist5_lanes` stays close to the copy on every kind
# of data, tens of times faster than `cupy.bincount`. `hist3_vec` runs from the copy's speed on
# all-equal bytes to about three quarters of it on uniform bytes. It can pass 100 % by a little:
# that is within the spread between runs (the same kernel on the same bytes moves by several per
# cent from one table of this notebook to another), so read 100 % as "at the copy's speed", not
# as beating it. `hist2` takes the same time whatever
# the data: one byte per load leaves it short of bytes in flight, and that hides every other cost.
# `hist2_article` runs the same counting as `hist2` many times slower: its launch (blocks = SMs of
# 256) is the difference, not its code (the grid table above runs it with a full wave at `hist2`'s
# speed). `hist1` and `hist1_article` are the slowest on every kind of data, and all-equal bytes
# slow them most, a few times their uniform time (one word, one line in L2; how many times
# depends on where the uniform run's bins landed, as the section after the contention pictures
# showed). `hist1_agg`,
# whose lanes agree, cuts `hist1`'s all-equal time some thirty-fold, its skewed and real times
# about two-fold, and its uniform time by little. Agreement pays where many lanes queue
# on one global word and gains little where they do not; in front of the +1 shared atomic
# (`hist4_warp_agg`) it costs everywhere.
#
# The library to call outside the course is CUB's `DeviceHistogram`. The row
# `cub::DeviceHistogram::HistogramEven` is CUB itself, called as a CUDA C++ programmer calls it:
# 256 bins of width 1 into 32-bit counters, built with nvcc for this GPU (the launch column says
# which build ran: without nvcc the benchmark falls back to CuPy's precompiled CUB and its 64-bit
# counters). Like `hist3_vec` it privatises per block in shared memory, with tuned loads; unlike the
# course's kernels it takes any number of bins, any key type, ranges and several channels. Compare
# its row with `hist5_lanes` and `hist3_vec` on each kind of data: the difference is what a general
# kernel costs against kernels written for 256 bins of bytes. On this H100 CUB takes about one and
# a half times the course's best time on uniform bytes and about a tenth more than it on the other
# three kinds: not an order of magnitude. (On an H200, `scripts/gpu_facts_cub.py` put the course's
# best ahead of this build by 1.2 to 1.9 times from 2^22 to 2^28 bytes, most on uniform bytes at
# 2^28: `docs/benchmarks/cub-histogram-h200.md`.)
#
# The counter width matters more than the generality. `cupy.bincount` returns 64-bit counts, and
# when CuPy's CUB accelerator is on (`CUPY_ACCELERATORS=cub`, CuPy 14's default) it makes the same
# `HistogramEven` call into 64-bit counters, so CUB's private copies in shared memory are 64-bit
# too. sm_90 has no one-instruction shared add for those: CUB's machine code updates them with a
# compare-and-swap loop (`ATOMS.CAST.SPIN.64`, retried while other lanes change the word) where
# the 32-bit build uses the `ATOMS.POPC.INC.32` of the course's kernels.
# `scripts/gpu_facts_cub.py` prints both builds' shared atomics and times CUB three ways (CuPy's,
# nvcc with 32-bit and with 64-bit counters): on the H200 both 64-bit builds took the same time,
# 3 to 22 times the 32-bit build's, most where many lanes collide (all-equal bytes): the counters,
# not the way CuPy built CUB, make the difference. With 64-bit counters, lanes on one shared word
# are retried one after another instead of combined. (The 64-bit build is not only another
# counter: CCCL tunes its histogram for sm_90 with 4-byte counters only, so 64-bit counters also get
# its generic policy; the two effects are not separated here. In the GPU table above, `cupy.bincount`,
# 64-bit too, is slowest on skewed bytes.) Same-word lanes come free with the 32-bit +1
# instruction, not with every shared atomic: counting in 64 bits loses it, and an add of a
# per-lane value (summing weights: `ATOMS.ADD`) is not timed here with lanes on one word
# (`scripts/gpu_facts_histogram.py`, section 6, times both against 1 to 32 keys a warp).
#
# On this H100, `scripts/gpu_facts_histogram.py` timed CuPy's other CUB route on 2^28 bytes,
# `cupy.histogram(x, 256, (0, 256))`: CUB's `HistogramRange` (bin edges as doubles) into 64-bit
# counters, without `bincount`'s checks, at about 1.1 ms<!-- given: reference --> on uniform and
# 1.7 ms<!-- given: reference --> on all-equal bytes (`docs/notes/histogram-gpu-facts.md`): some 8
# and 17 times the 32-bit row above. In the same run `cupy.bincount` took about
# 3.0 ms<!-- given: reference --> and 3.6 ms<!-- given: reference -->. Before its CUB call, in
# CuPy's source, `cupy.bincount` checks `(x < 0).any()` and takes `int(cupy.max(x))`: two more
# passes over the input, each ending in a wait for the host. Those checks (and the other CUB
# entry) account for the some 1.9 ms<!-- given: reference --> between the two calls on both kinds of data,
# two thirds of `cupy.bincount`'s time on uniform bytes; the 64-bit counters are the rest of its
# distance from the 32-bit row. So from Python, `cupy.histogram` with an explicit range was the
# faster built-in here, about 2.8 times `cupy.bincount` on uniform bytes. The same times as bars
# (log scale):

# %% tags=["nbval-ignore-output"]
fig, ax = plt.subplots(figsize=(12, 4))
histogram.plot_times(ax, table)

# %% [markdown]
# Each group is a kernel, each colour a kind of data: the bars of `hist1` and `hist4_warp_agg`
# change with the data, those of `hist2` and `hist5_lanes` do not.
#
# **Against N.** `hist2`, `hist3_vec` and `hist5_lanes` on uniform and all-equal bytes, beside
# `cupy.bincount`, CUB's `HistogramEven` and the copy, from 2^16 to 2^28 bytes:

# %% tags=["nbval-ignore-output"]
records = histogram.speed_against_n()
fig, ax = plt.subplots(figsize=(9, 4.5))
histogram.plot_speed(ax, records)

# %% [markdown]
# Each colour is a kernel, each line style and marker a kind of data (solid with dots: uniform;
# dotted with open squares: all-equal), so where a kernel's two lines coincide a dot sits inside
# a square. Below about 2^20 bytes the course's kernels, CUB and the copy take a few microseconds,
# the time of a launch; these points say nothing about the kernels. From 2^26 on `hist5_lanes` follows the copy on both
# kinds of data, `hist3_vec` only on all-equal bytes, and `hist2` stays far below, short of bytes
# in flight. Follow CUB's lines against `hist5_lanes` and `hist3_vec` across N, and
# `cupy.bincount`'s below CUB's: the table at 2^28 is one slice of this picture. The full sweep and
# the course's goals, measured on an H200, are in `docs/benchmarks/nvidia-h200.md`.

# %% [markdown]
# ## Summary
#
# - A histogram's threads collide on its bins; `atomicAdd` makes the collisions correct, and
#   **contention** decides their cost: the trace shows which lanes of a warp meet on one word (2
#   on uniform bytes, 32 on all-equal ones) and which meet in one shared-memory bank.
# - **Where the atomic is carried out decides what contention costs.** Global atomics are done in
#   L2, the updates of each line one after another: 256 bins are eight 128-byte lines, so a global histogram queues at
#   eight lines on uniform bytes and at one word on all-equal ones. Shared atomics are done in the
#   SM: for a shared `atomicAdd` of 1 into a 32-bit word, the course's counting, lanes on one word
#   are combined and nearly free (`ATOMS.POPC.INC.32` in the SASS), lanes on different words of one
#   bank are what costs. That is the instruction's doing: 64-bit counters are updated by a
#   compare-and-swap loop, and CUB's 64-bit builds are several times slower than its 32-bit one.
# - So **warp aggregation** (lanes that agree, one atomic per distinct key) pays where contention
#   costs: on `hist1`'s global atomics with equal bytes. In front of the +1 shared atomic there is
#   nothing to save, since the instruction itself combines same-word lanes, so the agreement
#   (`hist4_warp_agg`, `hist_wide`) is only a cost, and one that grows with the distinct keys a
#   warp holds: least on all-equal bytes, most on uniform ones.
# - **Privatisation** moves the atomics where they are cheap: a histogram per block in shared
#   memory (the article's second kernel), then a copy per lane laid out so that no two lanes of a
#   warp share a word or a bank, whatever the data.
# - Then the loads: the article's grid of one block per SM, one byte per thread at a time, keeps
#   about 3 % of the bytes in flight that Little's law asks for on this H100; a full wave and 16-byte loads
#   take the histogram to the copy's speed on all-equal bytes and to about three quarters of it on
#   uniform ones, and the per-lane copies take it to the copy on every kind of data, tens of times
#   `cupy.bincount`. When the bins are too
#   many for per-lane copies (4096 bins: 16 KiB a copy, 512 KiB for 32), a block keeps one copy in
#   shared memory, and a plain shared atomic beats one with agreement.
# - **Outside the course, call CUB's `DeviceHistogram::HistogramEven` with 32-bit counters**: a
#   general kernel, for any bins and key types, behind the course's 256-bin kernels by less than
#   two times (about one and a half at most on this H100, up to 1.9 on an H200). The counter width
#   matters more than generality: `cupy.bincount` calls the same CUB with 64-bit counters, which
#   CUB's private shared-memory copies update with a compare-and-swap loop, several times slower
#   (3 to 22 times on an H200; `cupy.histogram`'s 64-bit call 8 and 17 times on this H100 at 2^28
#   bytes), and `cupy.bincount` adds two checks of its own, each a pass and a wait for the host, about
#   two thirds of its time on uniform bytes here. From Python, `cupy.histogram` with an explicit
#   range skips them.
# - The article's code clears one bin of 256 with `cudaMemset(d_hist, 0, sizeof(int))`, indexes
#   with `int`, assumes 256 threads per block (128 drop half the bins, 512 write past the shared
#   array), launches one block per SM where its text says two, draws bytes that almost never hit
#   bin 255, and times its 100 MiB host-to-device copy with its kernel (on this H100 the copy is
#   most of that span; on the article's GPU, unknown, the split cannot be told).

# %%
course.my_progress("histogram")

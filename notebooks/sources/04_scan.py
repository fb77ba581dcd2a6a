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
# # 4 · Scan: prefix sums, from one block to the speed of a copy
#
# A **scan** (prefix sum) turns x into y with y[i] = x[0] + x[1] + … + x[i]. It looks sequential:
# every output depends on all the inputs before it. Yet it is one of the most used parallel
# building blocks: stream compaction (where does each kept element go?), radix sort, allocating
# space for variable-sized outputs, and any running total or running maximum.
#
# This notebook follows the blog post *CUDA prefix sum 一步一步优化* ("CUDA prefix sum, optimised
# step by step", 2015), whose kernels and names come from Kirk and Hwu's textbook *Programming
# Massively Parallel Processors*: a naive scan with one thread per output, **Kogge-Stone** (few
# steps, much work) and **Brent-Kung** (a tree: twice the steps, little work), each in one block.
# Every kernel the article prints is shown, run, checked against NumPy and drawn from a trace of
# what its threads did; where its code is wrong (it has a typo, a barrier only some threads reach,
# a result it never stores, a tree one level short and a write past its shared array), the
# notebook runs it, shows the bug and fixes it.
#
# Then it goes past the article, which stops at one block of at most 2048 elements: a double
# buffer, the **Blelloch** scan of GPU Gems 3 and its bank conflicts, **scan-then-propagate** for
# any N (PMPP's coarsened three-phase scan inside each tile, with a warp's shuffles for the
# middle phase), and a **single pass with decoupled look-back**, the algorithm of CUB's
# `DeviceScan`, that scans 2^28 floats at nearly the speed of a plain copy. Along the way, eight
# exercises: predict a count, write a kernel, choose a launch. Every cell runs without a GPU, on
# the course's emulator; on a GPU the timing cells measure, on the emulator they say they cannot.

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
from course import scan, source

course.notebook()

# %% [markdown]
# ## The problem, and the answer to check against
#
# The article starts with the two kinds of scan. The **inclusive** scan's y[i] includes x[i]; the
# **exclusive** scan's stops before it: y[0] is the operator's identity (0 for +) and
# y[i] = x[0] + … + x[i-1]. The operator need not be +: any *associative* operator with an identity
# works, the maximum as well as the sum, because a scan only ever combines an earlier partial
# result with a later one, in order. NumPy's answers:

# %%
x = np.array([3, 1, 7, 0, 4, 1, 6, 3], np.int32)
print("x          ", x)
print("inclusive  ", scan.reference(x))
print("exclusive  ", scan.exclusive(x))
print("running max", scan.reference_op(x, op="max"))

# %% [markdown]
# The two are one shift apart, as the article says: the exclusive scan is the inclusive one with
# the identity put in front and the last element dropped. The other way needs x:
# inclusive[i] = exclusive[i] + x[i].
#
# **Why parallel?** The article argues that a serial loop makes the last element wait
# (n − 1)(n − 2)/2 additions. It does not: `y[i] = y[i-1] + x[i]` does N − 1 additions in all, one
# per element, and the CPU loop is as efficient as a scan can be. The trouble is that each addition
# needs the one before it: N − 1 *steps* one after another, where a GPU wants thousands of
# independent additions at once. The whole notebook is about that trade: **steps** (the longest
# chain of additions that must happen one after another) against **work** (the additions in all).
#
# Every kernel here computes the inclusive scan in x's dtype (int32 wraps modulo 2^32 as the GPU's
# add does; float32 partial sums are compared with NumPy's within 1e-5 of cumsum(|x|), since the
# kernels add in a different order).
#
# ## Version 1: one thread per output
#
# The article's first idea: give each output its own thread, and let thread i add x[0..i].

# %%
source.show("scan.cu", "naive_scan")

# %% [markdown]
# **The launch.** A kernel runs as a *grid* of *blocks* of threads; here a thread per output, so
# ⌈N / block⌉ blocks. This is the call `scan.run` makes for you, written out once (`course.asarray`
# puts an array on the device, the GPU's memory or the emulator's):

# %%
n, block = 1000, 128
grid = (n + block - 1) // block
x = np.arange(1, n + 1, dtype=np.float32)
k = scan.kernel("naive", np.float32, block)
y = course.zeros(n, np.float32)
k((grid,), (block,), (course.asarray(x), y, np.int32(n)))
print(f"{grid} blocks of {block}: matches NumPy:", np.array_equal(course.asnumpy(y), scan.reference(x)))

# %% [markdown]
# It is right. What the article holds against it is how the work is shared out. From the trace of
# block 0 (two warps of 32 threads), how many elements of x each thread read (its loop's length):

# %%
fig, ax = plt.subplots(figsize=(11, 3.2))
scan.draw_naive_reads(ax)

# %% [markdown]
# Thread i reads i + 1 elements, so the last thread decides the time (N − 1 additions in a row, as
# many steps as the serial loop), and the threads together read N(N+1)/2 elements. Both grow as the
# article says, O(N) steps and O(N²) reads; the table of steps against work below counts them for N
# up to 1024. Two things the staircase does not show. A warp runs its lanes together: lane 0 leaves
# its loop after one pass and idles while lane 31 runs 31 more, so the warp takes as long as its
# slowest lane. And in pass j every lane still looping reads the same x[j]: one address for the
# whole warp, fetched once and handed to every lane (a broadcast). So the O(N²) reads are not
# O(N²) traffic from memory: x[j] travels once per warp, and the naive scan is slow because of its
# N − 1 steps, not its bytes.
#
# ## Version 2: Kogge-Stone, as the article prints it
#
# The article's second algorithm puts a block's elements in shared memory (the on-chip memory the
# threads of one block share) and adds in **steps**: in step 1 every element adds its left
# neighbour, in step 2 the element two to its left, then four, and so on. After step k, element i
# holds the sum of the 2^k inputs ending at i (or of all of them, if there are fewer). So
# ⌈log2 N⌉ steps finish the scan, with nearly N additions in each: about N log2 N in all. The
# article's kernel (its name for it, `work_inefficient_scan_kernel`, says what that costs):

# %%
source.show("scan.cu", "kogge_stone_scan_article")

# %% [markdown]
# What the shared array holds after each step, replayed from the trace of the fixed kernel
# (further down) on 16 ones, so that each number counts the inputs a partial sum covers:

# %%
scan.held_after_steps("kogge_stone", 16)

# %% [markdown]
# Step k doubles how far back each partial sum reaches: 1, 2, 4, 8, then the whole prefix. (The
# block has 32 threads; step 5, offset 16, changes only elements 16 to 31, beyond these columns.)
#
# **Four things are wrong with the printed kernel.** First, it does not compile: the article writes
# `_shared__` for `__shared__` (in both its kernels). Put back into our copy, NVRTC says:

# %%
print(scan.typo_error())

# %% [markdown]
# With the typo fixed (and `float` made `elem_t`), the course's checker runs it on the emulator
# and reads the whole trace. The loop runs while `stride <= threadIdx.x`: thread 0 never enters it,
# thread 1 runs it once, thread 63 six times, and every pass has two `__syncthreads()`. A barrier
# waits until *every* thread of the block reaches it; threads that leave the loop early never do.
# That is undefined behaviour: the block may hang, or (on recent GPUs, which count exited threads)
# let the others through at the wrong moment.

# %%
scan.article_findings("kogge_stone_article")

# %% [markdown]
# Second, it never writes Y: the scan stays in shared memory, which disappears with the block.
# The output, zeroed before the launch, on the input 1, 2, …, 64:

# %%
print(scan.never_writes_y())

# %% [markdown]
# Third, the article says its kernel is an *exclusive* scan ("以Exclusive为例"); it is inclusive
# (XY[i] keeps x[i]), as the fixed kernel's result shows below. And fourth, it assumes N is the
# block size, as the article says ("block_size = InputSize"): with N = 50 and a block of 64,
# threads 50–63 skip the load and then read and add elements nobody wrote (the emulator marks
# shared memory unwritten until a thread writes it, and the checker sees every such read). The
# damage stays above the end: element t only ever takes `XY[t − stride]`, so data flows to higher
# indices, and whatever elements 50–63 hold feeds only elements 50–63. Had the kernel stored Y[i]
# for i < N, outputs 0–49 would be right. So this is an uninitialised read the checker rightly
# flags, not a wrong result for the elements stored; the article's merged Brent-Kung below has the
# same kind of flaw, and the same argument holds there:

# %%
scan.article_findings("kogge_stone_article", n=50)

# %% [markdown]
# ## Kogge-Stone, fixed
#
# Every thread runs every step: the test `threadIdx.x >= stride` moves inside the loop, around the
# read and the add but not the barriers. Elements past N hold the identity, and each thread stores
# its element at the end. Each step still has two barriers: one so that the previous step's writes
# are done before this step reads, one so that every thread has read before any thread overwrites
# the element another thread still has to read.

# %%
source.show("scan.cu", "kogge_stone_scan")

# %% [markdown]
# **One block.** `BLOCK_SIZE` is a template parameter (the frame compiles `kogge_stone_scan<64>`
# and the other sizes), and the whole scan is one block: the launch is a grid of one.

# %%
n, block = 50, 64
x = (np.arange(n) % 7 - 3).astype(np.int32)  # small values whose sums are easy to check
k = scan.kernel("kogge_stone", np.int32, block)
y = course.zeros(n, np.int32)
k((1,), (block,), (course.asarray(x), y, np.int32(n)))
print("x:", x[:10], "...")
print("y:", course.asnumpy(y)[:10], "... inclusive:", np.array_equal(course.asnumpy(y), scan.reference(x)))

# %% [markdown]
# `scan.run(version, x, block=...)` makes the same launch. A block covers at most its own size, so
# a longer input is refused with the sizes each block covers:

# %%
with course.expect_error():
    scan.run("kogge_stone", np.ones(300, np.float32), block=128)

# %% [markdown]
# **The steps, from the trace.** Block 0 with 64 threads (two warps), one row per step: an arrow from
# each element a thread read to the element it wrote, coloured by warp. Under each row, threads 0–63:
# coloured if the thread added in that step, grey if it idled, a red frame round a warp with idle
# lanes.

# %%
fig, ax = plt.subplots(figsize=(12, 6.5))
scan.draw_steps(ax, "kogge_stone", 64)

# %% [markdown]
# Nearly every thread adds in every step, in both warps: 63, 62, 60, … threads. Only warp 0 has
# idle lanes (its first 2^(k-1) threads), and in step 6 it idles entirely while warp 1 adds 32
# elements from 32 places to the left, across the warp boundary. No bank conflicts: the 32 lanes
# of a warp read 32 consecutive words. A block of 256 threads (8 warps), counted from the trace:

# %%
scan.step_table("kogge_stone", 256)

# %% [markdown]
# Eight steps of 255 down to 128 threads, 1793 additions for 256 elements (a serial loop needs
# 255): the work grows as N log2 N. In each step only the warp holding the boundary has idle lanes;
# whole warps retire from step 6 on.
#
# ## Version 3: Kogge-Stone, double-buffered
#
# The second barrier of each step is there because a thread overwrites an element another thread
# has yet to read. With two shared arrays, each step reads one and writes the other, so nobody
# overwrites what someone still reads: one barrier per step, for twice the shared memory.

# %%
source.show("scan.cu", "kogge_stone_scan_double_buffer")

# %%
x = (np.arange(200) % 7 - 3).astype(np.int32)
print("matches NumPy:", np.array_equal(scan.run("kogge_stone_double_buffer", x, block=256), scan.reference(x)))

# %% [markdown]
# Counted from the traces of both, for N = 256:

# %%
scan.steps_vs_work((256,), ("kogge_stone", "kogge_stone_double_buffer"))

# %% [markdown]
# The same 8 steps and 1793 additions, and 8 barriers instead of 16 (a thread whose element does not
# change in a step still copies it to the other array: a write, not an addition).
#
# ### Exercise 1 · Write: make Kogge-Stone exclusive
#
# The notebook's exercises sit where their idea is taught. Each is checked by a call:
# `scan.exercises.<name>.check(answer)` says what is wrong (which launch, which case, which thread
# and line) and the rule to apply, never the answer; `scan.exercises.<name>.hint()` gives a hint
# when you ask, one more each time; `scan.exercises.<name>.show(mine)` draws what your kernel did,
# as the steps above are drawn. Kernels you write run on the emulator first, with the checker,
# whatever the machine: a stray access, a shuffle only part of a warp reaches or an endless loop
# ends in a verdict, never in a crashed GPU. `course.my_progress("scan")` at the end lists what
# you have done.
#
# The article calls its Kogge-Stone an exclusive scan. Make it one: each block scans its own
# `blockDim.x` elements, the first of them gets 0 (the identity) and Y[i] = X[first] + … + X[i − 1].
# The stub is the fixed inclusive kernel on `int`, with a **dynamic** shared array
# (`extern __shared__ int XY[]`): its size is not in the code but in the launch, the
# `shared_mem=` bytes each block gets. The stub as it is, launched by hand on 100 elements with
# blocks of 32 (every block scans its own 32, inclusive):

# %%
stub = scan.exercises.stub_kernel("exclusive")  # the stub below, as given
n, block = 100, 32
x = np.arange(1, n + 1, dtype=np.int32)
y = course.zeros(n, np.int32)
# shared_mem: the bytes of XY each block gets, an int per thread
stub(((n + block - 1) // block,), (block,), (course.asarray(x), y, np.int32(n)), shared_mem=block * 4)
print("block 1 starts:", course.asnumpy(y)[32:36], "(inclusive: X[32] = 33 counts itself)")

# %% [markdown]
# Your kernel gets the same launch. The check runs it on N = 1, 31 and 33 with blocks of 32; 64
# with 64; 95, 97 and 1000 with blocks of 96 (no power of two); 255 with 256; 1023 and 3000 with
# 1024, against NumPy. Its target, read from the trace: **a log-depth scan**, no thread loads more
# than 2·⌈log2 block⌉ + 3 elements (two a step, its X, and one to read back; each element counts,
# also where the compiler loads four in one instruction); a loop over the
# elements before i is a serial scan. On a GPU it then times your kernel beside `lookback` and a copy.

# %%
mine = r"""
extern "C" __global__ void kogge_stone_exclusive(const int* X, int* Y, int n) {
    extern __shared__ int XY[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    XY[threadIdx.x] = (i < n) ? X[i] : 0;                  // <- load what an exclusive scan needs
    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        __syncthreads();
        int in1 = 0;
        if (threadIdx.x >= stride) in1 = XY[threadIdx.x - stride];
        __syncthreads();
        if (threadIdx.x >= stride) XY[threadIdx.x] += in1;
    }
    if (i < n) Y[i] = XY[threadIdx.x];
}"""
scan.exercises.exclusive.check(mine)

# %% [markdown]
# ## Version 4: Brent-Kung, as the article prints it
#
# The article then borrows the reduction tree from its earlier post (this course's notebook 5).
# **Up-sweep** ("reduction phase"):
# in step 1 every other element adds its left neighbour, in step 2 every fourth element adds the
# element two to its left, and so on, until the last element holds the sum of all. Only the
# elements at positions 2^k − 1 hold finished prefixes now. **Down-sweep** ("reverse phase"): the
# tree's partial sums are added, from the top down, into the elements the up-sweep skipped. Each
# thread handles two elements: the block's shared array has 2 × BLOCK_SIZE of them. The article's
# two listings, verbatim, inside the fixed kernel's load and store:

# %%
source.show("scan.cu", "brent_kung_scan_phases_article")

# %% [markdown]
# The article walks through BLOCK_SIZE = 8 (16 elements), and its walkthrough is garbled. Its four
# levels ("第一层" to "第四层": threads 0 to 7, 0 to 3, 0 and 1, then 0 alone) are the full tree over
# 16 elements, at strides 1, 2, 4 and 8; but it labels them "stride = 1" to "stride = 4" and
# computes its index lists from those labels, past the 16 elements: "3, 7, 11 … 31" at stride 2,
# where the code writes 3, 7, 11, 15; "5, 11, 19 … 47" at its "stride = 3", the third level, where
# the code (stride 4) writes 7 and 15; "7, 23, 11 … 31" at its "stride = 4", the fourth level,
# thread 0 alone, which at stride 8 would write the root, element 15. Its reverse phase names
# the wrong threads and elements: at stride 4 "thread0 … element5", where thread 0 writes element
# 11 (7 + 4); at stride 1 "thread0, thread4", where threads 0 to 6 write elements 2, 4, … 14.
#
# That fourth level is the one the listing leaves out. The code's `stride < BLOCK_SIZE` stops at
# stride 4, running only the walkthrough's first three levels: a tree over
# 2 × BLOCK_SIZE elements has log2(16) = 4 levels, the last at stride 8, where the root (element
# 15) adds the lower half's sum. No down-sweep step writes the root either. So every block's last
# element is wrong. On 2 × 64 ones, with a block of 64, the elements the kernel gets wrong:

# %%
scan.wrong_last_element()

# %% [markdown]
# One element, the last: 127 holds 64, the upper half's sum alone, not 128.
#
# The article's merged kernel fixes the up-sweep's bound (`stride <= BLOCK_SIZE`) and breaks two
# other things:

# %%
source.show("scan.cu", "brent_kung_scan_article")

# %% [markdown]
# **The shared array's bounds.** `XY` has 2 × BLOCK_SIZE elements, but each thread loads one:
# elements BLOCK_SIZE to 2 × BLOCK_SIZE − 1 are never loaded, and the up-sweep adds them anyway.
# And the down-sweep checks `index < 2*BLOCK_SIZE` but writes `XY[index + stride]` (the separate
# listing checked `index + stride`): with a block of 64, thread 1 has index 127 at stride 32 and
# writes element 159 of a 128-element array. The checker names both, with the thread, the line and
# the element:

# %%
scan.article_findings("brent_kung_article")

# %% [markdown]
# On a GPU that write lands past the end of the block's shared memory: `XY` is its only shared
# array, so no other variable of the kernel is there to absorb it, and the GPU may stop the kernel
# with an illegal-address error, which poisons the CUDA context (every later launch in the process
# fails). `scan.run` refuses to launch this kernel and the article's Kogge-Stone on a GPU; on the
# emulator they stop at the first stray access or barrier.
#
# **What it would output.** The unloaded upper half does not make the stored half wrong. In both
# sweeps data only flows to higher indices: `XY[index]` takes `XY[index - stride]` in the up-sweep,
# `XY[index + stride]` takes `XY[index]` in the down-sweep. Elements BLOCK_SIZE to
# 2 × BLOCK_SIZE − 1, whatever garbage they hold, only ever feed elements at or above BLOCK_SIZE,
# and the kernel stores elements 0 to BLOCK_SIZE − 1: those are the right inclusive scan (the stray
# write aside). The real flaw is the cost: a tree over 2 × BLOCK_SIZE elements, with 2 × BLOCK_SIZE
# words of shared memory and one more level each way, to produce BLOCK_SIZE outputs. The fix below
# loads two elements per thread, so the whole tree is input.
#
# ## Brent-Kung, fixed
#
# Each thread loads (and stores) two elements, i and i + BLOCK_SIZE, with the identity past N; the
# up-sweep runs to stride BLOCK_SIZE, the root; the down-sweep checks the element it writes. The
# up-sweep's second barrier is not needed: one per step. The launch is the same, one block, which
# now covers 2 × block elements.

# %%
source.show("scan.cu", "brent_kung_scan")

# %%
x = (np.arange(100) % 7 - 3).astype(np.int32)
print(np.array_equal(scan.run("brent_kung", x, block=64), scan.reference(x)))

# %% [markdown]
# **The up-sweep and down-sweep trees, from the trace.** Block 0, 64 threads (two warps) on all
# 128 elements; each row is labelled with the kernel's `stride`:

# %%
fig, ax = plt.subplots(figsize=(12, 7.5))
scan.draw_steps(ax, "brent_kung", 128)

# %% [markdown]
# Read it from the top. The up-sweep halves the busy threads each step (64, 32, …, 1) and doubles
# the stride, up to the root: at stride 64 element 127 adds element 63, the lower half's sum. The
# down-sweep starts one level below the root (stride 32: element 95 takes 63) and goes back down,
# 1, 3, 7, … 63 threads. Both warps add only in the
# first and last steps: in between, the busy threads are warp 0's first lanes (the strip's red
# frames), and the other warp has nothing to do. And the strides bring **bank conflicts**: the
# right column counts up to 4-way. In numbers, counted from the trace:

# %%
scan.step_table("brent_kung", 128)

# %% [markdown]
# Thirteen steps (2 log2 128 − 1) against Kogge-Stone's 7 for the same 128 elements, but 247
# additions, under 2N, against Kogge-Stone's 769.
#
# ## Steps against work
#
# The article's summary, "2 × O(log N) steps and O(N) adds" against Kogge-Stone's "O(log N) steps
# and O(N log N) adds", counted from the traces of one block for N = 64, 256 and 1024 (naive: the
# last thread's chain of additions and every thread's additions; Blelloch is the next section):

# %%
work = scan.steps_vs_work()
work

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
scan.plot_steps_vs_work(a, b, work)

# %% [markdown]
# Left, the work: Kogge-Stone on the N log2 N line (9217 additions for 1024 elements), Brent-Kung
# on 2N (2036), the naive scan far above both (half a million). Right, the steps: Kogge-Stone on
# log2 N (10 at 1024), Brent-Kung close under 2 log2 N (19), the naive scan N − 1. Neither tree
# wins outright: at N = 1024 Kogge-Stone takes about half Brent-Kung's steps (10 against 19) for 4.5
# times the additions. Not half the barriers, though: Kogge-Stone's two a step make 20, as many as
# Brent-Kung's one a step across nearly twice the steps (19); only the double buffer halves them (10). Inside one
# block every thread is there anyway: Kogge-Stone's extra additions fill lanes that would idle, but
# each of its steps is a barrier every warp of the block waits at.
#
# **Inside a warp, the extra work is free.** The 32 lanes of a warp execute one instruction
# together: a step in which 16 lanes add takes the same issue slot as one in which 31 do. So across
# a warp only the steps count, and Kogge-Stone's log2 32 = 5 are the fewest (Brent-Kung's tree
# would take 9 across the same 32 lanes, most of them idle in each). Nor does a warp need a
# barrier between steps: `__shfl_up_sync` itself brings together the lanes its mask names (since
# Volta a warp's lanes may drift apart; the `_sync` makes them meet) and hands each lane another
# lane's register directly, with no shared memory in between. This is the mechanism
# the fast kernels below are built on: Kogge-Stone not in shared memory across a block, but in
# registers across a warp. Once the data outgrows a block, every addition is work the whole GPU
# must do: those kernels do nearly all of it one element after another in each thread's registers
# (work-efficient, like the serial loop), and keep the warp's Kogge-Stone for the short scan across
# threads.
#
# ### Exercise 2 · Predict, then check: steps, adds and barriers
#
# Three one-block scans at sizes the tables above never count: Kogge-Stone and its
# double-buffered form on N = 512 (a block of 512 threads), and Brent-Kung on N = 2048 (a block of
# 1024, two elements per thread). For each, predict the steps (barrier intervals in which threads
# add), the adds in all, and the `__syncthreads()` a thread passes. Replace each `None`; the check
# counts them from traces.

# %%
my_counts = {  # (steps, adds, barriers)
    "kogge_stone, N = 512": (None, None, None),
    "kogge_stone_double_buffer, N = 512": (None, None, None),
    "brent_kung, N = 2048": (None, None, None),
}
scan.exercises.work.check(my_counts)

# %% [markdown]
# ### Exercise 3 · Write: the warp scan, in registers
#
# Before you read the course's own warp scan further down, write one. Kogge-Stone across the 32
# lanes of a warp, each lane's value in a register: `__shfl_up_sync(mask, v, d)` hands lane l the
# `v` of lane l − d (lanes below d get their own back). The rule has two halves: every lane named
# in `mask` must make the call, and the lane read from must make the same call ("if the target
# thread is inactive, the retrieved value is undefined", the CUDA C++ Programming Guide). A lane
# that skips the shuffle breaks the second half even with a mask of just the lanes that make it.
# Write the scan where `mine` marks it: each warp scans its own 32 consecutive elements,
# y[i] = the sum of x over lanes 0 to its lane (inclusive). The check runs N = 1, 31, 32 and 33
# with blocks of 32, 33 with a block of 64, 100 with blocks of 96 and 1000 with blocks of 256,
# against NumPy. Its targets, read from the trace: **no shared-memory access and no barrier**,
# **one load of x per lane** (the other lanes' values come through shuffles), **one store of y
# per lane, and no atomics** (a lane that adds its value into the later lanes' y scans through
# memory, one atomic after another), **every lane a shuffle reads from makes the call** (the
# emulator hands over an idle lane's register; a GPU need not), and **at most 5 shuffles per warp** (log2 32 steps; a vote or a warp reduction such as
# `__reduce_add_sync` is a warp-wide step too, and counts). On a GPU it then times your kernel beside
# `lookback` and a copy.

# %%
mine = r"""
extern "C" __global__ void warp_scan(const int* x, int* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int lane = threadIdx.x % 32;
    int v = (i < n) ? x[i] : 0;   // past the end: the identity, so every lane of the warp takes part
    // your scan: v becomes the sum of v over lanes 0 to lane of this warp
    if (i < n) y[i] = v;
}"""
scan.exercises.warp.check(mine)

# %% [markdown]
# ## Beyond the article: Blelloch and bank conflicts
#
# GPU Gems 3 (ch. 39, Harris, Sengupta and Owens, 2007) writes the work-efficient tree as an
# **exclusive** scan: the same up-sweep, then the root is set to the identity, and each down-sweep
# step hands a node's value to its left child and (value + left child's old value) to its right
# child. After the last step every element holds the sum of everything before it. It takes one
# more step than Brent-Kung (the root's) and log2 N more additions. Our plan adds x on the device
# afterwards (`inclusive_from_exclusive`) to compare it with the others: a second launch.

# %%
source.show("scan.cu", "blelloch_block", "blelloch_scan")

# %%
x = np.array([3, 1, 7, 0, 4, 1, 6, 3], np.int32)
scan.launches("blelloch", x, block=32)

# %% [markdown]
# The exclusive scan as the Blelloch kernel leaves it, the inclusive one after the second launch,
# and the exclusive one again from it by the article's shift (`exclusive_from_inclusive`), all
# computed by kernels:

# %%
scan.conversion_table(x)

# %% [markdown]
# The kernel's exclusive row starts with the identity and stops short of x's last element (25 is
# only in the inclusive row); each conversion is one more launch that reads and writes every
# element again. The tree, from the trace, as for Brent-Kung, all 128 elements; each row is
# labelled with the kernel's own `d` (the threads that work in that step) and its `offset` (the
# distance from the element read to the element written):

# %%
fig, ax = plt.subplots(figsize=(12, 7.5))
scan.draw_steps(ax, "blelloch", 128)

# %% [markdown]
# The up-sweep is Brent-Kung's, to the root (step 7, d = 1: element 127 takes element 63). Then,
# with no barrier in between, thread 0 clears the root (the red mark): the exclusive scan's
# identity enters there and travels down. The down-sweep's crossed arrows are the swap: each busy
# thread moves the parent's value left and writes the sum right, from d = 1 (step 8, the root's two
# children, 63 and 127) to d = 64. The conflicts in the right column grow with the block: the tree's
# addresses are 2 × offset words apart, and shared memory has 32 **banks** of 4-byte words (word w
# in bank w mod 32). When k lanes of a warp touch different words of one bank, the access takes k
# passes: a k-way conflict. At offset 16 a warp's lanes are 32 words apart, all in one bank. For a
# block of 1024 threads (2048 elements), counted from traces, the total passes conflicts add and
# the worst access of four versions of the tree:

# %%
scan.bank_table(1024)

# %% [markdown]
# **Padding.** Leave one word unused after every 32 (element i lives at i + i / 32): addresses
# 2 × offset apart then drift by one bank every 32 words, and the conflicts are gone except for a
# few 2-way accesses, 2205 extra passes down to 35, for 3 % more shared memory.
# GPU Gems 3 pads every 16 words (`CONFLICT_FREE_OFFSET(n) = n >> LOG_NUM_BANKS` with 16 banks,
# the G80's) and leaves 625. Its "zero bank conflicts" variant,
# `((n) >> NUM_BANKS + (n) >> (2 * LOG_NUM_BANKS))`, is a precedence bug: `+` binds tighter than
# `>>`, so it computes n >> (NUM_BANKS + n) >> 8, which is 0 on the GPU (from n = 16 on the
# shift reaches 32, undefined in C++; PTX's `shr` clamps the count): no padding at all, every
# conflict still there. Step by step, the words each bank serves in the worst warp instruction of
# each step, without (left) and with (right) the padding:

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(13, 8))
scan.draw_bank_steps(a, "blelloch (no padding)")
scan.draw_bank_steps(b, "blelloch_padded (a word after every 32)")

# %% [markdown]
# Left, the conflicts climb with the offset: the lanes' words crowd into 16, 8, 4, 2 banks and at
# offsets 16 and 32 all 32 into one (a 32 in a single column); the down-sweep mirrors it. Right, the
# same steps spread over all 32 banks (rows of pale cells, one word each). What is left is 2-way,
# at offsets of 32 and more: there the drift of one bank per 32 words moves neighbouring lanes 2, 4,
# 8 banks apart, and two lanes meet in a bank. The padded kernel:

# %%
source.show("scan.cu", "blelloch_scan_padded")

# %% [markdown]
# Both trees on 2000 elements in a block of 1024 threads (each with its conversion launch):

# %%
x = (np.arange(2000) % 7 - 3).astype(np.int32)
print("blelloch       :", np.array_equal(scan.run("blelloch", x, block=1024), scan.reference(x)))
print("blelloch_padded:", np.array_equal(scan.run("blelloch_padded", x, block=1024), scan.reference(x)))

# %% [markdown]
# ### Exercise 4 · Predict, then check: the bank conflicts of a tree
#
# Brent-Kung's tree has the same strides as Blelloch's, and so the same conflicts. For one block of
# 256 threads on 512 elements (unpadded `brent_kung`: `XY[index]` with index = (t + 1)·2·stride − 1),
# predict the worst bank conflict of five steps: the up-sweep at strides 1, 4, 16 and 64 and the
# down-sweep at stride 16. Two things decide it: how far apart the busy lanes' words are, and how
# many lanes of a warp are busy at all. The check counts the ways from the trace (1: no conflict).

# %%
my_ways = {  # (ways,) of the step's worst warp instruction
    "up-sweep, stride 1": (None,),
    "up-sweep, stride 4": (None,),
    "up-sweep, stride 16": (None,),
    "up-sweep, stride 64": (None,),
    "down-sweep, stride 16": (None,),
}
scan.exercises.banks.check(my_ways)

# %% [markdown]
# ## Beyond one block: scan-then-propagate
#
# Every kernel so far scans what one block holds, at most 2048 elements. The article stops there.
# A scan of any N, in three kinds of launch:
#
# 1. `scan_tiles`: each block scans its own **tile** of block × 32 elements (4096 for a block of
#    128) and writes the tile's total. The tile moves between memory and registers through each
#    warp's own slice of shared memory, padded as above, so that every warp load is 512
#    contiguous bytes.
# 2. the tiles' totals are scanned the same way (again and again while there is more than one
#    tile of them);
# 3. `add_tile_prefix` adds to every element of tile t the scanned total of tiles 0 … t − 1.
#
# **Inside a tile: PMPP's coarsened three-phase scan.** The tile's scan, `scan_tile`, is what
# PMPP's chapter on scan calls the three-phase scan (its "coarsening for even more work
# efficiency"): (1) each thread scans its own 32 consecutive elements in registers, one after
# another: 31 additions, work-efficient like the serial loop; (2) the block scans the threads'
# totals, 128 of them for a block of 128; (3) each thread adds the total of the threads before it
# to its 32 elements. PMPP runs phase 2 as a Kogge-Stone or Brent-Kung scan in shared memory;
# here it is the warp's Kogge-Stone in registers, `warp_scan`, and a block scan built from it,
# `block_exclusive_scan` (exercise 3's answer is in it: try the exercise first):

# %%
source.show("scan.cu", "warp_scan", "block_exclusive_scan")

# %% [markdown]
# `warp_scan` is the fixed Kogge-Stone above with the shared array replaced by the lanes' registers:
# the same loop over offsets 1, 2, 4, 8, 16, the same test (`lane >= offset`) around the add, and no
# `__syncthreads()`, because the shuffle itself is the exchange. `block_exclusive_scan` uses shared
# memory only to pass each warp's total across warps (one word per warp), where Kogge-Stone over 128
# threads in shared memory passes 14 barriers (two a step) and moves every element through shared
# memory at each. From the trace of `scan_tiles` on one tile (a block of 64 threads, 2048 elements,
# each thread's 32 summing to 1, so that a number counts the threads a partial sum covers), warp 1's
# shuffles:

# %%
fig, ax = plt.subplots(figsize=(13, 5))
scan.draw_warp_scan(ax)

# %% [markdown]
# Five shuffles take each lane's sum from one thread's total to up to 32, doubling its reach each
# time, as Kogge-Stone's rows did in shared memory; each row of arrows is one instruction for all
# 32 lanes. The sixth shuffle moves the inclusive sums one lane up into `exc`; lane 0 gets its own
# sum back and never uses it. The last row is not a shuffle: it is what `block_exclusive_scan`
# returns once the warps' totals have been scanned, `before` (the total of the warps before this
# one: warp 0's 32 threads) combined with `exc`, and `before` alone in lane 0. So thread 32 + l
# gets the totals of threads 0 to 32 + l − 1: the exclusive scan across the block. The title's counts
# are read from the same trace: between the first shuffle and the last, no barrier and no
# shared-memory access. The tile's scan and the three launches:

# %%
source.show("scan.cu", "scan_tile", "scan_tiles", "add_tile_prefix")

# %% [markdown]
# ### Exercise 5 · Predict, then check: the tile's shuffles and barriers
#
# For `scan_tiles` with a block of 32 (one warp) and a block of 256 (eight warps), predict the
# shuffles warp 0 executes, the shuffles of the whole block (a warp's shuffle counts once), and
# the `__syncthreads()` a thread passes. The check counts them from the traces.

# %%
my_tile = {  # (shuffles by warp 0, shuffles by the whole block, __syncthreads)
    "scan_tiles, block 32": (None, None, None),
    "scan_tiles, block 256": (None, None, None),
}
scan.exercises.tile.check(my_tile)

# %% [markdown]
# **The launches change from one to the next.** For 70 000 elements and blocks of 128: 18 tiles,
# their 18 totals in one tile, then 17 tiles to add to, each call as you would write it:

# %%
scan.launches("scan_then_propagate", np.ones(70_000, np.float32), block=128)

# %%
x = (np.arange(70_000) % 17 - 8).astype(np.float32)
print("scan-then-propagate, 70000 floats, matches NumPy:", np.array_equal(scan.run("scan_then_propagate", x), scan.reference(x)))

# %% [markdown]
# It is right for any N, but it reads and writes y twice. What every launch of each version reads
# and writes in global memory, per element of x, counted from the traces of every launch at
# N = 2^14 and 2^16:

# %%
scan.bytes_moved(2**14)

# %%
scan.bytes_moved(2**16)

# %% [markdown]
# Scan-then-propagate moves 3.5 elements per element at 2^14 and 3.9 at 2^16, on its way to 4N (x
# read, y written, y read and written again); a copy of x into y moves 2N.
#
# ### Exercise 6 · Predict, then check: how far from 4N
#
# With blocks of 64 (tiles of 64 × 32 = 2048 elements, not the tables' 4096), predict the elements
# scan-then-propagate moves per element of x at N = 2100, 6200 and 20 000: 2, 4 and 10 tiles,
# the last of each only partly full. Count what each launch reads and writes, from the listings
# above. The check counts them from the traces of every launch and passes within 3 %.

# %%
my_moved = {  # (elements read and written per element of x,)
    "N = 2100": (None,),
    "N = 6200": (None,),
    "N = 20000": (None,),
}
scan.exercises.moved.check(my_moved)

# %% [markdown]
# **Bytes set a bound, not the time.** If bytes were all that counted, 4N would run at half a
# copy's speed at large N. On this H100 scan-then-propagate comes near that bound at 2^28 without
# reaching it (45.2 %<!-- from speed_table: % of copy @ N=2^28, kernel=scan_then_propagate --> of
# the copy in the GPU table below), and at 2^24
# (43.2 %<!-- from speed_table: % of copy @ N=2^24, kernel=scan_then_propagate -->), and stays
# further under it at 2^20 (35.5 %<!-- from speed_table: % of copy @ N=2^20, kernel=scan_then_propagate -->),
# where launches take microseconds. At 2^22 the plot below has it a little above the bound, just
# over half the copy's speed: there y is 16 MB and the H100's L2 cache 50 MB<!-- given: datasheet -->
# (NVIDIA's figure for the H100 SXM; no cell here prints it), so much of y is likely still in L2
# when the third launch reads it again. The bound counts the bytes that come from DRAM; an
# L2 that holds them lets a scan beat it. Which launch loses the rest at 2^28, the GPU section times
# pass by pass (`scan.pass_table()`).
# The third launch, `add_tile_prefix` (listed above), gives each 4096-element tile to one block of
# 128 threads that loops over it, 32 passes per thread, each a load, an add and a store, the loop
# unrolled 8 times (`#pragma unroll 8`). On the tuning run's H200 the whole scan went from 48.7 to
# 41.9 %<!-- given: reference --> of its copy when this launch changed from a tile fixed at
# compile time (512 threads, 8 elements each) to the tile as an argument (128 threads, 32 each),
# together with the rest of the final kernel; `docs/tuning/scan.md` records the change and says
# that it was not measured alone. Exercise 7 has you write the other way, one thread per element,
# and on a GPU times it beside `add_tile_prefix`.
# Merrill and Garland's paper names the schemes in between: scan-then-propagate (4N),
# **reduce-then-scan** (3N: a first pass only reads x to get each tile's total, a small scan of the
# totals, then a second pass reads x again and writes each tile's scan, started from its prefix)
# and the **chained scan** (2N: one pass, each tile waiting for its predecessor's prefix), which
# decoupled look-back makes fast. Moving only 2N needs **one pass**.
#
# ### Exercise 7 · Write: the propagate step, one thread per element
#
# `add_tile_prefix` is one way to add the prefixes; the other gives every element its own thread,
# as a copy does. Write `add_prefix`: y holds each tile's own inclusive scan, and
# scanned_totals[t] the sum of tiles 0 to t; add to every element of tile t ≥ 1 the sum of the tiles
# before it (tile 0 is already right). One thread per element of y past the first tile: the grid is
# ⌈(N − tile) / block⌉ blocks. The check runs tiles of 64, 96, 128 and 1024 on N from 65 (one
# element past the first tile) to 5000, blocks of 32 to 256, against NumPy. Its target, read from
# the trace: **one element of y per thread** (a load and a store), **coalesced** (no warp access
# touches more than 5 sectors of 32 bytes). On a GPU it then times yours beside `add_tile_prefix`
# and a copy of the same bytes: is the element-wise add as fast as a copy?

# %%
mine = r"""
extern "C" __global__ void add_prefix(int* y, const int* scanned_totals, int n, int tile) {
    // y holds each tile's own scan; scanned_totals[t] is the sum of tiles 0 to t.
    // FILL ME IN (about 3 lines): one thread per element of y past the first tile
}"""
scan.exercises.propagate.check(mine)

# %% [markdown]
#
# ## Beyond one block: a single pass with decoupled look-back
#
# In one pass, each tile needs the sum of every tile before it while those are still being
# scanned by other blocks. A chained scan passes that sum from tile to tile: each block waits for
# its predecessor's prefix, so the prefix crawls through the grid one tile (and one round trip to
# memory) at a time. Merrill and Garland's **decoupled look-back** (NVIDIA, 2016) breaks the chain.
# Each tile has a **status word** in global memory, and as soon as the block has scanned its tile:
#
# - it publishes its tile's total, flagged **AGGREGATE** (A): "my tile alone";
# - it **looks back** at its predecessors' words, from the nearest one down, adding their values,
#   until it meets one flagged **PREFIX** (P): "everything up to and including me". Aggregates
#   are enough to go on: a tile never waits for its predecessor's look-back, only for its
#   predecessors' tile sums, which come at once;
# - it publishes its own inclusive prefix (flag P), adds the prefix of the tiles before it to its
#   elements and stores them.
#
# The value and its flag live in one 64-bit word (the value in the high half, the flag and the
# launch's epoch in the low half), so a reader never sees a flag without its value. The words are
# read and written whole with relaxed atomic accesses at GPU scope (`load_status` and
# `store_status`: `ld.relaxed.gpu` and `st.relaxed.gpu`, no fence needed for one word), not plain
# loads: a plain load in the spin loop is a data race, and the compiler may keep its value in a
# register and spin forever. The epoch lets the next launch reuse the words without zeroing them.
# Warp 0 looks at 32 predecessors at once, one word per lane:

# %%
source.show("scan.cu", "look_back")

# %% [markdown]
# **The ticket.** A block must not wait for a block that has not started: nothing guarantees that
# a GPU starts blocks in index order, and if block 1000 spins on tile 999 while every SM is full of
# spinning blocks, tile 999's block never gets an SM, and the GPU hangs. So the tile is not
# `blockIdx.x`: each block takes a **ticket** from a counter with one atomic, and tickets follow the
# order blocks start in. Tile t's block then only ever waits for tiles 0 … t − 1, whose blocks are
# already running (and wait only for blocks that started before them): no deadlock, whatever
# order the GPU picks. The same atomic returns the epoch, and the last block to take a ticket
# starts the next epoch:

# %%
source.show("scan.cu", "take_ticket", "lookback_scan")

# %% [markdown]
# **The launch changes again:** one launch, a grid of ⌈N / 4096⌉ tiles for blocks of 128, and a
# status buffer of tiles + 1 words (word 0: the ticket counter and the epoch), zeroed once:

# %%
n, block = 70_000, 128
tiles = (n + 32 * block - 1) // (32 * block)  # a tile: 32 elements per thread
x = (np.arange(n) % 17 - 8).astype(np.float32)
k = scan.kernel("lookback", np.float32, block)
y = course.zeros(n, np.float32)
status = course.zeros(tiles + 1, np.uint64)
k((tiles,), (block,), (course.asarray(x), y, status, np.int32(n)))
print(f"{tiles} tiles, one launch; matches NumPy:", np.array_equal(course.asnumpy(y), scan.reference(x)))

# %% [markdown]
# **What the look-back does, from the trace.** Twelve tiles of 1024 elements (blocks of 32
# threads), traced on the emulator with the warp-wide window of 32 (left) and with thread 0 reading
# one predecessor at a time (`-DLOOKBACK_WINDOW=1`, right). A row per tile: when it published its
# aggregate (A) and its prefix (P), a dot for each of its loads of status words with the tiles it
# read, and the bar while it stores y. The emulator runs all twelve blocks side by side, which is
# the hard case for a look-back: every tile looks at the same moment, when only tile 0 has a prefix.

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
scan.draw_lookback(a, window=32, legend=False)
scan.draw_lookback(b, window=1)

# %% [markdown]
# Left: each tile reads all its predecessors' words in **one** load (tile 11 reads tiles 0–10),
# finds only aggregates and tile 0's prefix, adds them and is done: one round trip each. Right:
# thread 0 walks back a word at a time; tile 1 finds tile 0's prefix at once and publishes its own,
# and the prefixes spread upward while the later tiles are still walking: tile 11 reads tiles 10, 9,
# … 5 (six loads) before it meets a prefix. The emulator's steps are instructions, not time: on a
# GPU each load is a round trip to the L2 cache, a few hundred cycles (the course's model takes 200
# ns; a model figure, not measured here), so the loads are what count. Counted for 40 tiles of 2048
# elements:

# %%
scan.lookback_table()

# %% [markdown]
# With the window of 32 a look-back takes one load up to tile 32 and two from tile 33 on (a window
# covers 32 predecessors); one word at a time, up to 12 loads. On an H200 the one-thread look-back
# was clearly the slower of the two at 2^28 (the same kernel otherwise, before the last tuning
# steps; `docs/tuning/scan.md` records both).
#
# ### Exercise 8 · Count, then choose: lookback's block for N = 300 000
#
# The tuning run chose lookback's tile for 2^28 elements (`docs/tuning/scan.md`); whether that
# choice still holds for a small scan, where other costs decide, is for you to find. At N = 300 000
# (1.2 MB, a size a copy moves in a few microseconds) lookback can take a block of 32, 64, 128 or
# 256 threads, 32 elements each. For **every** block, count the two things its time rests on: the
# **tiles** it makes at this N, and the **windows** of 32 predecessors the last tile's look-back
# reads (the look-back table above). Then choose the block. At this N every tile is resident at
# once whatever the block, and two costs move in opposite directions with it. Small tiles are many:
# the last tile's look-back reads its windows one L2 round trip after another. Large tiles are
# few: with fewer tiles than SMs some SMs idle, and each busy SM has more bytes to move. How fast
# one SM moves them is not something this notebook measures: the course's model assumes each busy
# SM gets its share of the DRAM's bandwidth (the bandwidth / the SMs), and that is an assumption.
# A GPU reaches its bandwidth only with every SM pulling, but one SM with a whole tile in flight can
# pull more than its share (Little's law, further down: some 8 KB in flight per SM sustains that
# share on an H100, and a tile of 128 threads puts 16 KB in flight).
# The check first holds every block's counts (a wrong one is named by its block, with the rule);
# then it judges your block. Without a GPU it adds the model's two parts (the busiest SM's tiles,
# read and written, at its share of the bandwidth; 200 ns a window, the model's round trip) and
# passes the blocks within half a microsecond of the best, about the 10 % a GPU allows on a scan of
# a few microseconds. On a GPU it also times every block at this N, in five rounds, and passes
# yours if its median is within 10 % of the fastest, or if the model passes it: a block the model
# calls a tie can time right at the 10 % line, under it in one run and over it in the next.
# Replace each `None`.

# %%
my_choice = {  # every block: (its tiles at N, the windows its last tile reads); then your block
    32: (None, None),
    64: (None, None),
    128: (None, None),
    256: (None, None),
    "block": None,
}
scan.exercises.block.check(my_choice)

# %% [markdown]
#
# ## Any associative operator: the running maximum
#
# Nothing above depends on + except `combine` and `identity`: compiled with `-DSCAN_MAX`, every
# kernel computes the running maximum (the identity is then the lowest value of the type, −∞ for
# floats). `scan.run_op` runs the same versions with max:

# %%
x = np.array([-5, -9, -2, -7, 3, -1, 8, 2, -4, 9], np.int32)
print(scan.run_op("kogge_stone", x, op="max", block=32))
print(scan.run_op("lookback", x, op="max"), "=", scan.reference_op(x, op="max"))

# %%
x = (np.random.default_rng(4).standard_normal(30_001) * 1e3).astype(np.float32)
print("lookback, 30001 floats, max:", np.array_equal(scan.run_op("lookback", x, op="max"), scan.reference_op(x, op="max")))

# %% [markdown]
# Exactly right with max, where a float sum is only right up to rounding: max never rounds, so any
# order of combining gives the same answer. (An operator that is not associative, like the
# average of two, gives each version a different answer: the kernels regroup freely.)
#
# ## Try it
#
# Pick a version, a block size and N (slide or type it). The panel runs the version on this
# machine's backend, compares it with NumPy and says what the checker finds, traces block 0 and
# draws it (the steps or the trees of the one-block versions, the threads' reads of the naive scan,
# a warp's 16-byte load of a tile for the versions beyond one block), and lists what it read from
# the trace:
#
# - the **grid**, and the most **elements per thread**, from the launch;
# - **elements of x read by block 0**: every element once for the one-block versions, a tile for
#   the tiled ones, and for the naive scan x[0..i] by each thread i (so the block's own (B+1)B/2);
# - **steps**, **adds in shared memory**, **barriers** and the **most threads busy in a step**: the
#   steps against the work of the one-block versions;
# - the **worst bank conflict** and the **extra shared wavefronts** conflicts cost (passes beyond
#   one per access);
# - **memory instructions with idle lanes**: divergence, over the loads and stores the trace records; **global sectors per request**: how many
#   32-byte sectors a warp's access touches (16 for a 512-byte vector load, 4 for 128 bytes).
#
# Try Kogge-Stone and Brent-Kung on the same N; `blelloch` against `blelloch_padded` with a block of
# 1024; `kogge_stone_article` (the checker names its barrier); or the naive scan's reads as N grows.
# The one-block versions redraw in about a second on the emulator.

# %% tags=["nbval-ignore-output"]
scan.panel(version="lookback", n=65536, block=128)

# %% [markdown]
# ## How fast on a GPU
#
# A scan reads each element once and writes it once, with an addition in between: it is limited by
# memory bandwidth. So it is timed against a read + write copy of the same 2N elements, in the
# same run, and against CuPy's `cupy.cumsum` and CUB's `DeviceScan`; the median of 20 or more
# CUDA-event timings, inputs rotated out of the L2 cache.
#
# **The article's kernels, at the article's scale.** Each one-block version scanning N = 1024 floats
# in one launch (block 1024 for the naive scan and Kogge-Stone, 512 for the trees; Blelloch's
# conversion is a second launch):

# %% tags=["nbval-ignore-output"]
scan.one_block_table()

# %% [markdown]
# Read the µs column against the copy's first row. On this H100 the copy of 4 KB (8 KB moved) takes
# 3.52 µs<!-- from one_block_table: µs @ version=device copy -->, about what any launch costs, so
# read each kernel by what it takes above that. Kogge-Stone takes 4.38 µs<!-- from one_block_table: µs @ version=kogge_stone -->,
# 0.9 above the copy's; its
# double-buffered form 3.97 µs<!-- from one_block_table: µs @ version=kogge_stone_double_buffer -->,
# 0.5 above it, the fastest of the one-block kernels; Brent-Kung 4.61 µs<!-- from one_block_table: µs @ version=brent_kung -->,
# 1.1 above it. The double buffer's lead
# is the one difference the counts predict: half Kogge-Stone's barriers (10 against 20 at N = 1024,
# the steps-against-work table), and every barrier is a wait for every warp of the block; its steps
# and additions are Kogge-Stone's. Brent-Kung passes as many barriers as Kogge-Stone (20, across
# nearly twice the steps: 19 against 10) for under a quarter of the additions, and takes no less. Additions cannot be what
# these times are made of: Kogge-Stone's 9217 are 288 warp instructions on one SM, which issues
# four a cycle, well under 0.1 µs<!-- given: model -->; steps and barriers, each a wait for every
# warp of the block, are what the three differ in. Blelloch, with its
# second launch, takes 7.01 µs<!-- from one_block_table: µs @ version=blelloch -->: the second launch costs more than any of
# these differences. This is one run of each, medians without their spread, so differences of a few
# tenths of a µs are a reading of this run, not a ranking. `cupy.cumsum` takes 8.08 µs<!-- from one_block_table: µs @ version=cupy.cumsum -->,
# slower here than every course kernel
# but the naive one: it is a copy of x into y, then CUB's scan of y, more than one launch (see
# "What to call outside the course" below). The naive scan takes several times longer,
# 18.6 µs<!-- from one_block_table: µs @ version=naive -->: its last thread adds 1023 times in a row,
# each addition waiting for a load. And one block uses one of the GPU's SMs (`course.device()` says
# how many there are). That is why the article's kernels are where a scan starts, not where it ends.
#
# **The whole scan, against N.** The two versions that scan any N, with the copy, `cupy.cumsum`
# and CUB's `DeviceScan`, float32 from 2^16 to 2^28 (the table at three sizes, the plot at all):

# %% tags=["nbval-ignore-output"]
records = scan.speed_against_n()
scan.speed_table(records)

# %% tags=["nbval-ignore-output"]
fig, ax = plt.subplots(figsize=(9, 4.2))
scan.plot_speed(ax, records)

# %% [markdown]
# Read the big sizes first. At 2^28 the single pass is the course's fastest scan and the closest to
# the copy, 97.6 %<!-- from speed_table: % of copy @ N=2^28, kernel=lookback --> of the copy on
# this H100; scan-then-propagate stays under half of the copy at the table's three sizes
# (45.2 %<!-- from speed_table: % of copy @ N=2^28, kernel=scan_then_propagate --> of the copy at
# 2^28; not for its bytes alone: see "Bytes set a bound" above), and `cupy.cumsum`, at 2^28, is
# slower still: 33.5 %<!-- from speed_table: % of copy @ N=2^28, kernel=cupy.cumsum --> of the copy.
# In the plot scan-then-propagate comes closest to the copy at 2^22, just over half its speed,
# past the half-copy bound of its 4N bytes: there y is 16 MB, and its second pass likely finds
# much of it still in the H100's L2 cache, 50 MB<!-- given: datasheet --> on NVIDIA's datasheet
# (the bound counts DRAM bytes). Below 2^22 everything takes microseconds and the look-back's round trips show: the single
# pass falls further behind a copy that is itself far from the memory's peak
# (65.7 %<!-- from speed_table: % of copy @ N=2^20, kernel=lookback --> of the copy at 2^20).
#
# **Where the time goes, pass by pass.** Two bounds the text argues from, timed in this run at
# 2^28: each launch of scan-then-propagate alone, and beside them the whole of it and `lookback`.
# The first pass, `scan_tiles`, is the tile pipeline without a look-back: the same 2N bytes and
# the same tile work as `lookback`, so it is what `lookback` could reach if its waits cost
# nothing. The last, `add_tile_prefix`, is the propagate pass, read against a copy of the same
# bytes:

# %% tags=["nbval-ignore-output"]
scan.pass_table()

# %% [markdown]
# Read `lookback`'s row against `scan_tiles` alone: on this H100 at 2^28 the tiles scanned without
# a look-back keep pace with the copy, 99.9 %<!-- from pass_table: % of copy @ µs=714 --> of it,
# and `lookback` in the same run a few points below: the look-back's waits cost a few points
# here, where the H200 of the tuning run lost about nine (below). Then the passes of
# scan-then-propagate, each against a copy of its own bytes: the first, `scan_tiles`, is as fast
# as the copy, and the propagate pass, `add_tile_prefix`, is not: it takes about a fifth longer
# than the copy's 713 µs<!-- from pass_table: µs @ pass=read + write copy of 2N elements -->. So it
# is the simplest launch, the add, that keeps the whole from the half-copy speed its 4N bytes
# allow; the three small launches of the totals add about 1 % to the whole.
#
# **What to call outside the course.** CUB's `DeviceScan` is the production single pass: the same
# decoupled look-back (Merrill and Garland wrote both), tuned by NVIDIA for each GPU generation.
# Its rows in the table are the bar for `lookback`: the `× CUB` column says how many times faster
# than CUB each row is (above 1: faster). On this H100 `lookback` clears it at the table's three
# sizes, 1.09<!-- from speed_table: × CUB @ N=2^24, kernel=lookback --> to
# 1.19<!-- from speed_table: × CUB @ N=2^28, kernel=lookback --> times CUB's speed, and in the plot
# at every size; CUB reaches
# 81.9 %<!-- from speed_table: % of copy @ N=2^28, kernel=cub::DeviceScan::InclusiveSum --> of the copy
# at 2^28. That is one build of CUB, the one CuPy 14 ships, on one GPU: not a ranking of
# the algorithm.
# In CUDA C++, `cub::DeviceScan::InclusiveSum` (or `ExclusiveSum`, or `InclusiveScan` with any
# associative operator; `thrust::inclusive_scan` calls it), in two calls, one to size its
# temporary storage and one to scan. From Python, `cuda.compute` (the `cuda-cccl` package) has
# `inclusive_scan` and `exclusive_scan`; the table reaches CUB through CuPy's binding,
# `cupy.cuda.cub.device_scan` (`course.bench` times it beside every scan). `cupy.cumsum` reaches
# the same CUB scan, after a copy: with CuPy's CUB accelerator on, CuPy's default,
# `cupy.cumsum(x, out=y)` (the call the table times) first copies x into y with an element-wise
# kernel, then runs CUB's `DeviceScan` in place on y (`scan_core` in CuPy's
# `cupy/_core/_routines_math.pyx`; without `out=`, it copies x into a new array first). That is
# 4N bytes where a scan needs 2N, and in the table it takes more than twice CUB's time at 2^24
# and 2^28. With the accelerator off (`CUPY_ACCELERATORS=""`) CuPy runs its own scan kernel, and it
# was slower still on this H100 at 2^24: 169.1 µs<!-- given: reference --> against
# 142.0 µs<!-- given: reference --> with CUB (`cupy.cumsum(x)`, timed on an H100 80GB HBM3 by
# `scripts/gpu_facts_scan.py`, step 4 of `docs/notes/scan-gpu-facts.md`). So from Python, `cupy.cumsum`
# already calls CUB; what it costs beyond CUB is the copy into its output: in the table it takes
# longer than CUB's scan at every size, and at 2^24 and 2^28 longer than a copy and CUB's scan
# added together.
#
# **How the single pass got there: the H200's tuning.** `lookback` was tuned on an H200, not on
# this H100, and there it started at little more than half of the copy's speed. The steps that took
# it to 88 % of that copy, each measured on the H200 at 2^28 float32 and recorded in
# `docs/tuning/scan.md` (recorded numbers, the same on every machine, not this run's):

# %%
scan.tuning_steps()

# %% [markdown]
# Read it as the H200's story, a story of latency. On the H200 the tile's own work was not the
# problem: the same tiles scanned without a look-back (last row) ran at
# 97.4 %<!-- from tuning_steps: % of copy @ × cupy.cumsum=3.77 --> of the copy, the final kernel at
# 88.2 %<!-- from tuning_steps: % of copy @ × cupy.cumsum=3.41 --> of the copy: there the waits cost
# about nine points. This H100 tells another story: the same kernel reaches
# 97.6 %<!-- from speed_table: % of copy @ N=2^28, kernel=lookback --> of the copy at 2^28 (the GPU
# table above), which leaves no nine points to lose: the pass table above, which sets `lookback`
# beside `scan_tiles` alone in the same run, puts the waits' cost here at a few points.
# (`docs/scan-h200.md` follows up why the H200 stays near 88 %.)
#
# **Little's law** says why the two GPUs differ. The DRAM stays busy only if enough loads are on
# their way at every moment: bytes in flight = bandwidth × latency. The table below computes it
# for this device (on a GPU from the read stream and the idle DRAM latency that `course.probe`
# measured, as `course.occupancy.bytes_needed_per_sm()` does) and for an H200 (the read stream and
# idle latency `course.probe` measured on one, recorded in `docs/scan-h200.md`). On this H100 that
# is 2890 GB/s<!-- from little_table: GB/s @ from=measured by course.probe --> ×
# 352<!-- from little_table: latency ns @ from=measured by course.probe --> ns ≈
# 1.02<!-- from little_table: in flight MB @ from=measured by course.probe --> MB, some
# 7.7<!-- from little_table: per SM KB @ from=measured by course.probe --> KB per SM; on the H200,
# 4181 GB/s<!-- from little_table: GB/s @ GPU=H200 (recorded) --> ×
# 340<!-- from little_table: latency ns @ GPU=H200 (recorded) --> ns ≈
# 1.42<!-- from little_table: in flight MB @ GPU=H200 (recorded) --> MB, some
# 10.8<!-- from little_table: per SM KB @ GPU=H200 (recorded) --> KB per SM: about 40 % more to
# keep in flight, with the same 16 KB tiles and the same blocks per SM. Under load the latency grows well past the idle
# pointer chase, so an SM needs more than that. A block loads its 16 KB tile at once, then scans it
# and looks back, and while it waits it holds its registers and has nothing in flight: a GPU that
# needs more in flight feels each wait more. So the H200's steps are (1) cheaper
# waits (a warp-local exchange instead of block barriers, one atomic instead of a round trip and a
# fence), (2) more blocks per SM to fill in for a waiting one (`__launch_bounds__(128, 8)` asks
# the compiler for at most 64 registers a thread; the compiler of the tuning run went from 72 to
# 56, so that 9 blocks of 128 fit where 7 did), (3) a pause before the first look, so that the
# predecessors' prefixes are there when it looks (fewer windows walked), only on grids of 2048
# tiles or more (N from 2^23 with blocks of 128): on a small grid every block is resident at once
# (2^22 is 1024 tiles) and a pause only adds (a pause on every grid took the tuning run's 2^20 from 60.6 to
# 55.0 %<!-- given: reference --> of the copy, `docs/tuning/scan.md`), and (4) a prefetch of the
# tile 256 tiles ahead into L2, which costs no register and keeps the DRAM busy while blocks wait.

# %% tags=["nbval-ignore-output"]
scan.little_table()

# %% [markdown]
# Read the two rows against each other: the same law, the bandwidth and the latency of each GPU,
# and the bytes each SM must keep in flight (last columns). On a GPU the first row is measured
# (its `from` column says so); on the emulator it is the device model's, not a measurement.
#
# What the kernel gets from the compiler at hand, and so how many blocks an SM holds at once
# (on a GPU the driver's numbers, on the emulator NVRTC's cubin and the course's occupancy
# calculation):

# %% tags=["nbval-ignore-output"]
scan.residency_table()

# %% [markdown]
# Read the registers column against the tuning table's row. On this H100 the driver loaded 56
# registers a thread at every block, the count of the tuning run, so 9 blocks of 128 fit, limited
# by registers (56 × 128 × 9 = 64 512 of the SM's 65 536). Another compiler may allocate a
# different count (the emulator's NVRTC allocates 64: 8 blocks), and each register less is more
# blocks only when it crosses a boundary: 64 registers × 128 threads × 8 blocks is exactly the
# SM's 65 536. Whatever it
# allocates, the blocks per SM times the block is the threads an SM keeps in flight, and with
# 32 elements a thread, the bytes it has on their way while blocks wait.

# %% [markdown]
# ## Summary
#
# - A scan trades **steps** against **work**. The naive scan does N²/2 additions in N steps;
#   Kogge-Stone N log2 N in log2 N steps; Brent-Kung (and Blelloch) about 2N in 2 log2 N steps. A
#   serial loop does N − 1 in N − 1: work-efficient, and one step at a time.
# - Inside a block: two barriers per Kogge-Stone step, or one with a double buffer; a tree whose
#   strides double has bank conflicts up to 32-way, which one padding word per 32 removes (GPU
#   Gems 3's offset pads for 16 banks, and its "zero conflicts" macro pads nothing).
# - Inside a warp, Kogge-Stone's extra work is free: 32 lanes execute each step together, with
#   no barrier and no shared memory (`__shfl_up_sync`). The fast kernels are PMPP's coarsened
#   three-phase scan: 32 elements per thread added one after another in registers, a warp scan
#   and a block scan of the threads' totals, and each thread's prefix added back.
# - Past a block, memory decides. Scan-then-propagate moves 4N elements; a single pass with
#   decoupled look-back moves 2N, like a copy, and comes close to one once its waits are hidden: a
#   window of 32 predecessors, a ticket so that no block waits for one that never started, a
#   pause on large grids (2048 tiles or more; on a smaller one it only adds), and a prefetch. Outside the course, call CUB's `DeviceScan` (`cuda.compute` from
#   Python), the same algorithm.
# - The same kernels compute any associative operator's scan: `-DSCAN_MAX` gives the running
#   maximum.
# - The article's code does not compile (`_shared__`); its Kogge-Stone waits at barriers only some
#   threads reach, never stores its result, reads unloaded elements when N < block and is inclusive,
#   not exclusive; its two Brent-Kung listings stop one level short of the root (the last element is
#   wrong), and its merged kernel leaves half its 2 × BLOCK_SIZE array unloaded (the stored half is
#   still right: data flows only upward) and writes past its end. Its serial loop does not wait (n − 1)(n − 2)/2 additions: it does N − 1.

# %% [markdown]
# Your exercises in this notebook, done or not yet:

# %%
course.my_progress("scan")

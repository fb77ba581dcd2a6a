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
# conflicts** (kernel 2), then, for kernels 4–6, Harris's diagnosis of **instruction overhead**
# held against the bound it implies, and what sets their time on a current GPU instead: a **cost
# per block**, paid by every block whether or not it has data; then **work per thread** (kernel 7:
# few blocks that loop), with **occupancy** (how many blocks an SM holds) and **bytes in flight**
# (Little's law) deciding how many blocks are enough, and wider loads (beyond). Every cell runs
# without a GPU, on the course's emulator; on a GPU the timing cells measure, on the emulator they
# say they cannot. Eight exercises sit where their ideas are taught.

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
from course import reduction, source

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
# `reduction.run(version, x)` makes the same launch and then adds the block sums on the GPU with a
# second pass: the one-pass kernel of this notebook's last section, with as many blocks as those
# sums need (one here, more for millions of elements). So every version is compared on the whole
# job. The launches one `run` makes:

# %%
reduction.launch_table("reduce1", x)

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
# 0, 1, 2, …, contiguous, so in the early steps a warp's lanes all add or none does, and divergence
# is gone from those steps.

# %%
source.show("reduction.cu", "reduce2")

# %%
fig, ax = plt.subplots(figsize=(11, 5.8))
reduction.draw_tree(ax, "reduce2")

# %% [markdown]
# Warp 1 (orange) adds nothing after the load: warp 0's threads 0–31 do all the adding, and from
# step 2 on only its first lanes. But look at the right column: with the 4-byte float sums the
# trees are drawn with, every step from 1 to 5 is a **2-way bank conflict** (the article's 8-byte
# `long long` sums fare worse: the 8-byte rule below).
#
# **Shared-memory banks.** Shared memory is split into 32 *banks* of 4-byte words; word `w` is in
# bank `w % 32`. A warp's access takes one pass when its lanes hit 32 different banks (or the same
# word: a broadcast); when `k` lanes hit different words of one bank, it takes `k` passes, a
# *k-way conflict*; each pass is a *wavefront*. With the index `2*s*t` the lanes are `2s` words
# apart. Counted in a block of 256 threads (float sums: one word per element, as in Harris's
# slides):

# %%
reduction.step_table("reduce2")

# %% [markdown]
# The conflicts climb with the stride to 8-way at s = 4, 8 and 16, then fall as fewer lanes take
# part. Lane by lane, warp 0's read in step 3 of kernel 2 (left) beside the same step of kernel 3
# (right, next section): each lane points at the bank of the word it reads, and a stack of words
# under one bank is a conflict.

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
reduction.draw_banks_pair(axes, ["reduce2", "reduce3"], reduction.worst_step("reduce2"))

# %% [markdown]
# Kernel 2's 32 lanes land in 4 banks, 8 words in each: the read is served in 8 wavefronts.
# Kernel 3's lanes read 32 consecutive words, one per bank: one wavefront.
#
# **The article's sums are 8 bytes.** Harris's slides sum floats; the article sums in `long long`,
# and every timing below runs that way. An 8-byte word covers two banks, so a warp's 8-byte access
# is served as two half-warps: two wavefronts with no conflict at all, and conflicts add to those.
# Kernel 2 in a block of 64, wavefronts per tree step (loads and stores of every warp), counted from
# the traces of both types:

# %%
reduction.wavefront_table("reduce2", block=64)

# %% [markdown]
# With `long long` sums kernel 2's tree takes about twice the wavefronts of the float one, and
# most of the extra ones are conflicts: the 8-byte words spread the lanes twice as far over the
# banks.
#
# **1. Predict, then check: kernel 2 at a block of 1024.** The step table of kernel 2 above counted
# a block of 256. For one block of **1024** float sums, predict for each stride `s` the three
# numbers that table counts: the warps busy (at least one of their threads adds), how many of them
# are divergent (some lanes add, others not), and the worst bank conflict of the step's
# shared-memory accesses, in ways (1: none). Replace each `None`; the check counts them from a
# trace and names the first stride and column that differ, with the rule for that column.
# `reduction.exercises.ways.hint()` gives a hint when you ask, one more each time; no check prints
# the answer.

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
# **2. Predict, then check: 8-byte sums at a block of 256.** For kernel 2 with the article's `long
# long` sums in one block of **256**, predict for each tree step the two numbers the table above
# counts for a block of 64: the step's shared-memory wavefronts (every warp's loads and stores) and
# how many of them bank conflicts add.

# %%
my_wavefronts = {  # step: (wavefronts, of them from conflicts)
    1: (None, None),
    2: (None, None),
    3: (None, None),
    4: (None, None),
    5: (None, None),
    6: (None, None),
    7: (None, None),
    8: (None, None),
}
reduction.exercises.wavefronts.check(my_wavefronts)

# %% [markdown]
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
# 256-thread block: the wavefronts bank conflicts add to the worst access of each step (the ways
# minus one) in kernels 2 and 3, and the warps with idle lanes in kernels 1 and 3:

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 3.6))
reduction.compare_steps(a, ["reduce2", "reduce3"], "worst bank conflict")
reduction.compare_steps(b, ["reduce1", "reduce3"], "of them divergent", ylabel="divergent warps")

# %% [markdown]
# Kernel 3 adds no wavefront in any step, and its divergent warps appear only in the last steps,
# where a single warp is left adding. The same lane by lane: how many lanes of each warp add in
# each step (white, "–": no lane of the warp adds):

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 3.8))
reduction.draw_lanes(a, "reduce1")
reduction.draw_lanes(b, "reduce3")

# %% [markdown]
# Kernel 1 keeps all 8 warps adding with 16, 8, 4, 2, 1 lanes. In kernel 3 the adds move into
# warp 0: from step 3 on no other warp adds. But a white cell is not a warp that stopped. The
# `__syncthreads()` sits in the loop outside the `if`, so every warp runs the loop, the compare and
# the barrier in every step; only the add is skipped. Counted from the trace of kernel 3, block of
# 256:

# %%
reduction.barriers_per_warp("reduce3")

# %% [markdown]
# Warps 1–7 reach all 9 barriers, as warp 0 does: the first after the store, then one per step.
# No warp leaves the loop early, so the tree costs every warp its loop bookkeeping and its barrier
# waits in each step. (That bookkeeping is what Harris's kernels 5 and 6 cut.)
#
# **3. Predict, then check: each warp of kernel 1 at a block of 512.** For one block of **512**
# threads of kernel 1 (16 warps), predict for each warp the two numbers the table above counts
# for kernel 3: the `__syncthreads()` it reaches and the tree steps in which at least one of its
# lanes adds. Kernel 1's busy threads are not contiguous: its heat map above is the place to
# start.

# %%
my_warps = {  # warp: (barriers it reaches, steps in which it adds)
    0: (None, None), 1: (None, None), 2: (None, None), 3: (None, None),
    4: (None, None), 5: (None, None), 6: (None, None), 7: (None, None),
    8: (None, None), 9: (None, None), 10: (None, None), 11: (None, None),
    12: (None, None), 13: (None, None), 14: (None, None), 15: (None, None),
}
reduction.exercises.warp_steps.check(my_warps)

# %% [markdown]
# **4. Write: kernel 3's tree for any block size.** Kernel 3 halves `s` from `blockDim.x / 2`:
# with a block that is not a power of two, some partial sums never reach `sdata[0]`. Rewrite the
# marked part so that `sdata[0]` ends with every element of the block, for any `blockDim.x`, and
# still as a tree. The check launches N = 1 to 3007 in blocks of 1, 7, 33, 96, 100, 128, 160 and
# 1000 threads (N = block − 1 and block + 1 among them), one element per thread, and compares
# every block's sum with NumPy's; a wrong one is traced back to the values that never reached
# `sdata[0]` or reached it twice. The target, read from the trace: **a tree**, at most ⌈log₂ block⌉
# barrier steps (a step ends at a `__syncthreads()`, or at a `__syncwarp()` between one warp's own
# steps), with no thread adding more than two partners into its own in one step. Every
# thread must reach every `__syncthreads()`. `reduction.exercises.any_block.show(mine)` draws your
# tree as the cells above draw the course's. Kernels you write run on the emulator first, with the
# checker, whatever the machine: a race, a stray access, a barrier only part of the block reaches
# or an endless loop ends in a verdict, never in a crashed GPU. On a GPU the check then times yours with blocks of 96
# beside `reduce3` and a copy of the same bytes.

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
# ## Kernels 4–6: fewer instructions, held against the bound
#
# Kernel 3's memory accesses are clean, yet (the timing section shows it) it reaches about a
# quarter of the memory's peak. Harris's diagnosis, on his 2007 G80, was **instructions**: the
# loop, the index arithmetic, the `__syncthreads()`, the half of the threads that idle from the
# first step on. Kernels 4–6 each cut some of them. Counted by the emulator for each version's own
# launch (N = 65 536, blocks of 128, as the timings below; these are PTX instructions, what the emulator runs; the GPU
# runs the machine code compiled from them, which `scripts/gpu_facts_reduction.py` counts with
# Nsight Compute):

# %% tags=["nbval-ignore-output"]
reduction.instructions_per_element(block=128)

# %% [markdown]
# Kernel 3 issues about two and a half warp instructions per element it sums, kernel 6 under one. Whether that
# makes them faster is a question for the bound: below, once kernels 4–6 are written and fixed.
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
# **5. Write: first add during load, four elements per thread.** Kernel 4 adds two elements while
# loading; yours adds **four**, so a block of `blockDim.x` threads sums `4 * blockDim.x` elements
# and the grid needs a quarter of kernel 3's blocks. Fill in the marked part: `v` must end with the
# thread's share of its block's elements. The check launches N = 1 to 5000 (none a multiple of
# 4 × block) in blocks of 32 to 256, one of them with elements near 2^32, and compares every
# block's sum with NumPy's. The targets, read from the trace: **coalesced loads**, no more 32-byte
# sectors per full-warp load request than its bytes need (4 for 32 lanes of 4-byte words: the
# lanes' words side by side), and **four per thread**: each thread loads its own elements, so a
# warp makes at most four load requests. On a GPU it then times yours beside `reduce4` and a copy.

# %%
mine = r"""
extern "C" __global__ void reduce4_four(const elem_t* x, acc_t* out, int n) {
    extern __shared__ acc_t sdata[];
    unsigned int tid = threadIdx.x;
    // ---- your loads: block b sums x[b * 4 * blockDim.x ...] up to 4 * blockDim.x elements, four per thread
    // FILL ME IN (about 4 lines): v must end with this thread's four elements (or fewer, at the end of x)
    acc_t v = 0;
    // ----
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}"""
reduction.exercises.four.check(mine)

# %% [markdown]
# **Kernel 5: unroll the last warp.** When `s <= 32` only warp 0 still adds, and a warp needs no
# `__syncthreads()` to wait for itself. Unrolling those six steps saves the loop and the barrier
# not just in warp 0 but in *every* warp, since all warps run the loop's bookkeeping (the barrier
# table above). The article's version lets the warp run "in lockstep" through a `volatile`
# pointer. (The article's kernel 5 loads as its kernel 4 does, `sdata[tid] = (i < N) ? g_idata[i]
# + g_idata[i + blockDim.x] : 0;`, with that kernel's stray read and its `unsigned` add; the
# listings here keep kernel 4's fixed load, so that each shows only its own change.)

# %%
source.show("reduction.cu", "warp_reduce_article")

# %% [markdown]
# **Two bugs.** First, since the Volta generation (2017) the lanes of a warp are scheduled
# independently: nothing guarantees that lane 0 reads `sdata[16]` *after* lane 16 wrote it. The
# code is a data race that happens to work on many GPUs. Warp 0's trace shows the article's
# version never synchronises the warp; the fixed one calls `__syncwarp()` between every read and
# write:

# %%
print("__syncwarp() calls by warp 0, the article's kernel 5:", reduction.warp_syncs("reduce5_article"))
print("__syncwarp() calls by warp 0, the fixed kernel 5:    ", reduction.warp_syncs("reduce5"))

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
# becomes a C++ template parameter. The article's kernel 6 (its `warpReduceT` and `reduce6`
# template; the load is kernel 4's fix, as in kernel 5, and the `blockSize >= 1024` step is ours:
# the article's `reduce6` starts at 512, and its `main()`'s `switch` on the block size has no
# `case 1024`, so at a block of 1024 it launches nothing and prints the sum of uninitialised
# device memory):

# %%
source.show("reduction.cu", "warp_reduce_unrolled_article", "block_reduce_unrolled", "reduce6_article")

# %% [markdown]
# Besides kernel 5's race, kernel 6 has a bug of its own. The article's `main()` instantiates
# `reduce6<512>` down to `reduce6<1>`. From `<32>` down to `<2>`, every thread of the block is in
# warp 0 and runs the first warp step compiled in, `sdata[tid] += sdata[tid + blockSize / 2]`, and
# the upper half of them read past the block's shared memory: at `<32>` lanes 16–31 read
# `sdata[32..47]` (`if (blockSize >= 32) sdata[tid] += sdata[tid + 16]`), at `<16>` lanes 8–15
# read `sdata[16..23]`, and so on down to `<2>`, whose lane 1 reads `sdata[2]`. Only `<1>`, which
# compiles no warp step, is safe. A block of 32:

# %%
with course.expect_error():
    reduction.run("reduce6_article", small, block=32)

# %% [markdown]
# The fixed kernel 6 keeps the unrolled block steps and does the warp steps as kernel 5's fix does,
# skipping partners past the block. Each size is compiled through `name_expressions`, as with
# `cupy.RawModule`:

# %%
source.show("reduction.cu", "warp_reduce_unrolled", "reduce6")

# %%
k6 = reduction.kernel("reduce6", np.uint32, block=128)
print(k6.name, "is compiled as", k6.ptx_name)
print(reduction.run("reduce6", x) == reduction.reference(x))

# %% [markdown]
# ### Did the instructions matter? Kernels 3 to 7 against two bounds
#
# An SM has four warp schedulers, and each issues at most one warp instruction a cycle. So the
# whole GPU issues at most SMs × 4 × clock warp instructions a second, about 1.05e12 on this H100:
# 132 SMs at 1.98 GHz, the clock the driver reports (`cudaDevAttrClockRate`) and about the one Nsight
# Compute measured while kernels 3 to 7 ran (1.97 to 1.98 GHz: `scripts/gpu_facts_reduction.py`, whose H100 report is
# `docs/notes/reduction-gpu-facts.md`). A kernel that must issue `I` warp
# instructions per element takes at least `I × N / 1.05e12` seconds: its **issue floor**. The table
# computes it from the device (its SMs, and its clock: the GPU's on a GPU, the device model's on
# the emulator) and the counts above (the same blocks of 128; kernel 7's counted on 2^16 elements
# with 8 pairs a thread, as it loops on a big input), at N = 2^25 with each kernel's own launch. It
# also counts the **waves**: the grid's blocks over the blocks all SMs hold at once (occupancy,
# below). On a GPU it times each kernel and divides: time per wave, and the floor as a share of
# the time. Its last two columns are a control: the same kernel and grid once more on an input of
# one element, so that every block but the first finds nothing to load.

# %% tags=["nbval-ignore-output"]
reduction.issue_table()

# %% [markdown]
# Read it from left to right. Kernels 4, 5 and 6 cut the instructions per element, and the issue
# floor falls with them. On this H100 the time follows only part of the way. Kernel 4 runs in about
# half kernel 3's time (86.2 µs<!-- from issue_table: µs @ kernel=reduce4 --> against
# 162 µs<!-- from issue_table: µs @ kernel=reduce3 -->), but it has half the waves *and* about half
# the instructions, so that step alone cannot tell the bounds apart. Kernels 5 and 6 can: they
# cut kernel 4's floor by a third and by nearly half (from 45.3 µs<!-- from issue_table: issue floor µs @ kernel=reduce4 -->
# to 30.2 µs<!-- from issue_table: issue floor µs @ kernel=reduce5 --> and
# 25.5 µs<!-- from issue_table: issue floor µs @ kernel=reduce6 -->), yet run barely faster than
# kernel 4 (82.8 µs<!-- from issue_table: µs @ kernel=reduce5 --> and
# 82.8 µs<!-- from issue_table: µs @ kernel=reduce6 -->), with the same waves. The **time per
# wave** column barely moves from kernel 3 to kernel 6 (1.31 µs<!-- from issue_table: µs per wave @ kernel=reduce3 -->
# to 1.39 µs<!-- from issue_table: µs per wave @ kernel=reduce4 -->; over five repeats the times
# of kernels 3 to 6 stay within 0.2 %, `docs/notes/reduction-gpu-facts.md`): each wave of blocks costs about the same time,
# whatever its instruction count.
#
# The floor is not small, though, and the table's is the lower one. It counts **PTX**, the
# instructions the emulator runs. The GPU runs the machine code (**SASS**) that `ptxas` compiles
# from them, and Nsight Compute counts more of those (`docs/notes/reduction-gpu-facts.md`, same N and
# launches): 3.47, 1.88, 1.13 and 0.918 warp instructions per element for kernels 3 to 6, 1.35×
# the PTX for kernels 3 and 4 and about 1.2× for 5 and 6. Kernel 3's compiled loop shows what SASS
# adds: the tree's `if (tid < s)` body becomes predicated instructions that *every* warp issues,
# whether or not a lane adds, and each `long long` add is two 32-bit instructions (an add and an
# add with carry). (Kernel 7 is counted differently: the table counts it on 2^16 elements, 8 pairs
# per thread, where its one wave at 2^25 loops 62 times; SASS there gives 0.218 per element, below
# the table's 0.304.) With the SASS counts the floor is about 70 % of the time of kernels 3 and 4,
# which spend much of each wave issuing; 44 % and 36 % of the time of kernels 5 and 6, and 14 % of
# kernel 7's. So from kernel 5 on, issue is not what the time waits for.
#
# Harris's reading fits his GPU better than this one. The G80 issued a warp instruction in 4 cycles on each of
# 16 SMs at 1.35 GHz, about 5.4e9 a second, some 190 times fewer than this H100. The same counts against
# the G80's issue rate, beside the times Harris measured at 4M elements (the slides' numbers):

# %% tags=["nbval-ignore-output"]
reduction.g80_floor()

# %% [markdown]
# For kernels 3 to 6 this "floor" comes out *above* the times Harris measured (116 % to 162 %), and
# a lower bound above the measurement is no bound: the counts overstate what the G80 issued. They
# are of today's PTX, not of the G80's machine code, and for kernels 5 and 6 of the course's fixed
# code, whose last warp runs a `__syncwarp()` and a bounds test at every step that Harris's code did
# not have. (At 5.4e9 a second, Harris's kernel 6, 0.381 ms<!-- from g80_floor: G80 measured ms @ kernel=reduce6 -->
# at 4 M elements, can have issued at most about 0.49 warp instructions per element; the table
# counts 0.79.) What the table does show is that on the G80 issuing a kernel's instructions took
# time of the same order as running it, so an instruction cut could show in the time, and Harris's
# times fell with each one. On this H100 the floor is at most about half the time (70 % in SASS,
# for kernels 3 and 4), and cutting it from kernel 4 to kernel 6 barely moved the time. What is the
# time, then?
#
# ### What a wave of blocks costs: a price per block
#
# A wave costs about the same whatever its instructions. Is it the wait for its loads, one DRAM round
# trip per wave? The article's launch answers that. It runs kernels 4 to 6 (the same fixed code)
# with twice their blocks, and in the second half of those blocks every thread has `i ≥ n` and
# loads nothing. Those empty blocks cost what loading blocks cost: at 32 M elements kernel 4 takes
# 165 µs<!-- from article_table: article µs @ N=33554432, kernel=reduce4 --> under the article's
# launch against 86.2 µs<!-- from article_table: fixed µs @ N=33554432, kernel=reduce4 --> under
# its own, and kernel 6 161 µs<!-- from article_table: article µs @ N=33554432, kernel=reduce6 -->
# against 82.8 µs<!-- from article_table: fixed µs @ N=33554432, kernel=reduce6 --> (the timing
# table at the end): twice the blocks, twice the time, though the extra half loads nothing. The
# issue table's last two columns make the same control at the own grids of kernels 3 to 6: a wave of
# their blocks costs about the same whether its threads load none, one or two elements. Kernel 7's
# row is the contrast: its one wave with nothing to load takes about a tenth of its time with data,
# for its time is its loads.
#
# So for kernels 3 to 6 neither the DRAM round trip nor the bytes a wave carries set the time; the
# number of blocks does. Which part of a block costs, then? Not its work either: the control above
# removes only the loads, and the tree, the barriers and the stores still run. Remove those too.
# An **empty kernel** (`if (n < 0) out[blockIdx.x] = 0;`, which stores nothing) launched on kernel
# 3's grid of 262 144 blocks of 128 takes 160.7 µs<!-- given: reference --> on this notebook's H100,
# against 162.9 µs<!-- given: reference --> for kernel 3 in the same run, and on kernel 4's 131 072
# blocks 81.9 µs<!-- given: reference -->, against 86.5 µs<!-- given: reference --> for kernel 4 and
# 82.9 µs<!-- given: reference --> for kernel 5, all in one run (`scripts/gpu_facts_reduction.py`
# step 10, which times the empty kernel on each kernel's own grid beside the kernel; its H100 report
# is `docs/notes/reduction-gpu-facts.md`). The time is the rate at which the GPU
# **starts blocks**: 160.7 µs<!-- given: reference --> over 262 144 blocks is about 0.61 ns a
# block, some 0.8 blocks per SM clock for the whole GPU, and what a block does inside (its loads, its
# tree, its barriers) hides under it. The issue table says the same: a wave of 2112 blocks takes
# 1.31 µs<!-- from issue_table: µs per wave @ kernel=reduce3 -->, about 0.62 ns a block. Kernel 4
# halves the blocks, so it halves the time. Kernels 5 and 6 shorten what each block issues but keep
# the blocks, and the time stays.
#
# That gives a rule for blocks of this shape: at 0.61 ns a block of 128 threads and a read stream of
# 2890 GB/s<!-- from littles_law: GB/s --> (the probe's, below), a block must read at least
# 0.61 ns × 2890 GB/s<!-- from littles_law: GB/s --> ≈ 1.8 KB before memory, not starting
# blocks, sets the time. (Step 10 times blocks of 128 only. Whether a block of 32 or of 1024
# threads starts at the same rate is not measured here: for other block sizes the rule is a
# question to time, not a given.) Kernel 3's blocks of 128 read 512 B each and kernel 4's 1 KB; one wave of
# kernel 7 reads 2^25 × 4 B / 2112 blocks, about 64 KB a block. The way out is fewer blocks, each
# doing more: kernel 7.
#
# ### Latency and bytes in flight
#
# With a few blocks that loop over the whole input, the price per block is paid once, and what the
# kernel waits for is the memory's **latency**: a load that misses the caches takes hundreds of
# nanoseconds to come back from DRAM. To keep DRAM busy, each SM needs enough bytes *in flight*
# all the time. By **Little's law**, bytes in flight = bandwidth × latency. `course.device()`
# measures both on a GPU (`course.probe`: a read stream, and the latency of an idle pointer chase;
# on the emulator the device model's datasheet peak and 600 ns), and `littles_law` multiplies them
# out:

# %% tags=["nbval-ignore-output"]
reduction.littles_law()

# %% [markdown]
# On this run's H100 that is about 1 MB in flight for the whole GPU, some 7.7 KB per SM. It is a
# floor: under load the latency grows (the latency table below).
#
# ### Occupancy: how many blocks an SM holds
#
# "All SMs at once" depends on the kernel. An SM holds a block only if it has room for all of it:
# its **threads** (2048 per SM on Hopper), a **block slot** (32 per SM), its **registers** (65 536
# per SM, allocated per warp) and its **shared memory** (228 KB per SM, plus 1 KB the driver
# reserves per block). Registers go to a warp in units of 256 (registers per thread × 32, rounded
# up to a multiple of 256), and the 65 536 are four quarters of 16 384, one per scheduler: a quarter
# holds a whole number of warps. At 20 registers a thread a warp takes 640, rounded up to 768; a
# quarter holds 21 such warps and the SM 84, not 65 536 / 640 = 102. The least of the four is the
# number of blocks it holds at once; the threads those blocks have, as a share of the 2048 an SM could hold, is the kernel's
# **occupancy**. For kernel 7 with the article's `long long` sums, each limit alone,
# read from the device (on a GPU the registers come from the loaded function and the count from
# the driver's occupancy API):

# %% tags=["nbval-ignore-output"]
reduction.occupancy_table()

# %% [markdown]
# Kernel 7 takes few registers and one `long long` per thread of shared memory, so from blocks of
# 64 on the threads are the limit: 2048 threads per SM, full occupancy. Blocks of 32 hit the
# 32-block limit first: 1024 threads, half occupancy. The loads in flight per SM follow the
# threads an SM holds: fewer resident threads, fewer loads waiting. A kernel with more registers or
# more shared memory hits those limits instead. On a T4 (Colab's GPU: 40 SMs, 1024 threads and 16
# block slots per SM, 64 KB of shared memory) the thread and block-slot limits halve, and with them
# the blocks per SM; the occupancy column stays as it is (a share of half the threads), the
# register limit (64 K per SM) does not halve, and one wave of kernel 7 at blocks of 128 is
# 40 × 8 = 320 blocks.
#
# **6. Predict, then check: blocks per SM.** For each launch below (threads per block, registers
# per thread, shared bytes per block), predict how many blocks one SM of an H100 or H200 holds at
# once. The check does CUDA's occupancy calculation and says which launch is off, with the rule.

# %%
my_blocks = {  # (threads per block, registers per thread, shared bytes per block): blocks per SM
    (64, 16, 512): None,
    (32, 28, 256): None,
    (256, 64, 0): None,
    (128, 32, 40960): None,
    (96, 40, 3072): None,
    (1024, 32, 49152): None,
    (512, 72, 8192): None,
    (64, 16, 22528): None,
}
reduction.exercises.blocks_per_sm.check(my_blocks)

# %% [markdown]
# ## Kernel 7: many elements per thread, and latency hiding
#
# Each thread of kernels 1–6 adds one or two elements, then spends the rest of its life in the
# tree. **Brent's theorem** bounds the time of a parallel algorithm on `p` processors by
# T_p ≤ W/p + D, for `W` operations in all and a longest chain of `D`. Summing N numbers has
# W = N − 1 and D = log₂ N. With N threads the time is O(log N) but the *cost*, processors ×
# time, is O(N log N): most threads idle most of the time. With N / log N threads, each first
# adding log N elements on its own, the time is still O(log N) and the cost O(N), as good as a
# serial loop. Harris calls this *algorithm cascading*. Kernel 7 does it with a grid-stride loop:
# a grid smaller than N/2 covers any N, and the tree (with its barriers) runs once per block
# instead of once per 256 elements. The article's kernel 7 (it calls kernel 6's `warpReduceT`
# template for the last warp, where Harris's slide calls the non-template `warpReduce`: the
# article's one correction of the slides):

# %%
source.show("reduction.cu", "reduce7_article")

# %% [markdown]
# But the article launches kernel 7 with N / 128 blocks, as it launches kernel 1: twice as many as
# there are pairs, so half the blocks find nothing to do and no thread loops. (Its `main()` also
# launches `reduce7<128>` whatever block size it is given.) Counting each thread's loads in the
# trace:

# %%
print("the article's launch:", reduction.loads_per_thread("reduce7_article", 4096, grid=4096 // 128))
print("a grid of 4 blocks  :", reduction.loads_per_thread("reduce7", 4096, grid=4))

# %% [markdown]
# That is one reason the article found kernel 7 no faster than kernel 6; its timer is the other
# (below: its numbers are one block's `clock()` cycles, not the kernel's time). Its loop also reads
# `x[i + blockSize]` unchecked, so N = 1000 fails as kernel 4 did:

# %%
with course.expect_error():
    reduction.run("reduce7_article", small)

# %% [markdown]
# Its loop has kernel 4's other bug too: `x[i] + x[i + blockSize]` adds two `unsigned int`s, which
# wrap past 2^32, before the sum is widened to `long long`. The fixed kernel 7 checks the second
# load, widens each element before adding it, and keeps its running sum in a register:

# %%
source.show("reduction.cu", "reduce7")

# %% [markdown]
# The article's `reduce0` keeps a grid-stride load too, commented out as *method 2* ("a thread can
# take several elements, but with large data the result easily goes wrong"). The loop is not what
# goes wrong; the `unsigned int temp` it adds into is: 32 bits, which wrap past 2^32. With the data
# of the article's `main()` (x[i] = i + 1) and the grid it first sets (32 blocks of 128, 4096
# threads), a thread's sum is about N² / 8192, past 2^32 from N of about 5.9 million; with the
# ⌈N / 128⌉ blocks it launches in the end, a thread takes one element and nothing wraps. The fixed
# kernel 7 keeps the loop and adds into `acc_t`, a `long long` for the article's data.
#
# **How many blocks, then?** The article says N / 128 blocks "all run concurrently at once". They
# do not: an SM holds 16 blocks of 128 (the occupancy table), so 132 SMs hold 2112 at once, and
# N / 128 blocks at N = 2^25 are 124 waves of them (the waves column above). The fixed kernel 7 is
# launched with exactly one *wave*: as many blocks as the SMs hold at once, each thread looping
# over the rest. The launch, written out (block 128, `long long` sums in `shared_mem`):

# %%
block = 128
grid = reduction.one_wave("reduce7", block)  # SMs × blocks one SM holds at once
big = course.asarray(np.ones(2**24, np.uint32))
sums = course.zeros(grid, np.int64)
k7 = reduction.kernel("reduce7", np.uint32, block)
k7((grid,), (block,), (big, sums, np.int32(big.size)), shared_mem=block * 8)
print(f"{grid} blocks of {block}, {big.size // (grid * block)} elements per thread:",
      course.asnumpy(sums).sum() == big.size)

# %% [markdown]
# Now every thread keeps two loads in flight per loop iteration for the whole kernel, not once per
# block. The same kernel with a grid from 1/16 of a wave to a full one, then two and four waves,
# and what it keeps in flight (on a GPU, also its speed at N = 2^26, beside a read + write copy of
# the same bytes, and the DRAM latency the two imply by Little's law read backwards: latency =
# bytes in flight / bandwidth):

# %% tags=["nbval-ignore-output"]
reduction.latency_table()

# %% [markdown]
# On this H100, read the bandwidth against the bytes in flight. The first two doublings of the
# blocks per SM nearly double the GB/s (350 GB/s<!-- from latency_table: GB/s @ blocks=132 -->,
# 683 GB/s<!-- from latency_table: GB/s @ blocks=264 -->, 1290 GB/s<!-- from latency_table: GB/s @ blocks=528 -->),
# because each doubles the loads waiting; the next two gain less, 1.7× and then 1.25×, up to
# 2740 GB/s<!-- from latency_table: GB/s @ blocks=2112 --> at a full wave,
# 94.2 %<!-- from latency_table: % of copy @ blocks=2112 --> of the copy. Past one wave nothing
# more is in flight (the SMs are full; later blocks wait for a slot), and the bandwidth stays put:
# 2780 GB/s<!-- from latency_table: GB/s @ blocks=4224 --> and
# 2780 GB/s<!-- from latency_table: GB/s @ blocks=8448 --> at two and four waves. The implied
# latency is not a constant. At 1/16 of a wave it is 386<!-- from latency_table: implied latency ns @ blocks=132 --> ns,
# near the 350 ns the idle pointer chase measured; it grows as the grid fills the GPU, to
# 789<!-- from latency_table: implied latency ns @ blocks=2112 --> ns at a full wave, because
# queues form in the memory system under load, and stays there past it. That is why Little's law
# with the idle latency underestimates what a full GPU needs: at 8192 B in flight per SM, just
# above Little's figure with the idle latency (the `littles_law` table), kernel 7 reaches 75.0 %<!-- from latency_table: % of copy @ blocks=1056 --> of
# the copy, and the speed keeps rising past Little's figure. Even a full wave, twice those bytes,
# stays short of the copy: the 16-byte loads beyond the article are the way past that.
#
# **Fewer, busier threads** also mean less tree work. Kernel 7 on 65 536 elements with three
# launches: the elements per thread counted from each launch's trace, the tree's levels
# (log₂ block), the `__syncthreads()` block 0 reaches (the fixed kernel waits with `__syncwarp()`
# once only one warp adds), the tree's additions in shared memory (block 0's, counted from its
# dataflow, and times the blocks: every block runs the same tree), and the SMs the grid can use:

# %%
reduction.tradeoff()

# %% [markdown]
# With 512 blocks of 32 every thread adds 4 elements, and the trees add 66 048 times: a tree of 32
# threads adds 129 times, not 31, because the fixed warp step lets every lane whose partner lies
# inside the block add, whether or not its sum is used. With 128 blocks of 128, 4 elements each
# and 32 768 tree additions, half as many; with 8 blocks of 512, 16 elements each and 5 120, but on
# 8 of the 132 SMs. Too few blocks, or too few threads, and the loads in flight drop: the latency
# table is the limit.
#
# **7. Predict, then measure: the fewest blocks at full speed.** The latency table timed kernel 7
# in blocks of 128 at N = 2^26. Take blocks of **512** and N = **2^24**, and five grids: 1, 2, 4, 8
# and 16 blocks per SM (the SMs times that many blocks). Which is the fewest blocks per SM that runs
# within 10 % of the fastest of the five? Predict it from the tables above: how many blocks of 512
# an SM holds at once, how many bytes each grid keeps in flight per SM, and the bytes in flight from
# which the latency table stops gaining. On a GPU the check times the five grids and passes the
# fewest within 10 % of the fastest; without one it checks your answer by the course's wave model
# (the bytes in flight per SM against Little's law on this device). Replace `None` with 1, 2, 4, 8
# or 16.

# %%
reduction.exercises.grid.check(None)

# %% [markdown]
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
# Time kernels from the host with CUDA events instead, as `course.bench` does below. This may also
# be why the article measured kernel 5 slower than kernel 4: its numbers are one block's cycles
# from whichever write landed last, not the kernels' times. Timed from the host, kernel 5 is never
# slower than kernel 4 in the table below, and barely faster, as in the issue table. Nor could that
# timer have shown kernel 7's gain, under any launch: a block of kernel 7 that loops over many
# elements takes more cycles than a block of kernel 6 that adds two, though the kernel as a whole,
# with far fewer blocks, takes less time.

# %% [markdown]
# ## Beyond the article
#
# **Warp shuffles.** `__shfl_down_sync(mask, v, k)` hands each lane the register `v` of the lane
# `k` above it, without shared memory and without a separate `__syncwarp()` (the `_sync` is the
# synchronisation). A block then needs one shared slot per warp.
#
# **8. Write: the last warp with shuffles.** The stub's last warp is the article's warp-synchronous
# code, a race since Volta. Rewrite the marked part with `__shfl_down_sync(0xffffffff, v, offset)`:
# the last 64 partial sums are added in registers. Either lane 0 leaves the block's sum in
# `sdata[0]` for the stub's last line, or it writes `out` from the register and you delete that last
# line (it sits below the marked part: left in, it writes `out` again from `sdata[0]`). The check launches
# N = 1 to 4103 in blocks of 64, 128, 256 and 1024 (kernel 5's loop needs a power of two of at
# least 64; N = 2 × block ± 1 among them), two elements per thread, and compares every block's sum
# with NumPy's. The target, read from warp 0's trace: **no more `__syncthreads()` than kernel 5's
# loop has, and from the first shuffle on at least five shuffles, each lane loading `sdata[tid]`
# and `sdata[tid + 32]` once at most** (reading back what the warp stored itself does not count),
# **and at most one shared-memory store** (a lane's store counts: only lane 0 stores, the block's sum).
# `reduction.exercises.shuffle.show(mine)` draws warp 0's
# last part lane by lane. On a GPU the check then times yours beside `reduce5` and a copy.

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
# The course's warp and block sums by shuffles live in `common.cuh`, shared with the dot product
# and the scan; `reduce_shfl` uses them:

# %%
source.show("reduction.cu", "warp_sum", "block_sum", "reduce_shfl")

# %% [markdown]
# `reduce_shfl` keeps kernel 7's loop (two loads in flight per thread) and replaces only the tree.
# It runs at kernel 7's speed, not faster: under one wave the tree runs once per block, a small
# part of a kernel that loops over N.

# %% [markdown]
# **16-byte loads.** Global memory moves in 32-byte *sectors*; a warp's request touches as few
# sectors as its addresses allow (*coalescing*). One 16-byte load per lane moves 512 bytes per
# request instead of 128, and `LOADS` of them are issued before any is used: four times the bytes
# in flight of kernel 7, for the same number of threads. From the traces, bytes and sectors per
# global load request:

# %%
reduction.load_requests(["reduce3", "reduce_vec4"])

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
# Thread 0 stores its block's sum in `partial`, `__threadfence()` makes that store visible to every
# other block *before* the ticket that follows it (without the fence, the last block could read a
# sum still on its way to memory), and `atomicInc` hands out tickets 0, 1, 2, … and wraps the
# counter to 0 for the next launch. The block that draws the last ticket knows every other sum is
# written. Every thread of that block then reads `partial[]`, thread `t` the sums `t`,
# `t + blockDim.x`, …, through a `volatile` pointer (from memory, not from a register or a stale
# cache line), and `block_sum` adds them with shuffles. One launch, the whole sum:

# %%
reduction.launch_table("reduce_single_pass", x)

# %%
print(reduction.run("reduce_single_pass", x) == reduction.reference(x))

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
# - **memory instructions with idle lanes**: divergence, counted over the instructions the trace
#   records (shared and global memory accesses, not barriers or the arithmetic between them);
#   **global sectors per load**: coalescing;
# - the **grid** and the most **elements per thread**, from the launch; on a GPU, the time of the
#   whole sum.
#
# It opens on blocks of 64, so the picture shows every thread of block 0 (two warps; it draws at
# most 64). Try `reduce5_article` with a block of 32, `reduce4_article` with N = 1000, or watch
# the barrier steps fall as the block shrinks.

# %% tags=["nbval-ignore-output"]
reduction.panel(version="reduce1", n=1000, block=64)

# %% [markdown]
# ## How fast on a GPU
#
# A reduction does one addition per 4 bytes it loads: it is limited by memory bandwidth, not by
# arithmetic. So its speed is counted in GB/s of data read, and held against a device-to-device
# copy timed in the same run. The copy moves the same number of bytes as the reduction reads, but
# half of them are read and half written (N × 4 / 2 bytes each way). A reduction only reads, so a
# good one can beat the copy (DRAM turns between reading and writing cost the copy time); the copy
# is a reference, not a ceiling.
#
# **The article's table, with both launches.** The article's `main()` launches every kernel with
# N / 128 blocks of 128; the fixed code gives kernels 4–6 half that and kernel 7 one wave. Each
# column is one launch policy, all in one run, the kernel alone (its block sums), median of 20
# CUDA-event timings with inputs rotated out of the L2 cache. The last row of each size is
# `cupy.sum`, the whole sum, and it is not the library call you might expect. NumPy's rules promote
# a sum of `uint32` to `uint64`, and CuPy hands a sum to CUB's `cub::DeviceReduce` (the CUDA C++
# library call) only when no promotion is needed. So this row is **CuPy's generic reduction
# kernel** (with CUB's block-level reduce inside it, CuPy's reduction accelerator), not
# `DeviceReduce`; `scripts/gpu_facts_reduction.py` checks the path on the GPU. `DeviceReduce`
# itself is timed in the float32 plot further down, where `cupy.sum` does reach it:

# %% tags=["nbval-ignore-output"]
table = reduction.article_table()
table

# %% [markdown]
# Read the N = 131 072 rows last: half a megabyte takes a few microseconds whatever the kernel, the
# time of a launch, not of memory. At 4 M and 32 M elements the steps of the story show.
#
# **The article's launch: three plateaus.** The article concludes that the optimisations come in
# "three plateaus" (三个台阶). Its column shows them: at 32 M, kernel 1 takes
# 298 µs<!-- from article_table: article µs @ N=33554432, kernel=reduce1 -->, kernel 2
# 220 µs<!-- from article_table: article µs @ N=33554432, kernel=reduce2 --> (no divergence), and
# kernels 3 to 7 all sit at 161 µs<!-- from article_table: article µs @ N=33554432, kernel=reduce6 -->
# to 165 µs<!-- from article_table: article µs @ N=33554432, kernel=reduce4 --> (no conflicts; 4 M
# shows the same). The third plateau is the article's launch, not the kernels: with N / 128 blocks,
# half the blocks of kernels 4 to 7 have nothing to add and kernel 7's loop never loops, and every
# block pays its price whether it loads or not (the kernels 4–6 section).
#
# **The fixed launches.** On this H100 kernel 4 nearly doubles kernel 3 at 32 M
# (162 µs<!-- from article_table: fixed µs @ N=33554432, kernel=reduce3 --> to
# 86.2 µs<!-- from article_table: fixed µs @ N=33554432, kernel=reduce4 -->; 1.7× at 4 M: half the
# blocks), kernels 5 and 6 add next to nothing (fewer instructions, the same blocks), and kernel 7
# over one wave gains again, 1.6× over kernel 6 at 32 M
# (82.8 µs<!-- from article_table: fixed µs @ N=33554432, kernel=reduce6 --> to
# 51.3 µs<!-- from article_table: fixed µs @ N=33554432, kernel=reduce7 -->) and 1.4× at 4 M
# (13.8 µs<!-- from article_table: fixed µs @ N=4194304, kernel=reduce6 --> to
# 10.2 µs<!-- from article_table: fixed µs @ N=4194304, kernel=reduce7 -->). That jump is the
# climax of Harris's deck, and the article's table never shows it. The `cupy.sum (generic)` rows
# take longer than the fixed kernel 7's, but they are a whole sum and kernel 7's are its block
# sums: its second pass, over 2112 block sums, is one more small launch, a few microseconds (the
# size of the launch-bound 131 072 rows; no cell times it alone). At 32 M that leaves kernel 7's
# whole sum ahead of the generic kernel's (51.3 µs<!-- from article_table: fixed µs @ N=33554432, kernel=reduce7 -->
# against 65.8 µs<!-- from article_table: fixed µs @ N=33554432, kernel=cupy.sum (generic) -->); at 4 M
# the second pass may take the whole gap (10.2 µs<!-- from article_table: fixed µs @ N=4194304, kernel=reduce7 -->
# against 13.8 µs<!-- from article_table: fixed µs @ N=4194304, kernel=cupy.sum (generic) -->).
# Outside the course, call CUB's `cub::DeviceReduce::Sum` from CUDA C++ with a 64-bit output: it
# adds in its output's type, so `unsigned int` in and `long long` out sums in 64 bits in one pass,
# with no widening. This table has no row for it (the course's GPU run timed CUB on `uint32` only
# with a 32-bit output, which wraps: 49.6 µs<!-- given: reference --> at 32 M,
# `docs/notes/reduction-gpu-facts.md` step 5); a 64-bit output reads the same 4 bytes an element.
# Do not widen the input to `long long` first and then reduce: the widening reads 4 bytes an
# element and writes 8, which the sum reads again, five times the bytes. From Python, `cupy.sum` of
# `uint32` promotes and takes the generic row above; NVIDIA's `cuda-cccl` package (in public beta)
# calls CUB's device reduction itself, as `cuda.compute.reduce_into(d_in, d_out, op, num_items,
# h_init)`, with the input wrapped in a `TransformIterator` that widens each element to `int64` as
# it is loaded and an `int64` output and initial value (the course does not time it).
#
# **Then and now.** Harris measured on a G80 (86.4 GB/s<!-- given: article --> peak) at 4 M
# elements; here, each GPU against its own DRAM peak, this one at 32 M elements, where its copy
# reaches 83.6 %<!-- from g80_comparison: % of peak @ kernel=device copy --> of it:

# %% tags=["nbval-ignore-output"]
reduction.g80_comparison(table)

# %% [markdown]
# On both GPUs kernels 1 to 3 climb and kernel 7 ends near three quarters of each peak
# (72.5 %<!-- from g80_comparison: G80 % of peak @ kernel=reduce7 --> on the G80,
# 78 %<!-- from g80_comparison: % of peak @ kernel=reduce7 --> on this H100); they part on 4 to 6.
# On the G80 each of kernels 4, 5 and 6 took a large step towards the peak: there issuing the
# instructions took time of the same order as the run, and each cut showed. On this H100 kernel 4
# takes a step (half the blocks) and kernels 5 and 6 almost none: issue is no longer what the time
# waits for, starting the blocks is. The
# lessons that carry over are the first three and kernel 7's; the instruction cuts of 5 and 6 are a
# G80 lesson, and on this GPU fewer blocks and bytes in flight replace them. The copy row says what "peak" means in practice: no kernel that reads and writes gets much
# closer to the number on the box.
#
# **Beyond the article, against N.** The fixed kernel 7, the shuffle, 16-byte and one-pass kernels
# (each the whole sum, on the GPU) beside the libraries, `cupy.sum` and CUB's
# `cub::DeviceReduce::Sum` called directly, and the copy, from 2^16 to 2^28 elements (the
# article's nine sizes lie between 2^17 and 2^25):

# %% tags=["nbval-ignore-output"]
records = reduction.speed_against_n()
fig, ax = plt.subplots(figsize=(8, 4))
reduction.plot_speed(ax, records)

# %% [markdown]
# Below 2^20 every kernel is launch-bound (a few microseconds): compare nothing there. On this
# H100, from 2^26 on the one-pass kernel reads a little faster than the copy moves the same bytes.
# `cupy.sum` and CUB's `DeviceReduce::Sum` (one line over the other: a float32 sum needs no
# promotion, so here `cupy.sum` is `DeviceReduce`) match the
# copy at 2^26 and pass it at 2^28; `reduce_vec4` stays just short of the copy at 2^26 and passes
# it at 2^28. Kernel 7 and `reduce_shfl` (drawn on top of each other; `reduce_shfl` dashed) sit
# lower, short of bytes in flight. From 2^18 to 2^26 the one-pass kernel is the fastest sum in the
# plot, CUB included, but at 2^22 it stays short of the copy: its last block's round trips to L2
# (store, ticket, read the block sums) cost more than a microsecond on a job of about ten
# (`docs/reduction-tail.md` measures each link, on an H200). The full sweep and the course's goals
# are in `docs/benchmarks/`.
#
# ## Summary
#
# - A tree reduction's cost is first in *how threads address memory*: `tid % (2*s)` leaves every
#   warp divergent, `2*s*tid` causes bank conflicts (more with 8-byte sums), sequential addressing
#   avoids both. A warp with no adding lane still runs the loop and every barrier.
# - Then, on Harris's G80, in *instructions*: add during the load, unroll the last warp (with
#   `__syncwarp()`, not `volatile`), unroll the loop with a template. On this H100 only the add
#   during the load pays, because it halves the blocks: the GPU starts blocks of 128 at a fixed rate
#   (an empty kernel on kernel 3's grid takes nearly kernel 3's time), and a block that reads 512 B or 1 KB
#   does too little to hide it, whatever its instructions. Kernels 5 and 6 cut the issue floor by a third and more and gain a
#   few percent.
# - Then in *blocks and bytes in flight*: a grid-stride loop over one wave (Brent's theorem) pays
#   the price per block once; occupancy (threads, block slots, registers, shared memory per SM) says
#   how many blocks make a wave; the loads those blocks keep in flight, against the latency under
#   load (Little's law), set the speed, and 16-byte loads put more bytes behind each.
# - Shuffles make the block's sum simpler, not faster: with one wave the tree runs once per block. One pass
#   saves the second launch; its last block's round trips are what is left at small N. Outside the
#   course, CUB's `DeviceReduce` (`cupy.sum` reaches it when the sum needs no type promotion; from
#   C++, give 32-bit integers a 64-bit output rather than widening them first).
# - The article's code reads past the end of `x` unless N is a multiple of 2 × block, relies on
#   warp-synchronous `volatile` code that has been a race since Volta, reads past shared memory
#   with blocks under 64 threads (kernel 5) and of 2 to 32 threads (kernel 6), adds two `unsigned
#   int`s before widening them (kernels 4 to 7), launches nothing for kernel 6 at a block of 1024, times
#   itself with a race on one word, and launches kernel 7 so that its loop never loops.

# %%
course.my_progress("reduction")

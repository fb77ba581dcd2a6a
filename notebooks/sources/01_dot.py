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
# # 1 · Dot product: a grid-stride loop, atomics, and what float32 does to a sum
#
# The dot product a · b = a₀b₀ + a₁b₁ + … + a₍N₋₁₎b₍N₋₁₎ is the smallest kernel that has everything
# a GPU reduction has: every thread multiplies its own elements, and then the products of thousands
# of threads must be added into one number.
#
# This notebook follows the blog post *[CUDA]CUDA编程实战五——dot向量点积运算* ("CUDA in practice 5:
# the dot product", wildkid1024, 2021). It takes a[i] = i and b[i] = 2i, so the answer is twice a
# sum of squares, and writes three kernels: one block in which thread 0 adds up every product; a
# **grid-stride loop** whose threads add into memory with **atomicAdd**; and a grid-stride loop
# followed by a tree in shared memory. Each is shown, run on the course's emulator, checked, and
# where it is wrong, the checker or the emulator shows the bug before it is fixed. Then the
# notebook goes past the article: warp shuffles, 16-byte loads, and two ways to make a float32 dot
# product **accurate**, because the article's own data loses digits after 369 additions.
#
# The tree that adds a block's partial sums is notebook 5's subject; here it comes ready-made from
# the course's shared header. The lessons of this notebook are the grid-stride loop, atomics, and
# accuracy. Every cell runs without a GPU; on a GPU the timing cells measure. Eight exercises sit
# where their idea is taught: three predictions, four kernels to write and a grid to choose.

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
from course import dot, source

course.notebook()

# %% [markdown]
# ## The problem, and the answer to check against
#
# With a[i] = i and b[i] = 2i for i < N, the dot product is 2 · (0² + 1² + … + (N−1)²) =
# (N−1) · N · (2N−1) / 3, an integer we can compute exactly. `dot.reference(a, b)` multiplies in
# float64 (a float32 × float32 product is exact there), adds in twice float64's precision (the sum
# kept as a pair of float64 numbers) and rounds once to float32. On the article's data that is
# exact: every partial sum is an integer below 2⁵³, so no addition rounds. On other float32 data
# (the random vectors further down) it is not exact, but its error, at most about
# N · 10⁻³² × Σ|aᵢbᵢ|, is far below float32's rounding of the answer unless the products cancel
# almost completely. The article checks its kernels against the closed form, but evaluated in
# `float`:

# %%
a, b = dot.article_inputs(1024)
print("a[:5] =", a[:5], " b[:5] =", b[:5])
print("exact (N-1) N (2N-1) / 3   =", dot.article_answer(1024))
print("dot.reference(a, b)        =", float(dot.reference(a, b)))  # float(): its exact value
print("the article's check, float =", dot.article_check(1024))
print("at N = 1000: float", dot.article_check(1000), " exact", dot.article_answer(1000))

# %% [markdown]
# At N = 1024 the answer, 714 779 648, happens to be a float32 number (it is a multiple of 64), so
# the article's float check is right. At N = 1000 the check itself is off by 8: `float` has a 24-bit
# significand, and 665 667 000 needs more. Keep that in mind: it is the theme of this notebook.
#
# ## Version 1 (the article's): one block, thread 0 adds
#
# Each thread of one block computes one product into **shared memory** (the block's fast on-chip
# scratch), `__syncthreads()` waits until every product is written, and thread 0 adds them up and
# prints the sum with the device's `printf`:

# %%
source.show("dot.cu", "dot1_article")

# %% [markdown]
# The article launches it as `dot_simple<<<1, 1024>>>(A, B, C)`: one block of 1024 threads, one
# element each. Run as the article's program runs it, it prints two lines:

# %%
dot.article_program(1024)

# %% [markdown]
# The article calls this result correct. It is not quite: the kernel printed 7.14779e+08, the check
# 7.1478e+08 (`%g` drops trailing zeros: 7.14780e+08). The digits differ in the sixth place. Side by
# side with the exact answer, the fixed kernel below (a `float` sum in the same order) and a tree
# (version 3 further down, in one block of 1024):

# %%
dot.article_sums(1024)

# %% [markdown]
# Thread 0's sum is 768 short, whether it adds into an `int` or a `float`; the tree is exact. Where
# does the one-by-one sum start to lose, and why?

# %%
dot.running_sum_table(1024)

# %% [markdown]
# A float32 number has 24 significant bits. Up to 2²⁴ = 16 777 216 it holds every integer; from 2²⁴
# to 2²⁵ only the even ones, from 2²⁵ to 2²⁶ multiples of 4, and so on: the *spacing* between
# neighbouring float32 numbers doubles with every power of two. The products 2i² are even, so the
# running sum stays exact past 2²⁴; at i = 369 it passes 2²⁵ = 33 554 432, where the spacing is 4,
# and 2i² of an odd i (≡ 2 mod 4) falls halfway between two float32 numbers: the add rounds. By
# the end the running sum is near 7·10⁸, where the spacing is 64:

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
dot.draw_running_sum(axes, 1024)

# %% [markdown]
# Left, the staircase of float32 spacings under the growing sum; right, what the sum has lost. It
# is not noise: it is a drift, in straight pieces. Zero until i = 369; then a straight line down,
# 2 lost at every odd i, through spacings 4 and 8, to −218 at i = 585. The rounded sum is a
# multiple of 8 there, and 2i² of an odd i is 2 more than a multiple of 8 (an odd square is 1
# more), so every such add ends 2 above a float32 number and is rounded down to it (at spacing 4 it
# is a tie, and the tie goes to the even significand: the same multiple of 8). Past 2²⁷ (spacing
# 16) a steeper line, to about −680 at i = 737. Past 2²⁸ (spacing 32) the drift turns: a sawtooth
# that climbs back to about −480 by i = 929; past 2²⁹ (spacing 64) down again, to −768. Each piece
# has its slope because the products fall between float32 numbers in a regular pattern at that
# spacing: the rounding is biased, one way for a stretch, and the errors add up instead of
# cancelling. Any running sum of many positive terms has the same trouble: the sum grows, its
# spacing grows with it, and every term added is rounded to that spacing. The tree avoided it by
# adding numbers of similar size: pairs first, then pairs of pairs.
#
# **Exercise 1. Predict, then check: where a float32 sum first rounds.** For each data set below
# (products 3i², 5i², and 2²⁵ ones), predict the first i whose float32 add rounds when the products
# are added one by one from i = 0. Replace each `None`. Each exercise in this notebook is checked
# by a call like this one: `check` says what is wrong and the rule to apply, never the answer;
# `dot.exercises.<name>.hint()` gives one hint more each time you ask.

# %%
my_first = {  # the first i whose add rounds
    "a[i] = i, b[i] = 3i": None,
    "a[i] = i, b[i] = 5i": None,
    "a[i] = b[i] = 1, N = 2^25": None,
}
dot.exercises.rounding.check(my_first)

# %% [markdown]
# **The article's bugs.** `sum` is an `int`. On the article's whole-number products the truncation
# costs nothing, but every `sum += temp[i]` converts sum to float, adds, and truncates back to an
# int: a fraction never survives. On random standard-normal vectors (one block of 1024):

# %%
dot.int_sum(1024)

# %% [markdown]
# After every add the fraction is cut off, toward zero: a product smaller than 1 in size (most of
# them here) added to 0 vanishes, and every other add loses its fraction. The `int` ends at 0; the
# true answer is −59.8, and the fixed kernel's `float` gets it to 7 digits.
#
# Second, `temp` is indexed with the *global* index `i = threadIdx.x + blockIdx.x * blockDim.x`,
# and thread 0 of the grid reads `temp[0..N-1]`. With one block that is the same thing; with four
# blocks of 256, block 0's shared memory holds only its own 256 products, and thread 0 reads 768
# elements no thread of its block wrote (a GPU would hand it whatever the last kernel left there).
# The course's checker runs the kernel on the emulator, which remembers which bytes were written,
# and names the reads:

# %%
dot.check("dot1_article", a, b, block=256)

# %% [markdown]
# Third, there is no bounds check, so grid × block must be exactly N. With N = 1000 and the
# article's block of 1024, threads 1000–1023 read past the end of `a` and `b`. On a GPU, `dot.run`
# refuses this launch (a stray read can fault and poison the CUDA context); `dot.trace` runs it on
# the emulator, which stops at the first stray read and says who made it:

# %%
with course.expect_error():
    dot.trace("dot1_article", *dot.article_inputs(1000), block=1024)

# %% [markdown]
# And the design limits itself: a block holds at most 1024 threads, so N ≤ 1024, and `temp[N]` is
# static shared memory, at most 48 KiB (N ≤ 12 288) even if the indexing were fixed.
#
# **The fix.** Index shared memory by `threadIdx.x` (each block has its own), let threads past N
# contribute 0, add into a `float`, and leave one partial sum per block in `c[blockIdx.x]`; any
# number of blocks then works. `temp` becomes *dynamic* shared memory, sized at launch:

# %%
source.show("dot.cu", "dot1")

# %% [markdown]
# **The launch.** A kernel runs as a *grid* of *blocks* of threads. Here N = 1000 needs
# ⌈1000 / 256⌉ = 4 blocks of 256; `shared_mem` gives each block 256 × 4 bytes for `temp`; `c`
# receives the 4 partial sums, which the host adds, as the article's later versions do. This is the
# call `dot.run` makes for you, written out once:

# %%
n = 1000
a, b = dot.article_inputs(n)
block = 256
grid = (n + block - 1) // block
k1 = dot.kernel("dot1", np.float32)
c = course.zeros(grid, np.float32)
k1((grid,), (block,), (course.asarray(a), course.asarray(b), c, np.int32(n)), shared_mem=block * 4)
print(f"{grid} blocks of {block}, a partial sum each:", course.asnumpy(c))
print("added on the host:", int(course.asnumpy(c).sum(dtype=np.float32)), "  exact:", dot.article_answer(n))

# %% [markdown]
# The host's float32 sum is 665 666 304, 696 short of the exact 665 667 000: each thread 0 rounded
# as it went, as above (blocks 2 and 3 run past 2²⁷, where the spacing is 16 and 32), and the host's
# three additions round again. That is about 10⁻⁶ of the answer, well inside the tolerance the course
# holds float32 answers to (10⁻⁵ of Σ|aᵢbᵢ|). `dot.run("dot1", a, b)` makes the same launch and then
# adds the partial sums on the GPU with a second, small kernel (`dot_sum_partials`, in the same
# file), so every version here delivers the whole answer on the device. `dot.verify` runs versions
# and holds each to the exact dot within that tolerance:

# %%
dot.verify(a, b, ["dot1"])

# %% [markdown]
# **What thread 0 costs.** In one block of 256, counted from the trace of block 0: dot1's thread 0
# makes 64 shared-memory loads (16 bytes each: the compiler reads four products at a time) with no
# other lane of its warp active. Nobody else waits for it: warps 1 to 7 leave the kernel after the
# barrier, and lanes 1 to 31 of warp 0 sit masked off. What it costs is the block's place on the SM:
# the block (its slot, its shared memory) stays resident until thread 0 is done, and no new block
# can take that place. The same block as a tree (version 3) and with warp shuffles (beyond the
# article) for comparison:

# %%
dot.block_work()

# %% [markdown]
# dot1 chains 256 additions on one lane; dot3's tree spreads them over 8 steps, but every step ends
# at a barrier that all 8 warps must reach (9 barriers with the first: 72 warp stops, against
# dot1's 8, in the table's fifth column); dot_shfl does the block's sum
# in registers with 45 shuffle instructions (5 per warp, and 5 more in warp 0) and one barrier.
# Fewer steps is not the same as less time: the tree's barriers hold all 8 warps 9 times, dot1's
# chain holds one lane while the other warps have left. Which costs more per block is for a GPU to
# say (the timing section measures both under the article's launch). What matters more is how
# often a block pays it: with one element per thread, once per 256 products.
#
# **Exercise 2. Predict, then check: what one block costs.** For blocks of 128 and of 1024 threads
# (one element each, as above), predict the three counts the table gives for 256 (it shows blocks
# of 256 only: work the others out from the kernels' loops): dot1's shared loads by one lane alone,
# dot3's barriers, dot_shfl's shuffle instructions.

# %%
my_costs = {  # (dot1: shared loads by one lane alone, dot3: barriers, dot_shfl: shuffles)
    "blocks of 128": (None, None, None),
    "blocks of 1024": (None, None, None),
}
dot.exercises.block_cost.check(my_costs)

# %% [markdown]
# ## Version 2 (the article's): a grid-stride loop and atomicAdd
#
# The article's second kernel lifts the 1024 limit with a **grid-stride loop**: thread g of the
# grid (g = threadIdx.x + blockIdx.x · blockDim.x) adds a[g]·b[g], then moves on by a stride T and
# adds a[g + T]·b[g + T], and so on while the index is below N. T is the same for every thread,
# and chosen so that on each trip the threads of the whole grid take the next stretch of the
# array together, with no gaps and no overlap. Then any grid covers any N, and each thread keeps
# its running sum in a register. After the loop each thread adds its sum into `c[threadIdx.x]`
# with **atomicAdd** (threads of different blocks add into the same word), and the host adds the
# 256 words of c.
#
# **Exercise 3. Fix: the stride.** Before reading the article's loop, write its stride yourself.
# This kernel adds a · b into `out[0]` with `block_sum` (the block's sum in registers, from the
# course's shared header: *Beyond the article* shows it) and one atomic per block, but its loop's
# stride is wrong. It is right with one block; find out what goes wrong with several, and fix it.
# The check runs it on N from 1 to 77 777 with one to eight blocks of 32 to 256, counts how many
# times each element of `a` was loaded (once is right), compares the answer with the exact dot,
# and holds each warp's loads to the 32-byte sectors their bytes need (at most 1.5 times the
# fewest, from the trace: neighbouring threads must read neighbouring elements). On a GPU it then
# times your kernel beside `dot_vec4` and a copy of the same bytes.
# `dot.exercises.stride.show(mine)` draws your loop: a row per trip, each element coloured by the
# warp that loaded it, a red line under loads of elements loaded more than once (the article's loop
# is drawn the same way below).

# %%
mine = r"""
#include "common.cuh"
extern "C" __global__ void dot_mine(const float* a, const float* b, float* out, int n) {
    __shared__ float scratch[32];
    float sum = 0;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x) {
        sum += a[i] * b[i];
    }
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) atomicAdd(out, sum);
}"""
dot.exercises.stride.check(mine)

# %% [markdown]
# The article's kernel (its comment explains why not `+=`):

# %%
source.show("dot.cu", "dot2_article")

# %% [markdown]
# **The loop, from the trace.** Two blocks of 64 threads (four warps), N = 512: each row is one
# trip round the loop, each element coloured by the warp that loaded it. Thread 0 loads elements 0,
# 128, 256 and 384:

# %%
fig, ax = plt.subplots(figsize=(12, 3.6))
dot.draw_grid_stride(ax, n=512, block=64, grid=2)

# %% [markdown]
# In every trip the grid's 128 threads load 128 neighbouring elements, each warp 32 of them, so a
# warp's load is one contiguous 128-byte piece of `a`: *coalesced*, 4 sectors of 32 bytes per warp
# instruction (counted from traces in the 16-byte-load section below). The loop is what makes the
# grid's size a free choice: pick it for the GPU, not for N.
#
# **Atomics.** An atomicAdd is a read-modify-write that no other thread can interleave with: two
# atomics on one word are done one after the other, by the memory system (in the L2 cache for
# global memory). Every thread makes exactly one, after its loop, so the number of atomics is the
# number of threads, and each word `c[t]` receives one from thread t of every block. The article
# launches N / 256 blocks of 256: as many threads as elements, so the loop never loops. Counted from
# the traces at N = 4096, against a grid of 2 blocks and against `dot_shfl` (beyond the article: one
# atomic per block):

# %%
dot.atomic_table()

# %% [markdown]
# With the article's grid, every product becomes an atomic: 4096 of them, 16 on each word of c. With
# two blocks, each thread first adds 8 products in its register, and 512 atomics reach memory, 2 on
# each word. `dot_shfl` adds each block's sum once: 2 atomics. At the sizes a GPU is for, N = 2²⁸,
# the same counts follow from the launches (one wave is as many blocks as the GPU's SMs hold at
# once: 8 blocks of 256 on each of 132 SMs):

# %%
dot.launch_arithmetic(2**28)

# %% [markdown]
# The article's launch makes 268 million atomics, a million on each word of c, each waiting for the
# one before it on that word; one wave makes 270 336, and each thread adds 993 products first.
# Drawn from the traces at N = 2048 with blocks of 64: the atomics on each slot of c, stacked in the
# order they landed, under the article's launch (32 blocks) and with 4 blocks:

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 4))
dot.draw_slot_atomics(axes, n=2048, block=64, grid=4)

# %% [markdown]
# Left, 32 atomics pile up on every slot, each carrying one product; right, 4, each carrying a
# thread's sum of 8. The heights are the whole story: the atomics on one slot are done one after
# another, so the tallest stack is the longest wait. (The emulator lands them block by block; a GPU
# lands them in whatever order its blocks get there, and that order changes from run to run: the
# accuracy section comes back to it.)
#
# **Exercise 4. Predict, then check: the atomics of three launches.** N = 10 000 (not a multiple of
# 256), blocks of 256, the article's data. For each launch, predict three numbers: the atomics that
# reach memory, how many of them land on the busiest word (a slot of c for dot2, out[0] for
# dot_shfl, which adds each block's sum once: it comes later, under *Beyond the article*), and the
# most elements of `a` one thread loads. Replace each `None`; the check counts them from traces.

# %%
my_counts = {  # (atomics, on the busiest word, most loads of a per thread)
    "dot2_article, N / 256 blocks": (None, None, None),
    "dot2, 8 blocks": (None, None, None),
    "dot_shfl, 8 blocks": (None, None, None),
}
dot.exercises.atomics.check(my_counts)

# %% [markdown]
# **The article's bug: c is never zeroed.** `c` comes from `cudaMalloc`, which does not clear
# memory, and `atomicAdd` adds to whatever is there. The checker sees the atomics read words that
# nothing wrote (on the emulator, fresh memory holds garbage, as a GPU's may):

# %%
dot.check("dot2_article", a, b)

# %% [markdown]
# The three blocks make 768 atomics on 256 words, and atomics on one word take turns: only the
# first on each word finds it unwritten (the 256 reads above), and the other two add to what it
# wrote. Which block comes first is the scheduler's choice: here block 1's.
#
# Freshly allocated GPU memory is often zero, which is why the article saw the right answer. Run the
# program again on the same `c` without clearing it, as a timing loop or a second call would:

# %%
dot.reruns_without_zeroing(1024, runs=3)

# %% [markdown]
# Each run adds the whole dot product on top of the last one. (The first run is also 1152 short of
# the exact 714 779 648: the host's one-by-one float32 sum of the 256 words rounds, as thread 0's did.)
# The `__syncthreads()` at the end of the kernel orders nothing: no thread reads anything after it.
#
# Two more gaps in the article's host code. `dim3 blocks(N/256)` is 0 blocks for N < 256: an
# invalid launch, which the program would not notice, because it checks the error of no CUDA call
# (neither the launch nor a `cudaMalloc` or `cudaMemcpy`) and would go on to print whatever c
# held. The course launches at least one block instead, and then the kernel's `c[threadIdx.x]`, 256
# slots, runs past a c of N floats:

# %%
with course.expect_error():
    dot.trace("dot2_article", *dot.article_inputs(200))

# %% [markdown]
# The error stops at the first warp that faulted and counts that warp's threads (224 to 255); every
# thread from 200 to 255, 56 in all, has a slot past the end of c.
#
# **The fix** is mostly on the host: zero c (blockDim.x words) before every launch, and launch one
# wave, so that each thread loops. The kernel takes N as an argument:

# %%
source.show("dot.cu", "dot2")

# %% [markdown]
# The launches `dot.run("dot2", ...)` makes for N = 1000 (c is zeroed before the first): the grid is
# one wave at most, fewer blocks when N needs fewer, then `dot_sum_partials` adds the 256 words:

# %%
dot.launch_text("dot2", a, b)

# %% [markdown]
# At N = 1000 one wave would leave most threads with nothing to do, so the grid is 4 blocks; at
# N = 2²⁸ it is the 1056 blocks above.

# %% [markdown]
# ## Version 3 (the article's): a grid-stride loop and a tree per block
#
# The third kernel keeps the loop, writes each thread's sum to shared memory, and adds a block's
# sums in a tree: 128 threads add pairs, then 64, … then 1, with a `__syncthreads()` between steps.
# Each block leaves one sum in `c[blockIdx.x]`, no atomics. This is kernel 3 of notebook 5
# (*sequential addressing*): no divergence in a warp until fewer than 32 threads add, no bank
# conflicts. Notebook 5 draws the tree step by step; here, counted from the trace of one block:

# %%
source.show("dot.cu", "dot3_article")

# %%
dot.tree_steps(256)

# %% [markdown]
# 255 additions in 8 steps, the busy warps halving; from step 3 on one warp does all the adding.
# That is the article's point for this version: the block's last additions take log₂ 256 = 8 steps
# instead of 256 additions one after another (by thread 0 in version 1, by the host in version 2).
# Fewer steps is not yet less time: each step ends at a barrier of the whole block, and the timing
# section times both under the article's launch.
#
# **The article's bugs.** The kernel is right with its blocks of 256 (the host adds the block sums
# in float32):

# %%
dot.verify(*dot.article_inputs(1024), ["dot3_article"])

# %% [markdown]
# but `cache` has a fixed 256 slots: a block of 512 writes past it. The emulator stops at thread 256:

# %%
with course.expect_error():
    dot.trace("dot3_article", *dot.article_inputs(1024), block=512)

# %% [markdown]
# And the article's host code for this version launches `dot2`, not `dot3`, then adds
# `c[0 .. N/256)` as if they were block sums: the sums of dot2's first 4 slots, about 1 % of the
# answer (the article reports only a time for it):

# %%
dot.listing3_table(1024)

# %% [markdown]
# **The barrier inside the `if`.** The article warns that the tree's second `__syncthreads()` must
# stay outside `if (cacheIdx < num)`: `__syncthreads()` waits for *every* thread of the block, and
# the threads that skip the `if` never arrive. Here is the kernel with the barrier moved inside:

# %%
source.show("dot.cu", "dot3_sync_in_if")

# %% [markdown]
# On a GPU this is undefined behaviour: it may hang, or let the threads through early and add the
# wrong values. The emulator tracks which threads reach which barrier, and the checker names the
# line and the threads:

# %%
dot.check("dot3_sync_in_if", *dot.article_inputs(512), block=256)

# %% [markdown]
# The rule, in the checker's words: guard the work, not the barrier.
#
# **The fix.** N as an argument, and `cache` as dynamic shared memory, one slot per thread, so any
# power-of-two block up to 1024 works; the launch gives it `shared_mem = block × 4` bytes:

# %%
source.show("dot.cu", "dot3")

# %%
dot.launch_text("dot3", a, b)

# %% [markdown]
# **The article's timings.** The article reports 108, 90 and 92 ms<!-- given: article --> for its three programs. They were
# measured with `gettimeofday` around all of `main()`: CUDA's start-up, `cudaMalloc`, the copies,
# the kernel and the frees, for vectors of 1024 floats. The kernels themselves take microseconds.
# On a GPU, the kernel alone (CUDA events) beside what the course's host side takes (copy a and b
# over, launch, copy the answer back):

# %% tags=["nbval-ignore-output"]
dot.article_timings()

# %% [markdown]
# On a GPU the kernels take microseconds and the host's part about a tenth of a millisecond: the
# article's milliseconds were CUDA's start-up, and its comparison of 108 against
# 90 ms<!-- given: article --> says nothing about the kernels. dot1_article is the longest, at
# 42.3 µs<!-- from article_timings: kernel (µs) @ program=dot1_article -->, and not because of its
# 1024 additions as such: under the article's launch at 2²⁸ (timing section) 1 048 576 blocks of
# dot1 run 1056 at a time in about a millisecond, so a block, its chain of 256 float adds
# included, lives about a microsecond, and 1024 such adds take a few µs. The rest is two things of
# the article's code, timed apart on this H100 by `scripts/gpu_facts_dot.py` (step 7): the device
# `printf` at the end, more than half of it (without the printf the kernel takes
# 18.8 µs<!-- given: reference -->), and the `int` accumulator, which puts two conversions into
# every step of the chain (add in float, convert to int, convert back for the next add: three
# dependent instructions per product instead of one): dot1 in one block of 1024, the same chain in
# float, takes 7.4 µs<!-- given: reference -->, of which about 3 µs<!-- given: reference --> is any
# launch's floor. The `int` bug costs time as well as accuracy. The timing section below measures
# the kernels at sizes where they matter.
#
# ## Beyond the article
#
# **Warp shuffles, one atomic per block.** A block's tree needs neither shared memory nor a barrier
# per step: `__shfl_down_sync(mask, v, k)` hands each lane the register `v` of the lane k above it,
# so a warp adds its 32 values in 5 steps, and a block adds its warps' sums the same way. Notebook 5
# builds these step by step; the course keeps them in a shared header, `common.cuh`, which the dot
# product, the reduction and the scan all include:

# %%
source.show("dot.cu", "warp_sum", "block_sum", "dot_shfl")

# %% [markdown]
# Thread 0 of each block adds its block's sum into `out[0]` (zeroed by the host) with one atomicAdd:
# the whole dot product is on the device after one launch, and the atomics are as few as the blocks.
#
# **16-byte loads.** A warp's load of one float per lane moves 128 bytes. Loading a `float4` (four
# floats in 16 bytes) per lane moves 512 bytes per instruction: the same bytes in a quarter of the
# instructions, and four times the bytes each load has in flight.
#
# **Exercise 5. Write: 16-byte loads and the tail.** Make this kernel read a and b as `float4`, 16
# bytes per lane, in the same grid-stride loop, and add the last `n % 4` elements one by one. The
# check runs it on N from 1 to 77 777 (multiples of 4 and not) with one to eight blocks, reads the
# trace to count how often each element of a and b was loaded (once) and how many were loaded
# fewer than 16 bytes at a time (at most the `n % 4` of the tail), compares the answer with the
# exact dot, and holds each warp's loads to the 32-byte sectors their bytes need (at most 1.5
# times the fewest: neighbouring lanes read neighbouring float4s). On a GPU it then times your
# kernel beside `dot_vec4`. `dot.exercises.vec4.show(mine)` draws your first load of a: its lanes
# and the 32-byte sectors they touch.

# %%
mine = r"""
#include "common.cuh"
extern "C" __global__ void dot_vec(const float* a, const float* b, float* out, int n) {
    __shared__ float scratch[32];
    const unsigned int first = blockIdx.x * blockDim.x + threadIdx.x, stride = blockDim.x * gridDim.x;
    float sum = 0;
    // FILL ME IN (about 8 lines): replace this loop by one over float4s (n / 4 of them, a and b
    // read 16 bytes at a time), then add the last n % 4 elements one by one
    for (unsigned int i = first; i < n; i += stride) {
        sum += a[i] * b[i];
    }
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) atomicAdd(out, sum);
}"""
dot.exercises.vec4.check(mine)

# %% [markdown]
# The course's version goes one step further: `LOADS` vectors (2 here) are issued for a and for b
# before any is used, so each thread has 64 bytes of loads in flight instead of 8. Its loop is a
# template over the accumulator, so the next two versions reuse it:

# %%
source.show("dot.cu", "accumulate", "dot_vec4")

# %% [markdown]
# From the traces at N = 8192: bytes and 32-byte sectors per global load instruction, and how many
# load instructions the launch needed:

# %%
dot.load_table()

# %% [markdown]
# The same bytes in a quarter of the instructions, every sector of each request used. The vector
# path needs a and b 16-byte aligned (CuPy's arrays are; a view such as `a[1:]` is not, and then the
# kernel takes the 4-byte path for every element). The timing section measures what the wider loads
# and the loads in flight buy.
#
# ## Accuracy: what the order of the additions does
#
# The versions differ in the *order* of their additions, and in float32 the order decides the
# rounding. They also differ in one more step: dot1 multiplies first (`mul.f32`: each product
# rounded to float32) and then adds, but the grid-stride kernels' `sum += a[i] * b[i]` compiles to
# one fused multiply-add (`fma.rn.f32` in their PTX: the exact product added to the sum, with one
# rounding). A thread's sum starts at 0, though, and an fma into 0 is just the rounded product: in
# dot2, dot3, dot_shfl and dot_vec4 each thread rounds its first product on its own and fuses only
# the ones after it. How many come after depends on the grid: at the N below, dot2, dot3 and
# dot_shfl launch one thread per element, so every product they add is rounded, as in dot1, and
# dot_vec4's 32 blocks (fewer than a wave: N needs no more) give each thread 8 (the table's labels
# say so). The article's data at
# N = 2¹⁶ (exact answer 187 645 689 528 320, where float32's spacing is 16 777 216), added in NumPy
# one by one forwards and backwards and in pairs with each product rounded first, one by one with
# fma, and by each version's kernels on the emulator:

# %%
dot.order_table(2**16)

# %% [markdown]
# One by one from the small end lands 2 spacings off; from the large end 177 spacings, because once
# the sum is big, the small products that come last are rounded away. In pairs, partial sums meet
# partners of similar size, and the answer is within a spacing: the trees of dot1–dot_vec4 and their
# per-thread sums all land within about 3 spacings. The fma row lands exactly where the rounded
# products' row does: a product here is below 2³³, so rounding it moves it by at most 256, while
# the sum it joins is rounded to a spacing of up to 16 777 216. On this data the order decides,
# not the products' own rounding. (The accuracy plot below models each kernel as it compiles: fma
# sums for the grid-stride kernels, a thread's first product rounded by its fma into 0, and rounded
# products for one thread adding one by one.) dot_f64 adds the products in float64, and
# dot_compensated adds in float32 with a trick that exercise 7 asks you to find: both exact here.
#
# **Deterministic, or not.** The last column is the other half of the story. dot1 and dot3 leave one
# sum per block in its own word, and `dot_sum_partials` adds them in a fixed order: the same bits
# every run. dot2, dot_shfl, dot_vec4 and dot_f64 add with atomics, and the order atomics land in is
# the order the blocks happen to get there, which changes from run to run on a GPU. The emulator
# cannot show that: it runs the blocks in one fixed order, so it gives the same answer every time.
# What it can show is the range of answers the GPU may give. The block sums of `dot_shfl` (computed
# by a NumPy model of its loop and `block_sum`, which reproduces the emulator's answer bit for bit),
# added in 1000 random orders, on one pair of random vectors of 2¹⁶:

# %%
orders = dot.atomic_orders(2**16)
orders

# %%
fig, ax = plt.subplots(figsize=(11, 3.6))
dot.draw_atomic_orders(ax, orders)

# %% [markdown]
# The same 256 numbers give 30 different float32 answers depending on the order: a spread of about
# 30 spacings, a relative spread of about 2·10⁻⁶ here. On a GPU the order is not yours to choose.
# This cell runs every version five times on one pair of random vectors of 2²⁴ and counts the
# different answers. On the H100 this notebook ran on, every version that adds with atomics gave a
# different answer on nearly every run (dot2, dot_shfl, dot_vec4, and dot_f64 in its float64 bits),
# and dot1, dot3, dot_compensated and the library's two dots, `cupy.dot` and `cupy.cublas.dot`, one:

# %% tags=["nbval-ignore-output"]
dot.repeat_table()

# %% [markdown]
# When the bits must repeat (a test that compares answers exactly, a reproducible training run), add
# in a fixed order: each block writes its sum to its own word, and the last block to finish adds
# them in block order. `cupy.dot` repeats its bits too: its last step is a reduction in a fixed
# order, with no atomics (*What to call outside this course* shows what it runs).
#
# **Exercise 6. Write: one launch, the same bits every run.** This kernel is dot_shfl with its
# atomic on `out[0]` still in place. Replace the atomic: thread 0 writes its block's sum to
# `partial[blockIdx.x]`, and the block that finishes last adds `partial[0]`, `partial[1]`, … in that
# order into `out[0]`. On a GPU blocks finish in any order, so a block learns it is the last from
# the counter `blocks_done`, which every block bumps once; the counter must be back at 0 when the
# launch ends, ready for the next one. The check runs six launches (N from 1 to 77 777, one to eight
# blocks), refuses any atomic on a float, counts one atomic on the counter per block, reads the
# trace for the order the block sums are read in and the compiled code for the counter's reset,
# and compares the answer with the exact dot.

# %%
mine = r"""
#include "common.cuh"
__device__ unsigned int blocks_done = 0;  // blocks finished so far: must be back at 0 after every launch

extern "C" __global__ void dot_ordered(const float* a, const float* b, float* partial, float* out, int n) {
    __shared__ float scratch[32];
    float sum = 0;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        sum += a[i] * b[i];
    }
    sum = block_sum(sum, scratch);
    // FILL ME IN (about 10 lines): instead of this atomic, thread 0 writes the block's sum to
    // partial[blockIdx.x]; the last block to finish adds partial[0], partial[1], ... into out[0]
    if (threadIdx.x == 0) atomicAdd(out, sum);
}"""
dot.exercises.ordered.check(mine)

# %% [markdown]
# **How the error grows with N.** The article's data has no cancellation (every product is
# positive). Random vectors do: the products have both signs and the answer is much smaller than
# the terms, so the same rounding errors weigh more. Lines: NumPy models of each way of adding,
# median over 3 random pairs of standard-normal vectors (up to 2²⁴ on a GPU, 2²² on the emulator);
# points: the kernels' own answers on the same vectors, run on this machine's backend. On a GPU the
# points are at 2²⁰, 2²² and 2²⁴, where one wave gives each thread 4 to 62 products and
# dot_vec4's block sums (up to 1056, one wave's) meet in one word; on the emulator, at 2¹⁰ to 2¹⁴, each thread has one
# product and the tails are short:

# %%
fig, ax = plt.subplots(figsize=(12, 5))
dot.draw_errors(ax)

# %% [markdown]
# One thread adding one by one (blue) loses more as N grows, to about 10⁻⁴ at 2²²: its running sum
# is big and every product is rounded to its spacing. No kernel here adds like that: the legend's
# "as dot1's" means dot1's arithmetic (rounded products added one by one), not dot1's error. dot1's
# thread 0 adds only 256 products per block and `dot_sum_partials` adds the block sums in trees, so
# its error (about 3·10⁻⁷ at 2²⁴ in the table below) sits with the orange line, not the blue. The orange line models dot3 as it runs in
# one wave: each of the wave's 270 336 threads adds its products into its register with an fma,
# and the per-thread sums are then added in a tree. Up to 2¹⁸ each thread has at most one product,
# so there the orange line is simply a sum in pairs; from 2²⁰ on each thread's running sum grows
# longer (62 products at 2²⁴). The line stays within about 13 times the float32 rounding of the
# exact answer (dashed; from 1 to 13 times at the sizes drawn), which no float32 answer can beat,
# whatever the order. The kernels do not
# all end in a tree: dot3 does (a tree per block, then `dot_sum_partials`), but dot2 ends with
# one atomic per thread on each word of c, and dot_shfl and dot_vec4 add their block sums into one
# float32 word one atomic after another: a short running sum again, of 1056 terms at one wave. On
# a GPU, dot_vec4's points and dot3's, three seeds each, are too few to show what that tail costs:
# on the H100 this notebook ran on they fall on either side of each other. The error table below
# measures it over 20 seeds at 2²⁴. On the emulator the grids are small and the tail is short.
# The points scatter around their lines by up to a factor of ten: each is a median of 3 seeds, and
# a handful of roundings decides the error. Errors of exactly 0 (the answer came out exact) are
# drawn on the labelled line at the bottom.
#
# **Exercise 7. Fix: an accurate float32 sum per thread.** Each thread of this kernel adds its
# products in a plain `float` and writes its own sum to `sums[g]`. Make every thread's sum accurate
# to within one float32 spacing of its exact value, **in float32 arithmetic**: the check reads the
# compiled code and refuses any `double` arithmetic. It runs on the article's data and on random
# positive products, N from 1 to 16 384; a plain sum is many spacings off.

# %%
mine = r"""
extern "C" __global__ void dot_accurate(const float* a, const float* b, float* sums, int n) {
    unsigned int g = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0;
    for (unsigned int i = g; i < n; i += blockDim.x * gridDim.x) {
        s += a[i] * b[i];
    }
    sums[g] = s;
}"""
dot.exercises.accurate.check(mine)

# %% [markdown]
# **Two ways past float32.** `dot_f64` widens each product to double (a float32 × float32 product is
# exact in double) and adds in double. `dot_compensated` stays in float32 arithmetic but carries every
# sum as a pair (s, c): each product's rounding error is recovered exactly with an `fma`
# (TwoProduct), each addition's with five float operations besides the addition itself (TwoSum, six
# in all), and the errors are summed in c (two adds more). The result is as accurate as a sum in twice the precision (Ogita, Rump and Oishi's *Dot2*, 2005),
# and the last block merges the blocks' pairs in a fixed order. The two accumulators plug into the
# same loop as dot_vec4's `Plain`:

# %%
dot.struct_source("Wide", "Compensated")

# %%
source.show("dot.cu", "dot_f64", "dot_compensated")

# %% [markdown]
# Their kernels' points in the plot lie between about 10⁻¹⁶ and 10⁻¹⁵ (dot_f64) and between 10⁻¹⁴
# and 10⁻¹³ (dot_compensated): millions of times smaller than any float32 answer or more, and both
# answer in float64 (rounding to float32 would
# throw that away). Both do more arithmetic per element, but a dot product waits on memory, not on arithmetic:
# on the H100 this notebook ran on, dot_f64 reads at dot_vec4's speed at every size, and
# dot_compensated does from 2²⁶ on; below that its ordered last block (a ticket, a fence and a second
# pass over the block sums) costs a fixed microsecond or two, which shows at mid sizes (timing
# section). On a GPU,
# the median relative error of every version at N = 2²⁴ over 20 random pairs, against the exact dot
# (`dot.reference`'s sum; a float64 sum, the usual reference, is itself off by about 10⁻¹⁵ here, as
# much as dot_f64), beside the library's two float32 dots, `cupy.dot` and cuBLAS's
# (`cupy.cublas.dot`), and the course's goals:

# %% tags=["nbval-ignore-output"]
dot.error_table()

# %% [markdown]
# On the H100 this notebook ran on, `cupy.dot`'s median error at 2²⁴ is about 1.5·10⁻⁷, smaller
# than every other float32 answer's here: cuBLAS's is about 1.9·10⁻⁷, and the course's float32
# kernels lie between about 2·10⁻⁷ and 6·10⁻⁷, those that end in a fixed-order tree (dot1, dot3)
# at the low end and those that end in atomics (dot2, dot_shfl, dot_vec4) at the high end. So
# `dot_vec4` misses its goal of matching `cupy.dot`, for two reasons. Its
# 1056 block sums meet in one float32 word, one atomic after another: a running sum again. And
# before that each of its threads adds about 62 products in a running sum of its own, where
# `cupy.dot`'s reduction leaves 16 to each thread. dot3 has no atomic tail (a tree per block, then
# its block sums in a fixed order) and still misses, so removing the tail alone would not meet the
# goal: the per-thread runs would have to be shorter too. dot_f64's and dot_compensated's errors
# are far below every float32 answer's. Why `cupy.dot` adds so well is in *What to call outside
# this course*.
#
# ## Try it
#
# Pick a version (the article's are in the list too), a block size and N. The panel runs the version
# on this machine's backend with the article's data, compares it with the exact dot, runs the
# checker, traces one block's worth of input and draws it: thread 0's loads of `temp` for dot1, the
# atomics on c's slots for dot2, the tree for dot3, one 16-byte load up close for dot_vec4, the
# grid-stride map for the others. Under it, numbers read from the trace of block 0:
#
# - **grid** and **elements per thread**: the launch; does the loop loop?
# - **global load instructions**, **bytes** and **32-byte sectors per load instruction**: coalescing
#   and vector width (128 B and 4 sectors per warp for floats, 512 B and 16 for 16-byte loads);
# - **barriers** and **atomics**: what the block waits for, and what it adds into memory;
# - **shared-memory requests** and the **worst bank conflict**; for dot1, **shared loads by thread 0
#   alone**.
#
# Try `dot1_article` with N = 1000, `dot2_article` (its c is never zeroed), `dot3_article` with a
# block of 512, or watch dot2's elements per thread grow with N while the grid stays one wave and
# its atomics stay one per thread.

# %% tags=["nbval-ignore-output"]
dot.panel(version="dot1", n=1024, block=256)

# %% [markdown]
# ## How fast on a GPU
#
# A dot product does two loads and one fused multiply-add per element: it is limited by memory
# bandwidth. Its speed is counted in GB/s of a and b read (8 bytes per element) and held against a
# device-to-device copy of the same bytes, timed in the same run. A copy reads *and* writes; a dot
# product only reads, so a good one can beat the copy (the memory loses time turning round between
# reads and writes).
#
# **The article's launch against one wave.** dot1, dot2 and dot3 (the fixed kernels, the kernel
# alone without the partial sums' pass), each timed with the article's N / 256 blocks and with the
# version's own grid, in the same run (dot1 has no loop, so its own grid is the article's), median of
# 20 CUDA-event timings with inputs rotated out of the L2 cache; each time also as a percentage of
# the copy's at the same N:

# %% tags=["nbval-ignore-output"]
dot.launch_table()

# %% [markdown]
# Start with dot2. Under the article's launch it is the slowest row at every N, a small fraction of
# the copy: every product is an atomic, and the atomics on one word of c wait for each other. Even
# at 2²⁰, where 8 MB take the copy a few µs, it takes 43.2 µs<!-- from launch_table: article µs @ N=1048576, kernel=dot2 -->:
# there the atomics, not the launch, set its time (dot1 and dot3, launched with the same 4096
# blocks, take about a quarter of that). Divided by the atomics on each word of c, 4096 at 2²⁰ and
# 65 536 at 2²⁴ (647 µs<!-- from launch_table: article µs @ N=16777216, kernel=dot2 -->), that is
# about 10 ns per atomic at both sizes: the atomics on one word, one after another, measured.
# Launched as one wave the same kernel reaches
# 93.4 %<!-- from launch_table: fixed % of copy @ N=268435456, kernel=dot2 --> of the copy at 2²⁸.
#
# Now dot1 against dot3, both under the article's launch. At 2²⁴ and 2²⁸ the serial dot1 beats the
# tree dot3 (74.3 µs<!-- from launch_table: article µs @ N=16777216, kernel=dot1 --> against
# 87.1 µs<!-- from launch_table: article µs @ N=16777216, kernel=dot3 --> at 2²⁴, and faster in each
# of five repeats on this H100; at 2²⁰ dot3 is a little ahead): the tree's 8 steps do not make it
# faster. With one element per thread a block has only 256 products, and what it pays per block
# decides. dot3 pays 9 barriers, each a wait of the whole block: all 8 warps run every step of the
# loop and stop at every barrier (the compiled code has no barrier that a warp could skip), though
# from step 3 on only one warp adds. dot1 pays one barrier; then 7 warps leave, and one lane makes
# 64 16-byte loads and 256 dependent adds. Counted by Nsight Compute on this H100 at 2²⁴
# (`scripts/gpu_facts_dot.py`), a block of dot3 issues about 1000 warp instructions, one of dot1
# about 720. That count is not what sets their times: at 4 warp instructions per clock on each of
# 132 SMs at 1.98 GHz, the whole launches need at least 63 µs<!-- given: reference --> (dot3) and
# 45 µs<!-- given: reference --> (dot1) of issue, against the
# 87.1 µs<!-- from launch_table: article µs @ N=16777216, kernel=dot3 --> and
# 74.3 µs<!-- from launch_table: article µs @ N=16777216, kernel=dot1 --> measured, and the ratio
# of the counts (1.40) is larger than that of the times (under 1.2). Neither kernel is limited by
# issuing instructions. Each block lives a short life: it waits for its own loads of one element per
# thread (a DRAM round trip before its first add: the largest stall of both kernels in the same run,
# waiting on global loads, 7.55 per issued instruction for dot1 and 5.55 for dot3), then adds: dot1
# in one lane's chain of dependent adds, dot3 with its warps waiting at barriers (barrier stalls:
# 2.38 for dot3, 1.06 for dot1). Neither gets past about two thirds of the copy, because neither
# spreads that cost over more than 256 products. The fix is the grid, not the tree: launched as one wave, dot3 pays
# its 9 barriers once per block of about a thousand products per thread (at 2²⁸), and reaches
# 93.2 %<!-- from launch_table: fixed % of copy @ N=268435456, kernel=dot3 --> of the copy there,
# as dot2 does. dot1, which has no loop, cannot take that grid.
#
# **How many blocks?** A load from DRAM takes hundreds of nanoseconds. To keep the memory busy,
# each SM must always have enough loads on their way: by Little's law, bytes in flight = bandwidth ×
# latency. On this H100 `course.probe` measured a read stream of
# 2890 GB/s<!-- given: reference --> and, with one thread chasing pointers through an idle memory, a
# DRAM latency of about 350 ns (352 ns in notebook 5's `littles_law` table, run on the same GPU
# model; also in `docs/notes/reduction-gpu-facts.md`, step 8). That is about 1 MB in flight for the
# GPU, or about 7.7 KB per SM (the same table; `course.occupancy.bytes_needed_per_sm()` works it out
# for your machine, and `course.device().describe()` says where each of its figures comes from). The probe's read stream (one simple read kernel) is a floor, not a ceiling:
# dot_vec4 in the table below reads faster, up to
# 3110 GB/s<!-- from wave_table: GB/s @ blocks per SM=4 --> (and faster in one run beside the
# probe: `scripts/gpu_facts_dot.py`, step 9). Each thread of dot_vec4 keeps 2 × 2 loads of 16
# bytes in flight; the table
# times it with 1, 2, 4 and 8 blocks of 256 per SM, at N = 2²⁸:

# %% tags=["nbval-ignore-output"]
dot.wave_table()

# %% [markdown]
# One block per SM (16 KB in flight per SM, twice Little's 7.7 KB) reaches only
# 89.5 %<!-- from wave_table: % of copy @ blocks per SM=1 --> of the copy; two (32 KB)
# 102 %<!-- from wave_table: % of copy @ blocks per SM=2 -->, four
# 103 %<!-- from wave_table: % of copy @ blocks per SM=4 --> and eight about the same: past two
# blocks per SM, more change little. Little's figure was a floor, for two reasons. 350 ns is how
# long an idle memory takes to answer one load; with every SM's loads queued in the memory system,
# a load takes longer. And the column counts what a thread issues at once, not what it keeps in
# flight on average: it waits for its loads, adds, and only then issues the next ones. A read-only
# kernel can beat the read + write copy, as two blocks per SM and more do here, because the memory
# loses no time turning round between reads and writes. The versions here launch one wave: as many
# blocks of 256 as every SM holds.
#
# **Exercise 8. Measure, then choose: a grid for blocks of 384.** The notebook launched dot2 with
# blocks of 256. Choose its number of blocks for blocks of **384** threads and N = 30 000 000: every SM full,
# no second wave left partly empty, and enough products per thread that the atomics stay few. On a
# GPU the check times your grid beside one wave, two waves and the article's N / block, and passes
# within 10 % of the fastest; without one it checks the launch's arithmetic against this device.
# Replace `None` with your number of blocks.

# %%
dot.exercises.grid.check(None)

# %% [markdown]
# **Every version against N.** The whole product on the GPU (partial sums included), beside
# `cupy.dot` and the copy, from 2¹⁶ to 2²⁸:

# %% tags=["nbval-ignore-output"]
records = dot.speed_against_n()
fig, ax = plt.subplots(figsize=(9, 4.5))
dot.plot_speed(ax, records)

# %% tags=["nbval-ignore-output"]
dot.speed_table(records, 2**28)

# %% [markdown]
# Below 2²⁰ every version is launch-bound (a few µs): read the plot from 2²² on. At 2²⁸, in the
# table: dot1 reaches 67.4 %<!-- from speed_table: % of copy @ kernel=dot1 --> of the copy, held by its
# serial sum in every block of 256. dot2, dot3 and dot_shfl reach about nine tenths of it (dot_shfl
# 93.3 %<!-- from speed_table: % of copy @ kernel=dot_shfl -->): one float per lane and 8 bytes in
# flight per thread, 16 KB per SM at one wave, as little as dot_vec4 with one block per SM in the
# wave table, leave the memory short of requests. The 16-byte versions just beat the copy
# (dot_vec4 103 %<!-- from speed_table: % of copy @ kernel=dot_vec4 -->), and the accurate ones cost
# nothing: dot_f64 and dot_compensated read as fast as dot_vec4, because a dot product waits on
# memory, not on arithmetic.
#
# ## What to call outside this course
#
# `cupy.dot(a, b)` is the call, but on two 1-D float32 arrays it is not one fused kernel. CuPy
# computes a vector · vector product as `(a * b).sum()` when its CUB accelerator is on, as it is
# here (`tensordot_core` in CuPy's `cupy/_core/_routines_linalg.pyx`), and Nsight Compute on this
# H100 (`scripts/gpu_facts_dot.py`) shows exactly that: an elementwise kernel,
# `cupy_multiply__float32_float32_float32`, that writes the N products to a temporary array in
# global memory; CUB's reduction, `cub::DeviceReduceKernel` (4096 blocks of 256 at N = 2²⁴) and
# `DeviceReduceSingleTileKernel` (one block that adds their partial sums); and a one-thread copy
# of the answer. So it moves 16 bytes per element where a fused dot reads 8: the multiply reads a
# and b and writes the products, and the reduction reads the products back. That is twice the
# bytes of the copy in the table (4 read and 4 written per element), so even at the copy's own
# speed it could reach only about half of it; it reaches
# 43.9 %<!-- from speed_table: % of copy @ kernel=cupy.dot -->, and the plot shows its curve
# climbing with the copy's from 2²⁴ on, a little under half as high. About four fifths of its
# time at 2²⁸ is the multiply (Nsight Compute's kernel times).
#
# Yet in the error table it is more accurate than every float32 version here, and in the repeat
# table it gives the same bits on every run. Both follow from the same kernels. The multiply
# kernel rounds each product to float32 (as dot1 does; the grid-stride kernels fuse all but each
# thread's first into an fma); then CUB adds them in short runs (at 2²⁴ its 4096 blocks of
# 256 threads leave 16 products to each thread, where dot3's one wave leaves about 62) and in
# trees: each block's sums, then the 4096 block sums in one block. That is close to a pairwise
# sum, with no long running sum anywhere. And every partial sum goes to its own word and is added
# in a fixed order, with no atomics, as in dot3.
#
# cuBLAS's `cublasSdot` is what a CUDA C++ program would call, and CuPy reaches it as
# `cupy.cublas.dot(a, b)` (`cupy/cublas.py`): one library call with no temporary of N products.
# Nsight Compute on this H100 (`scripts/gpu_facts_dot.py`, step 8) shows two kernels: `dot_kernel`
# (2112 blocks of 128), which reads a and b once, 8 bytes per element, as the course's kernels do,
# and `reduce_1Block_kernel`, one block that adds its block sums. Its rows in the tables above,
# timed in the same runs, say what that buys: at 2²⁸ it reaches
# 102 %<!-- from speed_table: % of copy @ kernel=cupy.cublas.dot --> of the copy, level with
# dot_vec4's 103 %<!-- from speed_table: % of copy @ kernel=dot_vec4 --> and
# 2.33×<!-- from speed_table: × cupy.dot @ kernel=cupy.cublas.dot --> as fast as cupy.dot, and it
# gives the same bits on every run. Below 2²⁶ it falls behind: in the plot its dotted line is
# clearly under dot_vec4's and the copy's at 2²² and still under them at 2²⁴. The gap is about
# the time of its second kernel, a cost that does not shrink with N: `reduce_1Block_kernel`, one
# block of 128 threads reading the 2112 block sums, took
# 5.4 µs<!-- given: reference --> at 2²⁴ in step 8, beside `dot_kernel`'s
# 48.8 µs<!-- given: reference -->, about a tenth of the whole, and about as long at 2²⁸. The
# course's kernels add their block sums inside the one launch instead: dot_vec4's blocks with an
# atomic each as they finish (before the launch it only zeroes one word), exercise 6's last block
# in order. Its median error
# at 2²⁴, about 1.9·10⁻⁷, is a little larger than cupy.dot's (about 1.5·10⁻⁷): by the goal the
# error table sets dot_vec4 (≤ cupy.dot's), cuBLAS misses too.
#
# So: call `cupy.cublas.dot` for a float32 dot product: one pass over a and b, at about the copy's
# speed from 2²⁶ on, an error a little above `cupy.dot`'s, and the same bits every run; `cupy.dot`
# on two 1-D float32 arrays gives about the same answer in more than twice the time. Write the
# kernel when the float32 error itself is the problem, or when a mid-size dot (about 2²²–2²⁴
# here) must run at the copy's speed: a one-wave grid-stride loop with 16-byte loads (dot_vec4
# here) reads as fast as cuBLAS at 2²⁸, faster at 2²⁰–2²⁴ in the plot,
# 2.34×<!-- from speed_table: × cupy.dot @ kernel=dot_vec4 --> as fast as cupy.dot, because it reads
# a and b once and writes nothing; and from 2²⁶ on `dot_compensated` keeps that speed with an
# answer millions of times more accurate that also repeats (below that, its ordered last block
# costs a fixed microsecond or two, which shows at mid sizes in the plot).
#
# ## Summary
#
# - **A grid-stride loop** (`i += blockDim.x * gridDim.x`) lets any grid cover any N, keeps each
#   warp's loads contiguous, and lets each thread add many products in a register before it talks to
#   anyone. Choose the grid for the GPU: one wave, as many blocks as the SMs hold at once.
# - **Atomics** are serialised on each word. One per element (the article's launch of dot2) is the
#   slowest way to add; one per thread after a loop is tolerable; one per block (dot_shfl) is cheap.
#   A buffer that atomics add into must be zeroed before every launch.
# - **Accuracy**: float32 holds 24 bits, so a running sum rounds each term to the spacing at the sum;
#   the article's data loses 768 after 1024 terms, and the loss begins at i = 369. Short per-thread
#   sums and trees keep the error near the float32 floor; `double` accumulation or a compensated
#   float32 pair removes it, and a dot product waits on memory: from 2²⁶ on at no cost in speed
#   (below that, the compensated kernel's ordered last block costs a microsecond or two).
# - **Order**: in float32 the order of the additions decides the answer's last bits. Atomics make
#   that order, and so the answer, change from run to run on a GPU; the emulator, with its fixed
#   order, shows the range but not the variation. A fixed order (one word per block, the last block
#   adds them) makes the answer repeat.
# - **The library**: `cupy.dot` on two float32 vectors is a multiply into a temporary array and
#   then CUB's reduction: it moves twice the bytes of a fused dot product and reaches under half of
#   the copy's speed, but its short per-thread sums and trees make it more accurate than every
#   float32 version here, and its fixed order repeats its bits. cuBLAS's own dot,
#   `cupy.cublas.dot`, is one pass over a and b and repeats: as fast as the course's best kernel
#   from 2²⁶ on (below that its second, one-block launch shows), a little less accurate than
#   cupy.dot. A one-wave loop of 16-byte loads reads as fast as cuBLAS at large N, faster at mid
#   sizes (more than twice as fast as cupy.dot), and with a compensated accumulator it is far more
#   accurate and repeats too.
# - The article's code: an `int` accumulator, shared memory indexed by the global index, no bounds
#   check, a result buffer never zeroed, a 256-slot cache for any block size, a host listing that
#   launches the wrong kernel, and timings of CUDA's start-up rather than of the kernels.

# %%
course.my_progress("dot")

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
# # 2 · Transpose: moving a matrix at the speed of memory
#
# A **transpose** computes nothing. Every element of an m × n matrix moves to the mirror position
# of an n × m one, `out[c][r] = a[r][c]`, and that is all. So its speed is all about memory: how
# the addresses of a warp's 32 threads fall on the 32-byte pieces that DRAM moves
# (**coalescing**), and, once a tile in shared memory has fixed that, how they fall on the
# shared-memory **banks**.
#
# This notebook follows the blog post *CUDA：矩阵转置的GPU实现（Share Memory）* ("matrix transpose
# on the GPU, with shared memory"), a learner's notes from NVIDIA's 2022 *CUDA on Platform*
# training camp: a CPU loop, then one shared-memory tiled kernel for an `int` matrix of
# 1111 × 113, launched on a rounded-up 2-D grid with bounds checks and timed with CUDA events, and
# a closing discussion of row-major against column-major access. Every piece of it is shown, run
# and checked against NumPy; where its code or its claims are wrong, the notebook runs it, counts
# from a trace what really happens, and fixes it. Then it goes past the article, to the kernels
# that move a large matrix nearly as fast as a plain copy.
#
# What you will see matter, in the order it starts to matter: **coalescing** (the naive kernels),
# the **tile** and its **bank conflicts** (the article's kernel and the padded tile), the **edges**
# of the grid (bounds checks), **bytes in flight** and the blocks' **barriers** (more work per
# thread, and how many blocks share an SM), the **order** in which
# tiles are visited, and what the article's own small matrix can and cannot show in a timing.
# Every cell runs without a GPU, on the course's emulator; on a GPU the timing cells measure, on
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
from course import source, transpose

course.notebook()

# %% [markdown]
# ## The problem, and the answer to check against
#
# C and CUDA store a matrix **row-major**: row 0, then row 1, …, so `a[r][c]` of an m × n matrix
# is word `r * n + c` of one flat array. The transpose is n × m: its row `c` is column `c` of `a`.
# The article's CPU version, line for line in Python (`tr_matrix[i][j] = matrix[j][i]`, with the
# article's warning: the two matrices have different row lengths, so do not mix up m and n):

# %%
def cpu_transpose(matrix, m, n):
    tr_matrix = np.empty(m * n, matrix.dtype)
    for i in range(n):  # row i of the result ...
        for j in range(m):  # ... is column i of the matrix
            tr_matrix[i * m + j] = matrix[j * n + i]
    return tr_matrix.reshape(n, m)


m, n = 1111, 113  # the article's matrix: a multiple of no tile size either way
a = np.random.default_rng(2022).integers(0, 2**31 - 1, size=(m, n), dtype=np.int32)  # rand(), as the article
print("the CPU loop matches NumPy's a.T:", np.array_equal(cpu_transpose(a.ravel(), m, n), a.T))
print("transpose.reference(a):", transpose.reference(a).shape, transpose.reference(a).dtype)

# %% [markdown]
# `transpose.reference(a)` is `a.T` as a C-contiguous array: what every kernel below must write,
# bit for bit (nothing is computed, so the comparison is exact). Note how the CPU loop walks
# memory: it writes `tr_matrix` front to back, but reads `matrix` n words apart, down a column.
# On a CPU a cache line absorbs some of that; on a GPU the same choice decides everything.
#
# ## Coalescing first: a warp reading a row, a warp reading a column
#
# A GPU's memory system moves **32-byte sectors**. When a warp executes a load or a store (one
# *request*), the hardware collects the sectors its 32 lanes' addresses fall in and moves each
# once. 32 lanes reading 32 consecutive 4-byte words ask for 128 bytes and touch 4 sectors: the
# request is **coalesced**. 32 lanes each reading a word in a different row touch 32 sectors:
# 1024 bytes move so that 128 can be used.
#
# The copy below moves the same bytes without transposing them: a read + write copy to hold a
# transpose against. (The GPU tables' 100 % is the device's own copy of the same bytes, `cudaMemcpy`; this
# one-word-per-thread copy kernel is timed beside it in the section on bytes in flight.) The naive
# transpose is the copy with the output index swapped. Both use a 2-D block: `threadIdx.x` walks
# along a row, and the 32 lanes of a warp are 32 consecutive `threadIdx.x`.

# %%
source.show("transpose.cu", "copy", "transpose_naive")

# %%
print("transpose_naive matches NumPy:", np.array_equal(transpose.run("transpose_naive", a), a.T))

# %% [markdown]
# Right, but look at what one warp does. Below, a 32 × 32 matrix drawn word by word, in rows of
# 32-byte sectors (a thick box is one sector, 8 words). Warp 0 of block 0 (block 32 × 8) in blue,
# warp 1 in orange, the other warps of the block in grey; the sectors warp 0's request touches are
# framed, and tinted where the request moved a word that no warp of the block uses. Counted from the
# trace of the kernel:

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 6.4))
transpose.draw_sectors(axes, "transpose_naive")

# %% [markdown]
# Warp 0 reads row 0 of `in`: 4 sectors for 128 bytes, nothing wasted. It writes the same 32
# values down column 0 of `out`, one word in each of 32 rows: 32 sectors, 1024 bytes moved for
# 128 written. Warp 1 then writes column 1, into the *same* 32 sectors, with a request of its own,
# and so on: the block's 8 warps fill columns 0–7, every byte of those 32 sectors between them,
# but in 8 requests of 32 sectors each, where 8 words per sector could have gone in one.
#
# The mirror image lays the threads over the output instead: a warp writes a row of `out` and
# reads a column of `in`.

# %%
source.show("transpose.cu", "transpose_naive_cols")

# %%
print("transpose_naive_cols matches NumPy:", np.array_equal(transpose.run("transpose_naive_cols", a), a.T))
fig, axes = plt.subplots(1, 2, figsize=(12, 6.4))
transpose.draw_sectors(axes, "transpose_naive_cols")

# %% [markdown]
# Now the writes are coalesced and the reads are not. Averaged over every request of two blocks of
# a 256 × 256 matrix, against the ideal (the sectors the same bytes would take if they were
# consecutive):

# %%
transpose.sectors_table(["copy", "transpose_naive", "transpose_naive_cols"])

# %% [markdown]
# The copy reads and writes 4 sectors per request; each naive kernel pays 32 on one side, 8 times
# the ideal. That is the whole problem of the transpose: **a warp is 32 consecutive threads, and
# whichever matrix you lay them along a row of, they walk down a column of the other.** No choice
# of indexes makes both sides coalesced, as long as each thread moves its own element straight from
# `a` to `out`. The article calls this the dilemma (两难) of a transpose without shared memory:
# "read row-major, write column-major" or the other way round (its text writes both cases as
# "write col-major"; the second is *read* column-major, *write* row-major: `transpose_naive_cols`).
#
# Which side is cheaper to waste? The counts are the same, 32 sectors on one side; the GPU table at
# the end measures the difference: at 8192² on this H100 the naive kernel reaches about
# 15 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_naive --> of the copy, the
# column-reading one about 54 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_naive_cols -->.
# Why is not in these counts, and this notebook does not measure it; a likely part is that a
# sector fetched for a read stays in the caches for the next warp that needs it (warp 1 reads the
# sectors warp 0 just fetched), while each partial write is sent on as it comes.

# %% [markdown]
# ### Exercises, where each idea is taught
#
# Each exercise is one call: `.check(...)` says ✓, or what is wrong and the rule to apply (never
# the answer); `.hint()` gives a hint, one more each time you ask; for a kernel, `.show(mine)`
# draws what your kernel did with the course's own pictures, beside the verdict. The kernels run
# on the emulator first, with the checker, whatever this machine has; on a GPU a right kernel is
# then timed beside the course's best version and a copy. `course.my_progress("transpose")`, at
# the end, lists what is done.
#
# **Exercise 1. Predict, then check: sectors per request.** The naive kernel takes any 2-D block.
# With 256 threads shaped 128 × 2, 8 × 32, 4 × 64 or 2 × 128 (none of them the panel's, below), how
# many sectors per request do its reads and its writes take (a 256 × 256 float matrix)? Lane `l` of a
# warp is thread `x = l % bx`, `y = l / bx`. Fill in (reads, writes) for each block in place of the
# `None`s; the check counts them from traces and names the block and the column that is off, with
# the rule for it.

# %%
my_sectors = {(128, 2): (None, None), (8, 32): (None, None), (4, 64): (None, None), (2, 128): (None, None)}
transpose.exercises.sectors.check(my_sectors)

# %% [markdown]
# ## The launch: a 2-D grid, rounded up
#
# Threads are numbered in two dimensions. A block of (bx, by) threads, a grid of (gx, gy) blocks;
# thread (x, y) of block (X, Y) takes column `X * bx + x` and row `Y * by + y`. The grid must cover
# all n = 113 columns and m = 1111 rows, so each dimension is a ceiling division, ⌈113 / 32⌉ = 4
# and ⌈1111 / 8⌉ = 139. This is the call `transpose.run` makes for you, written out once:

# %%
block = (32, 8)
grid = ((n + block[0] - 1) // block[0], (m + block[1] - 1) // block[1])
naive = transpose.kernel("transpose_naive", np.int32)
out = course.zeros((n, m), np.int32)
naive(grid, block, (course.asarray(a), out, np.int32(m), np.int32(n)))
threads = grid[0] * block[0] * grid[1] * block[1]
print(f"grid {grid} of blocks {block}: {grid[0] * block[0]} × {grid[1] * block[1]} threads")
print(f"for {n} columns × {m} rows: {threads - m * n} threads have no element")
print("matches NumPy:", np.array_equal(course.asnumpy(out), a.T))

# %% [markdown]
# Rounding up launches 16 793 threads more than there are elements: they sit past the right edge
# (columns 113–127) and the bottom one (row 1111). `if (row < m && col < n)` keeps them from
# reading or writing anything. The article's advice is the same: "rather launch too many threads
# and mask them with an `if` than too few and miss elements"; so is its advice to make a block a
# whole number of warps (32 × 8 is 8 warps).
#
# ## The article's kernel: a tile in shared memory
#
# A block first copies a BLOCK_SIZE × BLOCK_SIZE tile of `a` into **shared memory** (fast on-chip
# memory its threads share), each thread one element, along rows: coalesced. `__syncthreads()`
# waits until the whole tile is there. Then each thread reads the tile *down a column* and writes
# the result along a row of the output: coalesced again. The transposition happens inside the tile,
# where addresses are cheap. Here is the article's `cuda_transpose`, changed only so that one file
# serves every case: `int` became `elem_t`, and the `#define BLOCK_SIZE` (32 in its code, 16 in its
# text) became a template parameter.

# %%
source.show("transpose.cu", "transpose_article")

# %% [markdown]
# The article's `main()` launches it with `dim3 block = {BLOCK_SIZE, BLOCK_SIZE, 1}` and the grid
# `{(n - 1 + BLOCK_SIZE) / BLOCK_SIZE, (m - 1 + BLOCK_SIZE) / BLOCK_SIZE, 1}`, the same ceiling
# division written another way. With BLOCK_SIZE 32, as in its code:

# %%
block = (32, 32)
grid = ((n - 1 + 32) // 32, (m - 1 + 32) // 32)
article = transpose.kernel("transpose_article", np.int32, block)
out = course.zeros((n, m), np.int32)
article(grid, block, (course.asarray(a), out, np.int32(m), np.int32(n)))
print(f"{article.name}: grid {grid}, block {block}, matches NumPy: {np.array_equal(course.asnumpy(out), a.T)}")
print("BLOCK_SIZE 16, as in its text:", np.array_equal(transpose.run("transpose_article", a, block=(16, 16)), a.T))

# %% [markdown]
# Both are right. The tile of block 0, from the trace (a 64 × 64 input, so that block 0's tile is
# full): on the left who stored each word, on the right who loaded it, warps 0–3 in colour:

# %%
fig, ax = plt.subplots(figsize=(12, 7))
transpose.draw_tile(ax, "transpose_article", (32, 32))

# %% [markdown]
# Each warp stores one row of the tile and loads one column. In global memory both of the kernel's
# accesses now walk along rows; counted as before:

# %%
transpose.sectors_table([("transpose_article", (32, 32)), ("transpose_article", (16, 16))])

# %% [markdown]
# 4 sectors per request for the reads and the writes, with either BLOCK_SIZE: the global side is
# as good as the copy's. The article's advice to keep both global accesses row-major is right.
#
# ### What the bounds checks protect
#
# The article says its biggest problem was the edges: with the output written along rows, the
# coordinates are not simply swapped as on the CPU, and "a thread that means nothing when it
# fills shared memory may mean something when it writes global memory". The load tests the
# element the thread reads, `row < m && col < n`; the store tests the element it writes, whose
# coordinates are the block's, transposed. In the bottom-right block of the grid, block (3, 34),
# the two tests pick different threads, counted from the trace:

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 5.8))
transpose.draw_edge_block(axes)

# %% [markdown]
# 391 threads load (23 rows × 17 columns of `a` are left at the corner) and 391 store (17 rows ×
# 23 columns of the output), but only 289 do both: 102 threads load an element and leave it for
# another thread to store, and 102 store an element another thread loaded. That is why the store
# needs its own test.
#
# The 0 the load writes into the tile when its test fails is never read. Thread (x, y) stores tile
# word `[x][y]`, which thread (y, x) loaded, and the store's test, `X·32 + y < n && Y·32 + x < m`,
# is the very inequality thread (y, x)'s load tested: every word a store reads was loaded. The
# article's kernel with the fill taken out (`transpose_article_skip`: an out-of-bounds load writes
# nothing), through the checker with the article's launch, which would name an uninitialised read:

# %%
transpose.skip_fill(a)

# %% [markdown]
# Clean, and right: the fill is harmless but not needed (the ternary is only one way to write a
# guarded load), and the store's test has its own reason, the output element the thread writes. The
# course's fixed kernels skip the load in the same way.
#
# Without the two tests (`transpose_article_unchecked` in `transpose.cu`: the same kernel, the
# tests taken out), the checker runs it on the emulator with the article's launch. A GPU would
# fault, or worse, write into the wrong row of the output without a word: a load past the end of
# a row reads the next row's first elements, and a store past the end of an output row lands in
# the next one.

# %%
transpose.unchecked(a)

# %% [markdown]
# The checker names the first thread that writes past the end of `tr_matrix` (thread (0, 17) of
# block (3, 0): output row 96 + 17 = 113, one past the last), the line and the index, and counts
# the threads that did the same in the part of the launch that ran: the emulator stops a launch at
# its first out-of-bounds access, so the count is not the whole grid's, and the loads past the
# bottom of `matrix` (the last row of blocks, rows 1111 to 1119) never ran. Because a write out of
# bounds can poison a GPU's context, the course runs such a kernel only on the emulator.

# %% [markdown]
# **Exercise 2. Fix: the store's test, on a rectangular tile.** This kernel moves a tile of 64 rows × 32
# columns of `a` with a block of 32 × 8 threads: each thread loads 8 words down the tile and
# stores 8, so the store's loops are not the load's. Its store was guarded with the load's test:
# right for a 64 × 96 matrix, wrong (or worse) elsewhere. Fix the test. The check runs your kernel
# on the emulator with the checker (grid ⌈n / 32⌉ × ⌈m / 64⌉) at 64 × 96, 1 × 1, 1 × 40, 40 × 1,
# 31 × 31, 63 × 33, 65 × 31, 33 × 70, 70 × 33 and the article's 1111 × 113, compares `out` with
# NumPy's, and holds it to a target read from the trace: **coalesced**, every full warp's load and
# store takes whole sectors, as the copy's. `transpose.exercises.store.show(mine)` draws which
# block stored each element of `out`.

# %%
mine = r"""
extern "C" __global__ void transpose_mine(const elem_t* in, elem_t* out, int m, int n) {
    __shared__ elem_t tile[64][33];                  // 64 rows x 32 columns of in (+1: no bank conflict)
    int r0 = blockIdx.y * 64, c0 = blockIdx.x * 32;  // the tile's corner in in (m rows x n columns)
    int x = threadIdx.x, y = threadIdx.y;            // a block of 32 x 8 threads
    for (int j = 0; j < 64; j += 8)                  // load: tile rows y, y + 8, ..., y + 56
        if (r0 + y + j < m && c0 + x < n) tile[y + j][x] = in[(r0 + y + j) * n + c0 + x];
    __syncthreads();
    for (int j = 0; j < 32; j += 8)                  // store: the tile transposed, along rows of out
        for (int k = 0; k < 64; k += 32)
            if (r0 + y + j < m && c0 + x < n)        // <- the load's test, copied: fix it for the store
                out[(c0 + y + j) * m + r0 + x + k] = tile[x + k][y + j];
}"""
transpose.exercises.store.check(mine)

# %% [markdown]
# ## The article's claim about shared memory, counted: bank conflicts
#
# The article concludes that "in shared memory, row-major and column-major access are almost
# equally efficient", so that the tile solves the dilemma for free. They are not. Shared memory is split into 32 **banks** of 4-byte words; word
# `w` is in bank `w % 32`. A warp's access is served in one pass when its lanes hit 32 different
# banks (or the same word), and in k passes when k lanes hit different words of one bank: a
# **k-way bank conflict**. Reading the tile down a column, lane `x` reads `smem_matrix[x][y]`,
# word `x * BLOCK_SIZE + y`: with BLOCK_SIZE 32 all 32 words are in the same bank. Counted from
# the trace of the tile reads:

# %%
transpose.article_conflicts()

# %% [markdown]
# Every warp's column read is a 32-way conflict with the article's BLOCK_SIZE 32, and 8-way with
# the 16 of its text. Lane by lane, warp 0's read of the tile (left: BLOCK_SIZE 32; right: 16).
# Each lane points at the bank of its word; the words stacked under a bank are served one after
# another:

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 5))
transpose.draw_tile_read(axes[0], "transpose_article", (32, 32))
transpose.draw_tile_read(axes[1], "transpose_article", (16, 16))

# %% [markdown]
# At BLOCK_SIZE 32 the 32 words form one tower in bank 0: the read takes 32 passes instead of one.
# At 16 a warp covers two columns of a 16-wide tile: lanes 0–15 read words 0, 16, 32, …, 240 and
# lanes 16–31 the next column, so four banks (0, 1, 16, 17) take 8 words each: 8-way. Writing the
# tile along rows has no conflict. The article's choice of 16 in its text is the better one, by
# accident. The fix follows, after the article's other assumption.
#
# ## The article's other assumption: a square block as big as the tile
#
# The store computes its output row and column with `blockDim.x` in both directions, and the tile
# has BLOCK_SIZE × BLOCK_SIZE words whatever the block. So the kernel is right only when the block
# is square and as big as the tile, as in the article's `main()`: not a bug with the article's own
# launch, an assumption the code does not state or check. With the 32 × 8 block that NVIDIA's
# own transpose uses, or a tall one, on the emulator (a right answer, or the first wrong element;
# and what the checker finds):

# %%
transpose.article_blocks(wide=False)

# %% [markdown]
# With 32 × 8 the block loads tile rows 0–7 and then reads rows 0–31: almost every element is
# wrong. The checker names it, with thread, line and shared-memory element (a GPU would read
# whatever garbage shared memory held):

# %%
transpose.check("transpose_article", a, block=(32, 8))

# %% [markdown]
# The elements it names, `smem_matrix[256]` onwards, are tile rows 8–31: the 32 × 8 block filled
# rows 0–7 only, and the store reads down whole columns. A block wider than the tile (64 × 16)
# reads past the end of the 4 KB tile; the emulator stops it at the first such read (the course
# never runs it on a GPU):

# %%
print(transpose.wide_block_fault())

# %% [markdown]
# Thread (32, 0) reads `smem_matrix[32][0]`, offset 4096: one row past a tile of 32 rows.

# %% [markdown]
# ## Fixed for any block: `transpose_tiled`
#
# The tile takes the block's shape, `blockDim.y` rows × `blockDim.x` columns, in **dynamic shared
# memory** (`extern __shared__`: its size is given at launch, not in the source). Its transpose is
# `blockDim.x` rows × `blockDim.y` columns, so for the store the threads are renumbered: thread `t`
# writes output row `t / blockDim.y`, column `t % blockDim.y`, and consecutive threads walk along an
# output row whatever the block's shape.

# %%
source.show("transpose.cu", "transpose_tiled")

# %% [markdown]
# The launch now carries the tile's size in bytes, `shared_mem`:

# %%
block = (32, 8)
grid = ((n + block[0] - 1) // block[0], (m + block[1] - 1) // block[1])
tiled = transpose.kernel("transpose_tiled", np.int32)
out = course.zeros((n, m), np.int32)
tiled(grid, block, (course.asarray(a), out, np.int32(m), np.int32(n)), shared_mem=block[0] * block[1] * 4)
print("matches NumPy:", np.array_equal(course.asnumpy(out), a.T))

# %% [markdown]
# `transpose.run` does the same for each block the version takes:

# %%
transpose.blocks_table("transpose_tiled", a)

# %% [markdown]
# Right for every shape. But the tile is still read down a column. With 32 × 8, warp 0 reads
# columns 0–3 of an 8-row tile, 8 words from each, 32 words apart, and those 8 land in one bank:

# %%
fig, ax = plt.subplots(figsize=(12, 4.6))
transpose.draw_tile(ax, "transpose_tiled", (32, 8))

# %% [markdown]
# Every warp writes a tile row (1-way) and reads a block of 8 rows × 4 columns: 8-way. Smaller
# than the article's 32, but the column read still serialises.
#
# ## The padded tile: the bank heat map
#
# Give every tile row one unused word at the end: the row stride becomes 33, so going down a
# column moves 33 words, one bank further each row, and a warp reading a column hits 32 different
# banks. It costs 32 words of shared memory per 32 × 32 tile.

# %%
source.show("transpose.cu", "transpose_padded")

# %% [markdown]
# The **bank heat map** of the tile read, from the traces of block 0 (block 32 × 32, so that a warp
# reads a whole column): one row per warp instruction, one column per bank, the number of distinct
# words the instruction touched in that bank. Left unpadded (`transpose_tiled`), right padded:

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
transpose.draw_banks(axes[0], "transpose_tiled", (32, 32))
transpose.draw_banks(axes[1], "transpose_padded", (32, 32))

# %% [markdown]
# Unpadded, each warp's read puts all 32 words in one bank (warp k reads column k, so the tower
# moves one bank to the right per warp): 32 passes each. Padded, each warp's read spreads over all
# 32 banks, one word each: one pass. For every version and block, counted from the traces
# (wavefronts per request: the average passes of all the block's shared accesses, stores and loads
# together; 1 means no conflict at all):

# %%
transpose.bank_table()

# %% [markdown]
# The padding cures the 32 × 32 block, but not every block. With 32 × 8 a warp reads 8 rows of
# 4 columns: word `33 i + j` for rows i < 8 and columns j < 4 is in bank `(i + j) % 32`, and the
# sums 0 … 10 take up to 4 words each: 4-way. (The comment in the source above says for which
# shapes the padding cures the column read; the stores along a tile row are a count of their own.
# Exercise 3 asks both for blocks that comment does not decide.) The kernels below fix the 32 × 8
# block by keeping the tile square.

# %% [markdown]
# **Exercise 3. Predict, then check: bank-conflict ways.** `transpose_tiled` and `transpose_padded` take
# any 2-D block (bx, by); their tile has by rows of stride S = bx words (tiled) or bx + 1 (padded).
# Thread (x, y) stores word `y·S + x`; thread `t = y·bx + x` loads word `i·S + j` with
# `i = t % by`, `j = t / by`. For four launches that neither the tables above nor the panel show,
# predict the worst bank conflict of block 0's stores to the tile and of its loads from it, as
# (stores, loads) in ways (1 is no conflict). The check counts them from the traces.

# %%
my_ways = {
    ("transpose_tiled", (16, 32)): (None, None),
    ("transpose_padded", (8, 8)): (None, None),
    ("transpose_padded", (64, 16)): (None, None),
    ("transpose_padded", (16, 8)): (None, None),
}
transpose.exercises.ways.check(my_ways)

# %% [markdown]
# **Exercise 4. Fix: a tile with no bank conflicts.** The tiled kernel at 32 × 8, one element per thread,
# on a tile of 8 rows × 32 columns: each warp's load from the tile is an 8-way conflict, and one
# word of padding leaves a 4-way one (the bank table above). Change the tile's layout so that no
# warp's store to it or load from it conflicts. The check runs your kernel on the emulator with the
# checker (grid ⌈n / 32⌉ × ⌈m / 8⌉) at 64 × 96, 1 × 1, 1 × 40, 40 × 1, 7 × 33, 9 × 31, 33 × 70 and
# 250 × 197, compares with NumPy, and holds it to two targets read from the trace: **no bank
# conflicts** (`course.analysis.bank_conflicts`: every warp's access to the tile in one wavefront,
# and a warp's loads, or stores, in no more wavefronts than its words need: a conflict split into
# accesses of a few lanes each is still a conflict) and **coalesced** global loads and stores (the
# tile must stay). `.show(mine)` draws your tile's bank heat map and its worst warp instruction, as
# the pictures above draw the course's.

# %%
mine = r"""
extern "C" __global__ void transpose_banks(const elem_t* in, elem_t* out, int m, int n) {
    __shared__ elem_t tile[8][32];                   // the block's 8 rows x 32 columns of in
    int r0 = blockIdx.y * 8, c0 = blockIdx.x * 32;   // the tile's corner in in (m rows x n columns)
    int x = threadIdx.x, y = threadIdx.y;            // a block of 32 x 8 threads
    if (r0 + y < m && c0 + x < n) tile[y][x] = in[(r0 + y) * n + c0 + x];
    __syncthreads();
    int t = y * 32 + x, i = t % 8, j = t / 8;        // thread t stores out[c0 + j][r0 + i]
    if (c0 + j < n && r0 + i < m) out[(c0 + j) * m + r0 + i] = tile[i][j];
}"""
transpose.exercises.banks.check(mine)

# %% [markdown]
# ## More work per thread: `transpose_rows`
#
# NVIDIA's own transpose keeps the padded 32 × 33 tile but gives it a block of 32 × 8 threads:
# each thread moves 4 elements, at rows y, y + 8, y + 16, y + 24. A warp still walks along a row
# in global memory, and along a column of the tile, now on a square tile: no conflict. The block
# size becomes a template argument (`transpose_rows<32, 8>`), so the loops are unrolled.

# %%
source.show("transpose.cu", "transpose_rows")

# %% [markdown]
# The launch changes: a block now covers a 32 × 32 tile with 8 rows of threads, so the grid is
# counted in tiles, ⌈113 / 32⌉ × ⌈1111 / 32⌉, four times fewer blocks than `transpose_padded` at
# 32 × 8, and the tile is static shared memory:

# %%
print(transpose.launch_text("transpose_rows", a, (32, 8)))
transpose.blocks_table("transpose_rows", a)

# %% [markdown]
# 140 blocks of 256 threads for the 1111 × 113 matrix instead of 556, and right for every block
# (the tile is bx × bx: 64 × 8 moves 64 × 64 tiles, 8 elements per thread).
#
# **Why more elements per thread is faster: bytes in flight.** A load from DRAM takes hundreds of
# nanoseconds to come back: on this H100 350 ns, measured by `course.probe` with a pointer chase on
# an idle memory (the emulator's model, with no GPU to measure, takes 600 ns;
# `course.device().describe()` says where each figure comes from). To keep the memory busy,
# enough loads must be on their way at every moment: by **Little's law**, the bytes in flight
# equal the bandwidth times the latency. Which bandwidth? A thread waits for its loads, never for its stores (a store is handed to the
# memory system and forgotten), and a transpose moving at full speed spends half its traffic
# reading. So the loads in flight must carry half the bandwidth. Per SM, with this device's figures:

# %% tags=["nbval-ignore-output"]
transpose.littles_law()

# %% [markdown]
# On this H100 that is about 8.9 KB per SM for the whole traffic at the datasheet's
# 3.35 TB/s<!-- given: datasheet -->, and about 4.4 KB for the reads alone: the figure a
# transpose's loads are held against. It is a floor: 350 ns is how long an idle memory takes to
# answer one load, and a busy one queues the requests and answers later.
#
# What a launch can keep in flight: the bytes one thread loads before its barrier (counted from the
# trace), times the threads an SM holds at once (blocks per SM × threads per block, from the
# device's limits). The first two rows are `transpose.cu`'s `copy` kernel, one word per thread as
# in the naive kernels, with no tile and no barrier, in blocks of 256 and of 1024 threads:

# %%
transpose.in_flight_table()

# %% [markdown]
# Every one-word kernel keeps at most 8 KB per SM (2048 threads × 4 bytes), copy or transpose,
# whatever the block: about twice the 4.4 KB Little's law asks for the reads on this H100 with the
# idle latency, and the timings below show that it is not enough. `transpose_rows` raises it with
# the words per thread: 16 KB at 32 × 16, 32 KB at 32 × 8, and the 64 × 64 tiles 64 KB. The column
# says **at most**: it counts every thread of the SM as having issued all its loads with none back
# yet, which is the peak of a block's life, not its average.
#
# **Are a thread's loads really in flight together?** Not because the source says so. In
# `transpose_rows` each load is followed at once by its store into the tile, and a store must wait
# for its load; if the machine code kept that order, a thread would have one load in flight at a
# time, whatever the table says. The order is the compiler's choice (ptxas may issue a load early,
# above stores it does not depend on), so it has to be read in the compiled code, the **SASS**.
# `scripts/gpu_facts_transpose.py` reads it with `cuobjdump -sass` from the cubin the course
# compiles for sm_90 (NVRTC of CUDA 13): `transpose_rows` 32 × 8 issues its 4 global loads (`LDG`)
# before its first shared store (`STS`), and 32 × 16 its 2: batched. At 64 × 8 it issues 4,
# waits for the first of them to store it, then issues the other 4 before it stores the rest: up
# to 7 loads (28 bytes per thread) on their way at once, not the table's 8 (32 bytes), and a round
# trip to memory before the second 4 go out. (The script reads which loads each store waits for
# from the instructions' scoreboards: the first store waits for the first load alone.)
# `transpose_vec` (below) writes its loads as a phase of their own, every word into a register
# before any is stored, and its SASS issues all 8 loads first: written as a phase of its own, the
# batching is the source's doing, not the compiler's.
#
# **Exercise 5. Write it: the load phase, batched.** Fill in the kernel's load phase for a 32 × 32
# tile and a block of 32 × 8 threads, 4 words of the tile per thread, so that **each warp issues all
# its global loads before its first store to the tile**. Which 4 words a thread takes, where it keeps
# them until it stores them, and what it does at the matrix's edge are yours to decide; the store
# phase below is given, and reads the tile whole. The check runs your kernel on the emulator with
# the checker (grid ⌈n / 32⌉ × ⌈m / 32⌉) at 64 × 96, 1 × 1, 1 × 40, 40 × 1, 31 × 33, 33 × 31,
# 70 × 45 and 250 × 197, compares with NumPy, and holds it to three targets read from the trace:
# **batched** (in program order, as you write it: each warp issues all its global loads before its
# first store to the tile; ptxas may batch an interleaved loop too, as it did `transpose_rows`, but
# the exercise asks the source to), **no bank conflicts**, and **coalesced** global loads and
# stores. `.show(mine)` draws warp 0's instructions in order.

# %%
mine = r"""
extern "C" __global__ void transpose_batched(const elem_t* in, elem_t* out, int m, int n) {
    __shared__ elem_t tile[32][33];                  // a 32 x 32 tile of in, padded
    int r0 = blockIdx.y * 32, c0 = blockIdx.x * 32;  // the tile's corner in in (m rows x n columns)
    int x = threadIdx.x, y = threadIdx.y;            // a block of 32 x 8 threads: 4 words of the tile each
    // FILL ME IN (about 6 lines): tile[r][c] gets in's word at row r0 + r, column c0 + c, for the
    // whole tile (where that word is in the matrix), and each warp issues all its loads of in
    // before its first store to the tile
    __syncthreads();
    for (int j = 0; j < 32; j += 8)                  // store: the tile transposed, along rows of out
        if (c0 + y + j < n && r0 + x < m) out[(c0 + y + j) * m + r0 + x] = tile[x][y + j];
}"""
transpose.exercises.batched.check(mine)

# %% [markdown]
# ## Beyond the article: a 64 × 64 tile, loads batched, and the order of the tiles
#
# `transpose_vec` moves a 64 × 64 tile with 32 × 16 threads, 8 words each, in three phases
# (`Tile` in `transpose.cu`): **load** every word a thread needs into registers, all requests
# issued before any is used; **stash** them in the padded shared tile; **store** the tile's columns
# along the output's rows. Its block (32 / VEC, ROWS) can also ask for 8- or 16-byte vector
# accesses; the tuning (`docs/tuning/transpose.md`) found one word per access on 32 × 16 threads
# best on an H200.

# %%
source.show("transpose.cu", "transpose_tile", "transpose_vec")

# %%
print(transpose.launch_text("transpose_vec", a))
print("matches NumPy:", np.array_equal(transpose.run("transpose_vec", a), a.T))

# %% [markdown]
# A 2-D grid of 2 × 18 blocks, one per 64 × 64 tile, whatever the block's shape: the block only
# decides how many words each thread moves (here 8).
#
# **Exercise 6. Predict, then check: bytes in flight.** For four launches that neither the
# in-flight table nor the panel shows, predict the bytes one thread loads before its barrier and the
# blocks an SM holds, as (bytes, blocks). `transpose_rows`' block (bx, by) moves a bx × bx tile;
# `transpose_vec`'s block (32 / VEC, ROWS) shares out its fixed 64 × 64 tile (the source above);
# `course.device().describe()` lists the SM's limits, those of the GPU you run on. An SM's registers
# are a limit too, but these four kernels take at most 32 a thread, and every SM has at least 32 for
# each thread it can hold: count threads, blocks and shared memory. The check counts the bytes from the
# traces and the blocks from the device's limits.

# %%
my_flight = {
    ("transpose_padded", (128, 4)): (None, None),
    ("transpose_rows", (8, 4)): (None, None),
    ("transpose_vec", (16, 64)): (None, None),
    ("transpose_vec", (8, 64)): (None, None),
}
transpose.exercises.flight.check(my_flight)

# %% [markdown]
# ### Bytes in flight and barriers, measured
#
# The launches of the in-flight table, timed at 8192² float32 in one run, beside the device copy
# (`cudaMemcpy` of the same bytes: the 100 %) and CuPy:

# %% tags=["nbval-ignore-output"]
transpose.in_flight_speed()

# %% [markdown]
# Read it in steps, each a pair of rows that differ in one thing:
#
# 1. **The copy kernel against the device copy.** One word per thread, no barrier, 8 KB per SM at
#    most: what a one-word kernel can do on this GPU, the baseline for everything below. It stays
#    well under the device copy, which is not held to one word per thread: about
#    75 %<!-- from in_flight_speed: % of copy @ kernel=copy kernel 32×8 --> of it at 32 × 8.
# 2. **`transpose_padded` 32 × 8 against the copy kernel 32 × 8.** The same block, the same one
#    load per thread, the same 8 KB at most; the transpose adds a barrier and a trip through the
#    tile, and is the slower.
# 3. **`transpose_padded` 32 × 32 against 32 × 8.** The same kernel, the same 8 KB at most, no bank
#    conflict at 32 × 32 and a 4-way one at 32 × 8; yet 32 × 32 is the slower, about
#    55 %<!-- from in_flight_speed: % of copy @ kernel=transpose_padded 32×32 --> of the copy against
#    65 %<!-- from in_flight_speed: % of copy @ kernel=transpose_padded 32×8 -->. What differs is the
#    block: 1024 threads, 32 warps that all wait at the barrier for the block's slowest load, and
#    past it the block only stores, with no load in flight; an SM holds 2 such blocks. Nsight
#    Compute on this H100 (`scripts/gpu_facts_transpose.py`) measures that difference: more warps
#    waiting at the barrier per instruction issued at 32 × 32 than at 32 × 8 (7.9 against 5.2),
#    with as many warps active (87 % of the SM's slots in both), so the SM is not short of warps:
#    more of them are waiting at the barrier. The same run counts fewer waiting for a load at
#    32 × 32 (7.5 against 10.0). These are warp-cycles per instruction issued, and both launches
#    issue the same instructions while 32 × 32 runs longer, so per cycle the warps with a load out
#    fall by about a third at 32 × 32 (by Little's law, fewer bytes in flight) and the warps at the
#    barrier rise; the two stalls do not account for the whole of the longer run, and the other
#    stall reasons were not read here. `transpose_rows` 32 × 32, one word per thread in
#    blocks of 1024 too, lands beside `transpose_padded` 32 × 32. Blocks of 1024 cost the copy
#    kernel too, which has no barrier (a warp stores as soon as its own load is back):
#    62 %<!-- from in_flight_speed: % of copy @ kernel=copy kernel 32×32 --> at 32 × 32 against
#    75 %<!-- from in_flight_speed: % of copy @ kernel=copy kernel 32×8 --> at 32 × 8. Why is not
#    measured here (a guess, untested: an SM with 2 blocks has half its slots held by a block whose
#    last warps are still finishing); it says only that the barrier need not be all of what 1024
#    threads cost `transpose_padded`.
# 4. **More bytes in flight, one barrier per block.** `transpose_rows` at 32 × 16 (16 KB at most)
#    reaches about 79 %<!-- from in_flight_speed: % of copy @ kernel=transpose_rows 32×16 --> of the
#    copy, at 32 × 8 (32 KB) about 94 %<!-- from in_flight_speed: % of copy @ kernel=transpose_rows 32×8 -->.
#    The speed keeps rising well past the 4.4 KB Little's law asks for the reads with the idle
#    latency: the one-word kernels keep twice that at their peak and stop at 55 to
#    75 %<!-- from in_flight_speed: % of copy @ kernel=copy kernel 32×8 --> of the copy. The table's column is a block's peak, and a block with a barrier has loads in flight only
#    until they are back, then none while it stores, so an SM holds a fraction of that peak on
#    average; and a memory under load answers later than the 350 ns of an idle one, so Little's
#    law with the idle latency asks too little. A launch with a barrier needs several times that
#    figure at its peak. `transpose_rows` 64 × 8 is faster again,
#    96 %<!-- from in_flight_speed: % of copy @ kernel=transpose_rows 64×8 -->. Two things differ
#    from 32 × 8, and these timings do not separate them: its SASS lets a thread have up to 7 loads
#    (28 B) on their way at once, against 4 (16 B), though in two round trips; and each thread
#    moves twice the words between its block's start and its barrier's wait, so the barrier's
#    phase of step 3 comes half as often per byte.
# 5. **Batched, checked in the SASS.** `transpose_vec` 32 × 16 against `transpose_rows` 64 × 8: the
#    same 64 × 64 tile, the same 512 threads, the same 8 words per thread; vec issues its 8 loads at
#    once, rows 4 and then, once the first is back, 4 more. On this H100 they are level, rows a
#    hair ahead: vec
#    95.9 %<!-- from in_flight_speed: % of copy @ kernel=transpose_vec 32×16 --> of the copy, rows
#    96.3 %<!-- from in_flight_speed: % of copy @ kernel=transpose_rows 64×8 -->, and three repeated
#    runs of `scripts/gpu_facts_transpose.py` move each by 0.3 points at most, with rows ahead in
#    every one by 0.2 to 0.4. Past 32 KB in flight per SM, the second batch costs nothing
#    measurable here (on the H200 of an earlier run, vec was the faster by 1.8 points).
#
# What is left to the copy, about 4 points, the order of the tiles was meant to take, next.
# (`scripts/gpu_facts_transpose.py` repeats these timings to give their spread, and reads the
# warps' stall reasons with Nsight Compute: waiting at a barrier against waiting for a load, for
# the pair of step 3.)
#
# **Exercise 7. Measure and choose.** Pick the block of `transpose_rows` for an **int32 matrix of
# 4096 × 16384**, from (16, 16), (32, 16), (64, 16), (32, 4) and (64, 4): block (bx, by) moves a
# bx × bx tile, bx / by words per thread (of these, only 32 × 16 is timed above). On a GPU
# the check times every one of them at that shape and passes yours within 10 % of the fastest.
# Without one it can only rule blocks out, with the two lessons of the measured table: the bytes
# your launch keeps in flight per SM at most (loaded per thread before the barrier, times the
# threads an SM holds, counted by the source: the SASS may keep fewer out) must reach four times
# what Little's law asks for the reads with the device's figures (`transpose.littles_law()`), and
# a block of 1024 threads is out (step 3). The four is the course's rule of thumb, set between the
# 16 KB and 32 KB rows of this H100's table, not an edge the table measured, and untested on other
# GPUs. More than one block may pass that; the GPU's timing is what ranks them.

# %%
my_block = None  # a tuple (bx, by)
transpose.exercises.block.check(my_block)

# %% [markdown]
# ### The order of the tiles
#
# A 2-D grid numbers blocks along `blockIdx.x` first, and a GPU starts
# them roughly in that order, so the blocks running at one time read a few whole tile rows of `a`
# and write each of their 64 × 64 tiles into a different stretch of 64 rows of `out`. The last
# version numbers its tiles with a 1-D grid, down whole tile columns of `a` (`band_corner`), so the
# blocks running together write whole rows of `out`, front to back, as a copy writes:

# %%
source.show("transpose.cu", "band_corner", "transpose_grouped")

# %%
print(transpose.launch_text("transpose_grouped", a))
print("matches NumPy:", np.array_equal(transpose.run("transpose_grouped", a), a.T))

# %% [markdown]
# The launch changes again: a 1-D grid of ⌈1111 / 64⌉ × ⌈113 / 64⌉ = 36 tiles. Which block wrote
# each tile of `out` for a 512 × 512 matrix, from the traces (blocks 0–7 framed, as if the GPU held
# 8 at once; this H100 holds 528 of these blocks, 4 on each of its 132 SMs):

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 5.6))
transpose.draw_tile_order(axes)

# %% [markdown]
# With the 2-D grid, blocks 0–7 write a tile column of `out`: 256 bytes into each of 512 rows.
# With the 1-D grid they write a whole band of 64 rows, every byte of them. On the H200 where the
# order was tuned (`docs/tuning/transpose.md`) that took the same tiles, the same block and the
# same loads in flight from 94 %<!-- given: reference --> of the copy in the 2-D order to
# 97 %<!-- given: reference --> down whole tile columns. On this H100 the GPU table below measures
# no difference at 8192²:
# 96.0 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_vec --> of the copy in the
# 2-D order (`transpose_vec`), 95.9 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_grouped -->
# down whole tile columns (`transpose_grouped`), and at 16384² the order gains under a
# point (96.0 %<!-- from speed_table: % of copy @ shape=16384×16384,kernel=transpose_vec --> against
# 96.7 %<!-- from speed_table: % of copy @ shape=16384×16384,kernel=transpose_grouped -->). Which order
# the memory prefers depends on the GPU; what is left to the copy here is not the order.
#
# **Exercise 8. Predict, then check: which rows the first blocks write.** For matrices the picture
# does not show (m rows × n columns of `a`, 64 × 64 tiles), how many rows of `out` do blocks 0–7
# write between them, and how many bytes does each of those rows get from them? The check counts
# them from the traces of blocks 0–7.

# %%
my_rows = {
    ("transpose_vec", (512, 256)): (None, None),
    ("transpose_grouped", (256, 1024)): (None, None),
    ("transpose_grouped", (128, 2048)): (None, None),
}
transpose.exercises.order.check(my_rows)

# %% [markdown]
# Every version side by side, in global memory (sectors per request, 256 × 256, two blocks each):

# %%
transpose.sectors_table()

# %% [markdown]
# Only the two naive kernels waste sectors; from `transpose_tiled` on, every request reads and
# writes 4 sectors, as the copy does. What separates those versions on a GPU is no longer in this
# table: bank conflicts, the blocks' barriers, bytes in flight and the order of the tiles.
#
# ## The article's matrix is too small to show bandwidth
#
# 1111 × 113 four-byte words are 502 KB; a transpose reads them and writes them, about 1 MB in all.
# Even at this H100's datasheet 3.35 TB/s<!-- given: datasheet --> that is
# 0.3 µs<!-- given: datasheet -->, yet every kernel takes a few microseconds from start to end on
# the GPU, as long as the device copy of the same bytes
# (4.1 µs<!-- from article_table: µs @ shape=1111×113,kernel=device copy --> on this H100): the fixed cost of a launch (starting the blocks, one round trip to DRAM, waiting for
# the last block). The launches themselves say why: how many
# blocks, how many an SM holds at once, and how many times (**waves**) the grid fills the GPU's 132
# SMs:

# %%
transpose.launch_table()

# %% [markdown]
# At 1111 × 113 no launch fills the GPU even once (waves below 1: `transpose_grouped` keeps 36 of
# 132 SMs busy), so no kernel can reach the memory's bandwidth, and the timings differ by a
# microsecond or two. At 8192² (512 MiB moved) every grid fills the GPU 31 to 248 times and the
# bandwidth lesson shows. The article's single event-timed launch of this matrix measures the
# launch, not the kernel.
#
# **How the article timed it.** `cudaEventRecord` before and after one launch, the very first:
# with CUDA's lazy loading (the default on Linux since CUDA 12.2, on Windows since 12.3) that
# launch also loads the kernel onto the GPU. The article's build was likely a Windows one (its
# `#include <device_launch_parameters.h>` is Visual Studio's CUDA template), with modules loaded
# eagerly in 2022, but a first launch is still a cold one, and one sample says nothing about the
# spread. Between the first record and the launch the article calls
# `cudaEventQuery(kernel_start)`, an idiom (Fan Zheyong's *CUDA 编程：基础与实践*, ch. 5, writes it
# the same way): on a GPU in WDDM mode, as under Windows, the driver batches work, and the query
# pushes the batch out so that the start event is submitted before the kernel. The call is right; the article's description of it,
# recording the start without blocking, is not: `cudaEventRecord` does the recording, and the query
# only asks whether the work before the event has finished, returning at once. The
# timings below follow the rules of `course.bench`: warm-up launches, the median of 20 or more
# CUDA-event timings, inputs rotated so that none is in the L2 cache, a device-to-device copy of the
# same bytes and CuPy's `cupy.ascontiguousarray(a.T)` in the same run. The article's host code has
# two more slips that do not change its result: it copies the result back with
# `cudaMemcpyDeviceToDevice` into host memory (this works only because `cudaMallocHost` memory is
# mapped into the GPU's address space; the kind is `cudaMemcpyDeviceToHost`), and it frees that
# pinned memory with `cudaFree` instead of `cudaFreeHost`, an error nobody sees because no return
# code is checked.
#
# ## Try it
#
# Pick a version, a block and N (the matrix is ⌊√N⌋ rows, as square as N allows, holding 0, 1, 2,
# …). The panel runs the kernel on this machine's backend, compares with NumPy, runs the checker,
# traces block 0 of the top-left 128 × 128 and draws one warp instruction up close (the tile read
# onto the banks, or, for the naive kernels, their strided access onto its sectors). Its numbers,
# read from the trace of block 0:
#
# - **global reads / writes: sectors per request** (and the ideal: 4 for a warp's 128 bytes);
# - **shared stores to / loads from the tile: worst conflict** (1-way is none), and **shared
#   wavefronts per request**, the average passes of the tile's accesses;
# - the **grid**, and the most **elements per thread**; on a GPU, the time of one run.
#
# Try `transpose_article` with a block of 32 × 8 (wrong, and the checker says why), then 32 × 32
# (right, 32-way), then `transpose_padded` at 32 × 32 and at 32 × 8.

# %% tags=["nbval-ignore-output"]
transpose.panel(version="transpose_article", n=4096, block=(32, 32))

# %% [markdown]
# ## How fast on a GPU
#
# A transpose reads and writes every element once, so its speed is counted as bytes moved per
# second (2 × 4 bytes per element), and held against a device-to-device copy of the same bytes in
# the same run: no kernel that reads and writes memory does much better than the copy.
#
# **The article's kernel and its fixes, each with its own launch.** The launch is named in every
# row: the article's blocks of 32 × 32 (its code) and 16 × 16 (its text), and the fixed kernels'
# 32 × 8. Its own matrix, 1111 × 113, and one big enough for bandwidth to show, 8192², both `int`:

# %% tags=["nbval-ignore-output"]
transpose.article_table()

# %% [markdown]
# Read the 1111 × 113 rows first: every kernel takes a few microseconds, as the device copy does,
# the launch-bound regime of the last section, so they say nothing about bandwidth. They still show
# the two bugs as latency: the 32-way bank conflict of the 32 × 32 tile costs about a microsecond
# (`transpose_article` 32 × 32 at
# 5.28 µs<!-- from article_table: µs @ shape=1111×113,kernel=transpose_article 32×32 --> against
# `transpose_padded` 32 × 32 at
# 4.29 µs<!-- from article_table: µs @ shape=1111×113,kernel=transpose_padded 32×32 -->, the same
# block and grid without the conflict), and the naive kernel's strided stores more than that. At 8192², the article's kernel with its 32 × 32 block reaches only about
# 33 %<!-- from article_table: % of copy @ shape=8192×8192,kernel=transpose_article 32×32 --> of the
# copy, level with CuPy (a hair slower, at
# 0.99<!-- from article_table: × CuPy @ shape=8192×8192,kernel=transpose_article 32×32 -->× CuPy);
# `transpose_tiled` at 32 × 32 is the same kernel and the same speed.
# Removing the 32-way conflict (`transpose_padded` at 32 × 32) lifts it to about
# 55 %<!-- from article_table: % of copy @ shape=8192×8192,kernel=transpose_padded 32×32 -->. The
# 16 × 16 block of the article's text, with its 8-way conflict, does better
# (61 %<!-- from article_table: % of copy @ shape=8192×8192,kernel=transpose_article 16×16 -->), and
# so do the 32 × 8 blocks, tiled (8-way:
# 63 %<!-- from article_table: % of copy @ shape=8192×8192,kernel=transpose_tiled 32×8 -->) or padded
# (4-way: 65 %<!-- from article_table: % of copy @ shape=8192×8192,kernel=transpose_padded 32×8 -->):
# past the 32-way conflict, the block's 1024 threads cost more than an 8-way conflict (step 3 of the
# measured bytes in flight). `transpose_rows`, four words per thread, reaches about
# 94 %<!-- from article_table: % of copy @ shape=8192×8192,kernel=transpose_rows 32×8 -->; the naive
# kernel stays at about 15 %<!-- from article_table: % of copy @ shape=8192×8192,kernel=transpose_naive 32×8 -->.
#
# **Every version against the copy and CuPy**, at its benchmark block, at the article's size and
# two large ones:

# %% tags=["nbval-ignore-output"]
transpose.speed_table()

# %% [markdown]
# At 8192² on this H100 the story reads in order: `transpose_naive` about
# 15 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_naive --> of the copy,
# `transpose_naive_cols` about 54 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_naive_cols -->,
# the tiles at 32 × 8 about 63 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_tiled -->
# (tiled) and 65 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_padded -->
# (padded), `transpose_rows` about 94 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_rows -->,
# `transpose_vec` and `transpose_grouped` level at
# 96.0 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_vec --> and
# 95.9 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_grouped -->, grouped
# 2.9<!-- from speed_table: × CuPy @ shape=8192×8192,kernel=transpose_grouped -->× faster than
# `cupy.ascontiguousarray(a.T)`, which moves the same bytes at about
# 33 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=cupy.ascontiguousarray(a.T) --> of the
# copy. The 16384² rows read the same, with `transpose_grouped` the fastest there, by under a point. At
# 1111 × 113 every row is a few microseconds again.
#
# **What to call outside the course.** `cupy.ascontiguousarray(a.T)` is what CuPy gives you: an
# elementwise copy, a 1-D kernel over consecutive elements of the output, reading `a.T` through
# its strides, as `transpose_naive_cols` does; it sits between the two naive kernels, below even
# `transpose_naive_cols`. This notebook does not measure why; a likely part is the block's shape:
# the warps of CuPy's 1-D block all read down the same column of `a`, and the other 7 words of
# each sector they fetch belong to output rows written by other blocks, while
# `transpose_naive_cols`' 32 × 8 block holds the 8 output rows that share those sectors (the reuse
# the coalescing section guessed at). cuBLAS has a transpose of its own:
# `cupy.cublas.geam("T", "N", 1.0, a, 0.0, out, out=out)` computes `out = 1·aᵀ + 0·out`, for
# floating and complex types only (float32, float64, complex64, complex128: cuBLAS's S, D, C and
# Z `geam`; no integer type, so no row at the int32 size), timed in the table as
# `cupy.cublas.geam`. On this H100 it runs level with `transpose_grouped`, a point or less behind:
# 95 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=cupy.cublas.geam --> of the copy
# against 96 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_grouped --> at
# 8192², 96 %<!-- from speed_table: % of copy @ shape=16384×16384,kernel=cupy.cublas.geam --> against
# 97 %<!-- from speed_table: % of copy @ shape=16384×16384,kernel=transpose_grouped --> at 16384², and
# 2.9<!-- from speed_table: × CuPy @ shape=8192×8192,kernel=cupy.cublas.geam -->× CuPy at 8192².
# For a transpose that matters, use a tiled kernel like `transpose_grouped`, cuBLAS's `geam`, or
# a library's tensor permutation (cuTENSOR's `cutensorPermute`; not measured here, and not in
# CuPy's `cupyx.cutensor`, which has contractions, reductions and elementwise operations but no
# permutation: CuPy binds it only as the low-level `cupy_backends.cuda.libs.cutensor.permute`, on
# raw handles and plans), rather than an elementwise copy through strides.
#
# **Against N.** From the article's 1111 × 113 to 16384², float32, beside the device copy (read +
# write) and the datasheet peak, drawn as lines:

# %% tags=["nbval-ignore-output"]
records = transpose.speed_against_n()
fig, ax = plt.subplots(figsize=(9, 4.5))
transpose.plot_speed(ax, records)

# %% [markdown]
# On the left, at 1111 × 113, every line sits low and close together, launch-bound. As N grows the
# grids fill the GPU many times over and the lines separate; by 8192² each has settled at its share
# of the copy: `transpose_grouped` just under the device copy, the naive kernel well below CuPy.
#
# ## Summary
#
# - A transpose is all memory. A warp's 32 threads are consecutive in `threadIdx.x`: lay them
#   along a row of the input and they write down a column of the output (32 sectors per request
#   instead of 4 with a 32-wide block), or the reverse. Without shared memory, no block shape makes
#   both sides take only the sectors their bytes need (exercise 1 counts what the shape changes).
# - A tile in shared memory makes both global accesses row-wise; reading the tile down a column
#   is then a **32-way bank conflict** (8-way at 16 × 16), not "almost as efficient" as rows, as the
#   article says. One word of padding per row (stride 33) removes it.
# - The article's kernel is right for its own launch, a square block as big as its tile (it uses
#   `blockDim.x` for both dimensions); its bounds checks are right, and needed: the store tests
#   the element it writes, not the one it loaded, and without the tests the edge blocks write past
#   the output. The 0 it writes for an out-of-bounds load is never read.
# - Then the memory must be kept busy. By Little's law with an idle memory's latency, a
#   transpose's loads (half its traffic) need about 4.4 KB in flight per SM on this H100; one word
#   per thread keeps 8 KB at most, and still stops at 55 to
#   75 %<!-- from in_flight_speed: % of copy @ kernel=copy kernel 32×8 --> of the copy: a loaded
#   memory answers later than an idle one, a block with a barrier has no load in flight once past
#   it, and blocks of 1024 threads (two per SM) cost more again: fewer of their warps have a load
#   out and more wait at the barrier (measured with Nsight Compute, in part only), and the
#   barrier-free copy kernel loses with them too,
#   for a reason not measured here. Several words per thread (`transpose_rows`), loads issued
#   before the barrier (checked in the SASS, not read from the source) and 64 × 64 tiles keep tens
#   of KB. Visiting the tiles down whole tile columns, which
#   writes the output front to back, won 3 points on the H200 where it was tuned and none
#   measurable on this H100 at 8192². On this H100 that takes the transpose from about 33 %<!-- from article_table: % of copy @ shape=8192×8192,kernel=transpose_article 32×32 -->
#   of the copy (the article's kernel at 8192²) to about
#   96 %<!-- from speed_table: % of copy @ shape=8192×8192,kernel=transpose_grouped -->,
#   2.9<!-- from speed_table: × CuPy @ shape=8192×8192,kernel=transpose_grouped -->× `cupy.ascontiguousarray(a.T)`.
# - The article's 1111 × 113 matrix is 1 MB of traffic: every kernel takes the few microseconds of
#   a launch, too few to show bandwidth, though they still show the bank conflict and the strided
#   store as about a microsecond of latency each; its one event-timed launch cannot tell them apart.

# %%
course.my_progress("transpose")

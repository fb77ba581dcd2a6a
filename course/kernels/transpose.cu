// Matrix transpose: the article's shared-memory tiled kernel (an m x n int matrix, m = 1111,
// n = 113), its bugs beside their fixes, and the kernels that go beyond it. No arithmetic at
// all: every version moves m*n words from `in` (m rows x n columns, row-major) to `out`
// (n rows x m columns, row-major), out[c][r] = in[r][c]; what changes is only the addressing.
//
// The element type comes in as a -D option: ELEM is a 4-byte word, float or int (the article's).
// Indexes are int: m * n must stay below 2^31. A 2-D grid has at most 65535 blocks in y, so
// the 2-D-grid kernels take at most 65535 * (rows per block) rows; transpose_grouped's 1-D
// grid has no such limit. common.cuh's sums and scans are not used: a transpose adds nothing.
#ifndef ELEM
#define ELEM float
#endif
typedef ELEM elem_t;

// ---- 1. Copy: a read + write copy, one word per thread (not a ceiling: the tables' 100 % is
// cudaMemcpy, and kernels with several words per thread beat this one). Not a transpose: each
// thread copies in[row][col] to out[row][col], both coalesced (a warp touches 32 consecutive
// words). Any 2-D block; grid (ceil(n/bx), ceil(m/by)).
extern "C" __global__ void copy(const elem_t* in, elem_t* out, int m, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n) {
        elem_t v = in[row * n + col];
        out[row * n + col] = v;
    }
}

// ---- 2. Naive transpose: coalesced reads, strided writes.
// The copy with the output index swapped: a warp reads 32 consecutive words of a row, but
// writes them down a column of out, m words apart: 32 sectors per write instead of 4.
// Any 2-D block; grid (ceil(n/bx), ceil(m/by)), as the copy.
extern "C" __global__ void transpose_naive(const elem_t* in, elem_t* out, int m, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n) {
        elem_t v = in[row * n + col];  // a row of in: coalesced
        out[col * m + row] = v;         // a column of out: m words apart
    }
}

// ---- 3. Naive transpose, the mirror: strided reads, coalesced writes.
// Threads are laid over the output instead: a warp writes 32 consecutive words of an output
// row and reads them down a column of in. Writes now coalesce and reads do not. Timed, it is
// the faster naive kernel; why is not measured (a 32 x 8 block holds the 8 warps that share
// each read sector: L1 may serve the rest). Any 2-D block; grid (ceil(m/bx), ceil(n/by)).
extern "C" __global__ void transpose_naive_cols(const elem_t* in, elem_t* out, int m, int n) {
    int orow = blockIdx.y * blockDim.y + threadIdx.y;  // an output row: a column of in
    int ocol = blockIdx.x * blockDim.x + threadIdx.x;  // an output column: a row of in
    if (orow < n && ocol < m) {
        elem_t v = in[ocol * n + orow];  // a column of in: n words apart
        out[orow * m + ocol] = v;         // a row of out: coalesced
    }
}

// ---- 4. The article's shared-memory tiled transpose (its `cuda_transpose`, as printed).
// A block stages a BLOCK_SIZE x BLOCK_SIZE tile in shared memory, then writes it out
// transposed, so both global accesses walk along rows. Changed from the article only so that
// one file serves every case: `int` became elem_t, and the BLOCK_SIZE #define (32 in the
// code, 16 in the text) became a template parameter. Launch: block (BLOCK_SIZE, BLOCK_SIZE),
// grid (ceil(n/BLOCK_SIZE), ceil(m/BLOCK_SIZE)).
// BUG 1: the tile is read by column (smem_matrix[threadIdx.x][threadIdx.y]): the 32 lanes of
// a warp read words BLOCK_SIZE apart, all in one bank at BLOCK_SIZE 32: 32-way bank conflicts
// (8-way at 16).
// BUG 2: the write index uses blockDim.x for both dimensions, and the write phase reads
// smem_matrix[threadIdx.x][threadIdx.y]: only a square block equal to the tile is right. A
// (32, 8) block reads tile rows nobody wrote and writes to the wrong places.
template <int BLOCK_SIZE>
__global__ void transpose_article(elem_t* matrix, elem_t* tr_matrix, int m, int n) {
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;
    __shared__ elem_t smem_matrix[BLOCK_SIZE][BLOCK_SIZE];
    smem_matrix[threadIdx.y][threadIdx.x] = row < m && col < n ? matrix[row * n + col] : 0;
    __syncthreads();
    if (blockIdx.x * blockDim.x + threadIdx.y < n && threadIdx.x + blockIdx.y * blockDim.x < m)
        tr_matrix[threadIdx.x + blockIdx.y * blockDim.x + m * (blockIdx.x * blockDim.x + threadIdx.y)] =
            smem_matrix[threadIdx.x][threadIdx.y];
    return;
}

// ---- 4a. The article's kernel with its two bounds checks taken out (BLOCK_SIZE 32).
// Not a version: notebook 02 runs it on the emulator only, to show what the checks protect.
// The grid is rounded up to whole tiles, so the blocks on the right and bottom edges have
// threads past the matrix: their loads read past the end of `matrix`, and their stores land
// in the wrong row of `tr_matrix` or past its end. On a GPU that is a fault or silent damage.
extern "C" __global__ void transpose_article_unchecked(elem_t* matrix, elem_t* tr_matrix, int m, int n) {
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;
    __shared__ elem_t smem_matrix[32][32];
    smem_matrix[threadIdx.y][threadIdx.x] = matrix[row * n + col];
    __syncthreads();
    tr_matrix[threadIdx.x + blockIdx.y * blockDim.x + m * (blockIdx.x * blockDim.x + threadIdx.y)] =
        smem_matrix[threadIdx.x][threadIdx.y];
}

// ---- 4b. The article's kernel with the load's zero fill taken out (BLOCK_SIZE 32).
// Not a version: notebook 02 runs it through the checker to show that the 0 the article writes
// for an out-of-bounds load is never read. Thread (x, y) stores tile word [x][y], which thread
// (y, x) loaded, and the two tests are the same inequalities: every word a store reads was loaded.
extern "C" __global__ void transpose_article_skip(elem_t* matrix, elem_t* tr_matrix, int m, int n) {
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;
    __shared__ elem_t smem_matrix[32][32];
    if (row < m && col < n) smem_matrix[threadIdx.y][threadIdx.x] = matrix[row * n + col];
    __syncthreads();
    if (blockIdx.x * blockDim.x + threadIdx.y < n && threadIdx.x + blockIdx.y * blockDim.x < m)
        tr_matrix[threadIdx.x + blockIdx.y * blockDim.x + m * (blockIdx.x * blockDim.x + threadIdx.y)] =
            smem_matrix[threadIdx.x][threadIdx.y];
}

// ---- 5. Tiled, fixed: any 2-D block.
// The tile is blockDim.y rows x blockDim.x columns (dynamic shared memory, bx*by words). Its
// transpose is bx rows x by columns, so for the write the threads are renumbered: thread t
// writes output row t / by, column t % by, and consecutive threads walk along an output row
// whatever the block's shape. Reading the tile by column still conflicts (bx words apart).
extern "C" __global__ void transpose_tiled(const elem_t* in, elem_t* out, int m, int n) {
    extern __shared__ elem_t tile[];  // blockDim.y x blockDim.x
    int r0 = blockIdx.y * blockDim.y, c0 = blockIdx.x * blockDim.x;  // the tile's corner in `in`
    int row = r0 + threadIdx.y, col = c0 + threadIdx.x;
    if (row < m && col < n) tile[threadIdx.y * blockDim.x + threadIdx.x] = in[row * n + col];
    __syncthreads();
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    int i = t % blockDim.y, j = t / blockDim.y;  // out[c0 + j][r0 + i] = in[r0 + i][c0 + j]
    if (c0 + j < n && r0 + i < m) out[(c0 + j) * m + r0 + i] = tile[i * blockDim.x + j];
}

// ---- 6. Padded tile.
// One unused word at the end of every tile row (row stride bx + 1): going down a column now
// moves 33 words at bx = 32, one bank further each row, so a warp reading a column hits 32
// different banks. The [32][33] tile of NVIDIA's transpose. Any 2-D block; (bx + 1) * by words
// of dynamic shared memory. Conflict-free when by = 32 and bx is even (the 32 x 32 block); a
// shorter block puts 32 / by tile columns in one warp's read, and those collide (4-way at 32 x 8).
extern "C" __global__ void transpose_padded(const elem_t* in, elem_t* out, int m, int n) {
    extern __shared__ elem_t tile[];  // blockDim.y x (blockDim.x + 1)
    const int stride = blockDim.x + 1;
    int r0 = blockIdx.y * blockDim.y, c0 = blockIdx.x * blockDim.x;
    int row = r0 + threadIdx.y, col = c0 + threadIdx.x;
    if (row < m && col < n) tile[threadIdx.y * stride + threadIdx.x] = in[row * n + col];
    __syncthreads();
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    int i = t % blockDim.y, j = t / blockDim.y;
    if (c0 + j < n && r0 + i < m) out[(c0 + j) * m + r0 + i] = tile[i * stride + j];
}

// ---- 7. Fewer threads, several elements each: TILE x ROWS threads move a TILE x TILE tile.
// NVIDIA's transposeNoBankConflicts (TILE 32, ROWS 8: 4 elements per thread). Each load is
// followed by its store into the tile: the source does not batch the loads, the compiler may
// (32 x 8: 4 LDG before the first STS, in the SASS; 64 x 8: 4 + 4). Index arithmetic is paid
// once for all of a thread's elements; a barrier holds 256 threads instead of 1024. Padded
// static tile [TILE][TILE + 1]. Block (TILE, ROWS), ROWS dividing TILE; grid (ceil(n/TILE), ceil(m/TILE)).
template <int TILE, int ROWS>
__global__ void transpose_rows(const elem_t* __restrict__ in, elem_t* __restrict__ out, int m, int n) {
    __shared__ elem_t tile[TILE][TILE + 1];
    int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
    int x = threadIdx.x, y = threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS)
        if (r0 + y + j < m && c0 + x < n) tile[y + j][x] = in[(r0 + y + j) * n + c0 + x];
    __syncthreads();
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS)
        if (c0 + y + j < n && r0 + x < m) out[(c0 + y + j) * m + r0 + x] = tile[x][y + j];
}

// ---- Beyond: wider accesses, more bytes in flight, the tile's shape and the order tiles go in.
// VEC words per access (VEC 4: one 16-byte load or store per thread instead of four 4-byte
// ones, so a warp asks for 512 bytes at a time) and every load of a thread issued before any
// is used (all its vectors are in flight together: Little's law wants tens of KB in flight per
// SM to keep an H100/H200's memory busy). Shared memory stays 4-byte words in a padded
// [TILE_R][TILE_C + 1] tile, written and read one word at a time: with 32/VEC threads across, a
// warp covers VEC tile rows x 32 columns, which lands on 32 different banks both ways (the row
// stride is 1 mod 32). Rows whose length is not a multiple of VEC are moved one word at a time
// (a vector must be VEC-word aligned), so any shape stays right.
template <int V>
struct alignas(V * sizeof(elem_t)) Vec {
    elem_t v[V];
};

// One TILE_R x TILE_C tile of `in` whose corner is (r0, c0), written out as a TILE_C x TILE_R
// tile of `out`. Block (32 / VEC, ROWS); TILE_R and TILE_C multiples of 32, ROWS dividing both.
// Each thread moves TILE_R * TILE_C / (block threads) words: (TILE_R / ROWS) * (TILE_C / 32)
// vectors in, (TILE_C / ROWS) * (TILE_R / 32) vectors out. Three phases, so that a kernel can
// put the next tile's loads in flight before it stores this one (see the tuning script):
// load (global -> registers), stash (registers -> shared), store (shared -> global).
template <int TILE_R, int TILE_C, int ROWS, int VEC>
struct Tile {
    typedef elem_t Shared[TILE_R][TILE_C + 1];  // padded: the row stride is 1 mod 32 banks
    typedef Vec<VEC> Regs[TILE_R / ROWS][TILE_C / 32];

    // 1. load: rows y, y + ROWS, ... of the tile; 32 words apart along each row; every vector
    // requested before any is used
    static __device__ __forceinline__ void load(const elem_t* __restrict__ in, int m, int n, int r0, int c0,
                                                Regs& v) {
        const int x = VEC * threadIdx.x, y = threadIdx.y;
#pragma unroll
        for (int r = 0; r < TILE_R / ROWS; ++r)
#pragma unroll
            for (int h = 0; h < TILE_C / 32; ++h) {
                const int row = r0 + y + r * ROWS, col = c0 + x + 32 * h;
#pragma unroll
                for (int k = 0; k < VEC; ++k) v[r][h].v[k] = 0;
                if (row < m) {
                    if (n % VEC == 0 && col < n) {
                        v[r][h] = *reinterpret_cast<const Vec<VEC>*>(in + row * n + col);
                    } else {
#pragma unroll
                        for (int k = 0; k < VEC; ++k)
                            if (col + k < n) v[r][h].v[k] = in[row * n + col + k];
                    }
                }
            }
    }

    // 2. stash: the vectors into the tile, one word at a time, along its rows
    static __device__ __forceinline__ void stash(const Regs& v, Shared& tile) {
        const int x = VEC * threadIdx.x, y = threadIdx.y;
#pragma unroll
        for (int r = 0; r < TILE_R / ROWS; ++r)
#pragma unroll
            for (int h = 0; h < TILE_C / 32; ++h)
#pragma unroll
                for (int k = 0; k < VEC; ++k) tile[y + r * ROWS][x + 32 * h + k] = v[r][h].v[k];
    }

    // 3. store: output row c0 + c is column c of the tile; a thread gathers VEC consecutive
    // words of it (tile rows x .. x + VEC - 1) and writes them with one vector store.
    // STREAM: through __stcs (evict-first: the output is not read again).
    template <bool STREAM = false>
    static __device__ __forceinline__ void store(const Shared& tile, elem_t* __restrict__ out, int m, int n,
                                                 int r0, int c0) {
        const int x = VEC * threadIdx.x, y = threadIdx.y;
#pragma unroll
        for (int r = 0; r < TILE_C / ROWS; ++r)
#pragma unroll
            for (int h = 0; h < TILE_R / 32; ++h) {
                const int c = y + r * ROWS, orow = c0 + c, ocol = r0 + x + 32 * h;
                Vec<VEC> w;
#pragma unroll
                for (int k = 0; k < VEC; ++k) w.v[k] = tile[x + 32 * h + k][c];
                if (orow < n) {
                    if (m % VEC == 0 && ocol < m) {
                        put<STREAM>(out + orow * m + ocol, w);
                    } else {
#pragma unroll
                        for (int k = 0; k < VEC; ++k)
                            if (ocol + k < m) out[orow * m + ocol + k] = w.v[k];
                    }
                }
            }
    }

    template <bool STREAM>
    static __device__ __forceinline__ void put(elem_t* p, const Vec<VEC>& w) {
        if (!STREAM) {
            *reinterpret_cast<Vec<VEC>*>(p) = w;
        } else if (VEC == 4) {
            __stcs(reinterpret_cast<uint4*>(p), *reinterpret_cast<const uint4*>(&w));
        } else if (VEC == 2) {
            __stcs(reinterpret_cast<uint2*>(p), *reinterpret_cast<const uint2*>(&w));
        } else {
            __stcs(reinterpret_cast<unsigned*>(p), *reinterpret_cast<const unsigned*>(&w));
        }
    }
};

template <int TILE_R, int TILE_C, int ROWS, int VEC>
__device__ __forceinline__ void transpose_tile(const elem_t* __restrict__ in, elem_t* __restrict__ out, int m,
                                               int n, int r0, int c0) {
    typedef Tile<TILE_R, TILE_C, ROWS, VEC> T;
    __shared__ typename T::Shared tile;
    typename T::Regs v;
    T::load(in, m, n, r0, c0, v);
    T::stash(v, tile);
    __syncthreads();
    T::store(tile, out, m, n, r0, c0);
}

// ---- 8. Vector accesses, bigger and non-square tiles.
// Block (32 / VEC, ROWS); grid (ceil(n / TILE_C), ceil(m / TILE_R)). With VEC 1 and a 32 x 32
// tile this is kernel 7 (block (32, ROWS)) with its loads batched.
template <int TILE_R, int TILE_C, int ROWS, int VEC>
__global__ void transpose_vec(const elem_t* __restrict__ in, elem_t* __restrict__ out, int m, int n) {
    transpose_tile<TILE_R, TILE_C, ROWS, VEC>(in, out, m, n, blockIdx.y * TILE_R, blockIdx.x * TILE_C);
}

// The corner (r0, c0) of tile number t when tiles are numbered down bands of GROUP tile rows,
// column by column within a band (the last band may be shorter). A GROUP of at least the
// matrix's tile rows numbers the tiles down whole tile columns.
template <int TILE_R, int TILE_C, int GROUP>
__device__ __forceinline__ void band_corner(int t, int m, int n, int& r0, int& c0) {
    const int tiles_x = (n + TILE_C - 1) / TILE_C, tiles_y = (m + TILE_R - 1) / TILE_R;
    const int group = min(GROUP, tiles_y);                  // group * tiles_x: at most the tile count
    const int band = t / (group * tiles_x);                 // which band of `group` tile rows
    const int height = min(group, tiles_y - band * group);  // the last band may be shorter
    const int i = t - band * group * tiles_x;               // position in the band, column by column
    r0 = (band * group + i % height) * TILE_R;
    c0 = (i / height) * TILE_C;
}

// ---- 9. The same tiles, visited down bands of GROUP tile rows.
// With a 2-D grid the blocks on the GPU at one time read a few whole tile rows of `in` and
// write 256 bytes into each of thousands of rows of `out`. Here a 1-D grid numbers the tiles
// down GROUP tile rows before moving right. Tile column k of `in` is rows k * TILE_C onwards of
// `out`, so when a band is the whole height (GROUP at least the matrix's tile rows) the blocks
// in flight write a few whole rows of `out`: one stretch of memory, front to back, as a copy
// writes it; their reads are 256-byte pieces of every row of `in`, which DRAM minds less.
// Measured on the H200 (docs/tuning/transpose.md): 97 % of the copy against 94 % for the 2-D
// grid. Block (32 / VEC, ROWS); grid ceil(m / TILE_R) * ceil(n / TILE_C), 1-D.
template <int TILE_R, int TILE_C, int ROWS, int VEC, int GROUP>
__global__ void transpose_grouped(const elem_t* __restrict__ in, elem_t* __restrict__ out, int m, int n) {
    int r0, c0;
    band_corner<TILE_R, TILE_C, GROUP>(blockIdx.x, m, n, r0, c0);
    transpose_tile<TILE_R, TILE_C, ROWS, VEC>(in, out, m, n, r0, c0);
}

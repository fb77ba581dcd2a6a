"""Notebook 02's exercises: answers that pass, and wrong answers a learner writes."""

from course.transpose.exercises import (
    BANKS_STUB,
    BATCHED_STUB,
    STORE_STUB,
    flight_truth,
    order_truth,
    sector_truth,
    ways_truth,
)

LOAD_TEST = "if (r0 + y + j < m && c0 + x < n)        // <- the load's test, copied: fix it for the store"
STORE = STORE_STUB.replace(LOAD_TEST, "if (c0 + y + j < n && r0 + x + k < m)")

# one word of padding shifts each tile row one bank; a warp's load reads 8 rows x 4 columns, so the
# rows must be 4 banks apart: a row stride of 36 (4 mod 32) puts the 32 words in 32 banks
BANKS = BANKS_STUB.replace("tile[8][32];   ", "tile[8][32 + 4];")

FILL = """    // FILL ME IN (about 6 lines): tile[r][c] gets in's word at row r0 + r, column c0 + c, for the
    // whole tile (where that word is in the matrix), and each warp issues all its loads of in
    // before its first store to the tile"""
assert FILL in BATCHED_STUB
# tile rows y, y + 8, y + 16, y + 24: a warp (one y) loads along rows of in and stores along rows of the tile
BATCHED = BATCHED_STUB.replace(
    FILL,
    """    elem_t v[4];                                     // this thread's 4 words, in registers
    for (int k = 0; k < 4; ++k)                      // load: every word into a register first
        v[k] = r0 + y + 8 * k < m && c0 + x < n ? in[(r0 + y + 8 * k) * n + c0 + x] : 0;
    for (int k = 0; k < 4; ++k)                      // stash: then the registers into the tile
        tile[y + 8 * k][x] = v[k];""",
)

SOLUTIONS = {
    "sectors": sector_truth(),  # {(128, 2): (4, 32), (8, 32): (4, 8), (4, 64): (8, 4), (2, 128): (16, 4)}
    "store": STORE,
    "ways": ways_truth(),  # tiled 16x32: (1, 16); padded 8x8: (2, 2), 64x16: (1, 2), 16x8: (2, 2)
    "banks": BANKS,
    "flight": flight_truth(),  # H100: padded 128x4: (4, 4); rows 8x4: (8, 32); vec 16x64: (16, 2), 8x64: (32, 4)
    "batched": BATCHED,
    "order": order_truth(),  # vec 512x256: (256, 512); grouped 256x1024: (128, 1024), 128x2048: (256, 512)
    "block": (32, 4),  # 64 KB in flight per SM; (64, 4) passes too (on a GPU: within 10 % of the fastest)
}

_SECTORS = sector_truth()
_WAYS = ways_truth()
_FLIGHT = flight_truth()
_ORDER = order_truth()

WRONG = {
    "sectors": [
        # the text's 32 x 8 answer for every block: the writes are named, not their counts
        ({k: (4.0, 32.0) for k in _SECTORS}, "'writes: sectors per request' is not what the trace counts"),
        # "a 128-wide block reads its 128 words": the warp is 32 lanes, a quarter of one row of 128 x 2
        ({**_SECTORS, (128, 2): (16.0, 32.0)}, "(128, 2): 'reads: sectors per request'"),
        # "each lane reads its own sector" at 2 x 128: a warp reads 16 rows, 2 neighbouring words in each
        ({**_SECTORS, (2, 128): (32.0, 4.0)}, "(2, 128): 'reads: sectors per request'"),
        # reads always coalesced (4): wrong only at 4 x 64, where a warp reads 8 rows
        ({k: (4.0, v[1]) for k, v in _SECTORS.items()}, "'reads: sectors per request'"),
        ({(128, 2): (4, 32)}, "fill in every block"),
    ],
    "store": [
        # one test on the flat index: nothing past the end of out, but columns >= m wrap into the next row
        (
            STORE.replace(
                "if (c0 + y + j < n && r0 + x + k < m)", "if ((c0 + y + j) * m + r0 + x + k < n * m)"
            ),
            "its row and its column each against out's own bounds",
        ),
        # the second half of the tile's rows (k = 32) forgotten in the test
        (STORE.replace("r0 + x + k < m)", "r0 + x < m)"), "out-of-bounds"),
        # m and n swapped: the store's coordinates against the wrong sides of out
        (
            STORE.replace("if (c0 + y + j < n && r0 + x + k < m)", "if (c0 + y + j < m && r0 + x + k < n)"),
            "was never written",
        ),
        # off by one
        (STORE.replace("r0 + x + k < m)", "r0 + x + k <= m)"), "out-of-bounds"),
        # a test too strict: the last column of out never written
        (STORE.replace("r0 + x + k < m)", "r0 + x + k < m - 1)"), "was never written"),
        (
            STORE.replace("if (c0 + y + j < n && r0 + x + k < m)", "if (c0 + y + j < n && r0 + x + k < m"),
            "does not compile",
        ),
    ],
    "ways": [
        # "padding removes every conflict", and "the stores never conflict"
        ({k: (1, 1) for k in _WAYS}, "is not what the trace counts"),
        ({k: (1, v[1]) for k, v in _WAYS.items()}, "'stores to the tile: worst ways'"),
        ({}, "fill in every launch"),
    ],
    "banks": [
        # the conflict serialised by hand: 8 loads of 4 lanes each, every one clean, 8 wavefronts in all
        (
            BANKS_STUB.replace(
                "if (c0 + j < n && r0 + i < m) out[(c0 + j) * m + r0 + i] = tile[i][j];",
                "elem_t v = 0;\n    for (int p = 0; p < 8; ++p) if (i == p) v = tile[p][j];\n"
                "    if (c0 + j < n && r0 + i < m) out[(c0 + j) * m + r0 + i] = v;",
            ),
            "not be split into accesses of a few lanes",
        ),
        # the text's padding by one word: 4-way at 32 x 8
        (BANKS_STUB.replace("tile[8][32];   ", "tile[8][32 + 1];"), "bank conflict"),
        # no tile at all: no bank can conflict, but the stores go down a column of out
        (
            BANKS_STUB.replace(
                "tile[y][x] = in[(r0 + y) * n + c0 + x];",
                "out[(c0 + x) * m + r0 + y] = in[(r0 + y) * n + c0 + x];",
            ).replace("out[(c0 + j) * m + r0 + i] = tile[i][j];", "{}"),
            "coalesced",
        ),
        # padded right, barrier gone
        (BANKS.replace("__syncthreads();", ""), "race"),
        # the tile stored transposed, [32][9]: the stores are conflict-free, the loads are not
        (
            BANKS_STUB.replace("tile[8][32];   ", "tile[32][9];    ")
            .replace("tile[y][x] =", "tile[x][y] =")
            .replace("= tile[i][j];", "= tile[j][i];"),
            "bank conflict",
        ),
    ],
    "flight": [
        # one word per thread everywhere ("each thread moves its element"): vec's tile is 64 x 64
        ({k: (4, v[1]) for k, v in _FLIGHT.items()}, "'B loaded per thread before the barrier'"),
        # every launch fills the SM's 32 block slots: the thread limit forgotten
        ({k: (v[0], 32) for k, v in _FLIGHT.items()}, "'blocks per SM'"),
        # vec's thread loads one vector of 32 / bx words, not its share of the 64 x 64 tile
        (
            {**_FLIGHT, ("transpose_vec", (16, 64)): (8, _FLIGHT[("transpose_vec", (16, 64))][1])},
            "'B loaded per thread before the barrier'",
        ),
        # blocks per SM from shared memory alone (the H100's 233472 B / (17664 + 1024)): threads forgotten
        ({**_FLIGHT, ("transpose_vec", (16, 64)): (16, 12)}, "'blocks per SM'"),
        ({}, "fill in every launch"),
    ],
    "batched": [
        # the course's transpose_rows: each load stashed at once (the compiler may batch it; the source does not)
        (
            BATCHED_STUB.replace(
                FILL,
                """    for (int k = 0; k < 4; ++k)
        if (r0 + y + 8 * k < m && c0 + x < n) tile[y + 8 * k][x] = in[(r0 + y + 8 * k) * n + c0 + x];""",
            ),
            "nothing in this source makes it",
        ),
        # no bounds test on the loads: the edge blocks read past the matrix
        (BATCHED.replace("r0 + y + 8 * k < m && c0 + x < n ? in", "true ? in"), "out-of-bounds"),
        # the stash down a column of the tile: the store reads the wrong words
        (
            BATCHED.replace("tile[y + 8 * k][x] = v[k];", "tile[x][y + 8 * k] = v[k];"),
            "elements of out are wrong",
        ),
        # the stub as it is: the tile is never written
        (BATCHED_STUB, "uninitialized"),
        # each thread a column piece: thread (x, y) takes tile row x, columns y, y + 8, ...: the values
        # land right, but a warp's load goes down a column of in (32 sectors where 4 would do)
        (
            BATCHED.replace(
                "v[k] = r0 + y + 8 * k < m && c0 + x < n ? in[(r0 + y + 8 * k) * n + c0 + x] : 0;",
                "v[k] = r0 + x < m && c0 + y + 8 * k < n ? in[(r0 + x) * n + c0 + y + 8 * k] : 0;",
            ).replace("tile[y + 8 * k][x] = v[k];", "tile[x][y + 8 * k] = v[k];"),
            "walk along a row",
        ),
    ],
    "order": [
        # the 2-D grid's answer for every launch: the tile order changes nothing
        ({k: _ORDER[("transpose_vec", (512, 256))] for k in _ORDER}, "is not what the trace counts"),
        # the 1-D grid always 8 tiles down a column: the short matrix forgotten
        ({**_ORDER, ("transpose_grouped", (256, 1024)): (64, 2048)}, "is not what the trace counts"),
        ({}, "fill in every launch"),
    ],
    "block": [
        ((64, 16), "at most 512 threads"),  # 32 KB in flight, but blocks of 1024 threads (step 3)
        ((32, 16), "B in flight per SM"),  # the text's 16 KB: Little's law alone, not twice it
        ((16, 16), "B in flight per SM"),
        ((64, 8), "pick one of the blocks"),  # the text's answer is not among the options
        (None, "pick one of the blocks"),
    ],
}

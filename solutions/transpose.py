"""Notebook 02's exercises: answers that pass, and wrong answers a learner writes."""

from course.transpose.exercises import BANKS_STUB, STORE_STUB, sector_truth, ways_truth

LOAD_TEST = "if (r0 + y + j < m && c0 + x < n)        // <- the load's test, copied: fix it for the store"
STORE = STORE_STUB.replace(LOAD_TEST, "if (c0 + y + j < n && r0 + x + k < m)")

# one word of padding shifts each tile row one bank; a warp's load reads 8 rows x 4 columns, so the
# rows must be 4 banks apart: a row stride of 36 (4 mod 32) puts the 32 words in 32 banks
BANKS = BANKS_STUB.replace("tile[8][32];   ", "tile[8][32 + 4];")

SOLUTIONS = {
    "sectors": sector_truth(),  # {(32, 8): (4, 32), (16, 16): (4, 16), (8, 32): (4, 8), (4, 64): (8, 4)}
    "store": STORE,
    "ways": ways_truth(),  # tiled 16x32: (1, 16); padded 8x32: (2, 1), 64x16: (1, 2), 16x8: (2, 2)
    "banks": BANKS,
    "block": (32, 4),  # 64 KB in flight per SM; (64, 16) and (64, 4) pass too
}

_SECTORS = sector_truth()
_WAYS = ways_truth()

WRONG = {
    "sectors": [
        # the text's 32 x 8 answer for every block: the writes are named, not their counts
        ({k: (4.0, 32.0) for k in _SECTORS}, "'writes: sectors per request' is not what the trace counts"),
        # reads always coalesced (4): wrong only at 4 x 64, where a warp reads 8 rows
        ({k: (4.0, v[1]) for k, v in _SECTORS.items()}, "'reads: sectors per request'"),
        ({(32, 8): (4, 32)}, "fill in every block"),
    ],
    "store": [
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
    "block": [
        ((32, 16), "B in flight per SM"),  # the text's 16 KB: Little's law alone, not twice it
        ((16, 16), "B in flight per SM"),
        ((64, 8), "pick one of the blocks"),  # the text's answer is not among the options
        (None, "pick one of the blocks"),
    ],
}

"""The iteration order of libstdc++'s ``std::unordered_map<int32_t, int32_t>``, reproduced: llama.cpp's
``ngram-cache`` picks the most frequent next token by walking such a map and keeping the first of equals, so an
exact copy of its drafts needs the order in which GCC's standard library walks the map.

``IntCounts`` keeps the map's singly linked node list and its buckets as libstdc++ does (``_Hashtable`` with
``std::hash<int>`` = the value itself, ``_Prime_rehash_policy`` with max load factor 1: 13 buckets at the first
insert, then the next listed prime at or above twice the count; a node enters at the front of its bucket, or at
the front of the list when its bucket is empty; a rehash relinks the list in its order). A copy keeps the order
and the bucket count, as the copy constructor does. Checked against g++ 12's libstdc++; libc++ (clang on macOS)
walks in another order, so a llama.cpp built with it may break ties differently.
"""

from __future__ import annotations

from collections.abc import Iterator

_BB = -(1 << 40)  # _M_before_begin, the node before the first: no int32 token is this
_U64 = (1 << 64) - 1
_FAST_BKT = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)  # _Prime_rehash_policy::_M_next_bkt, n < 14
# __prime_list from 17 on (lower_bound starts at its 7th entry), as far as any vocabulary can need
_PRIMES = (
    17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 103, 109, 113, 127, 137, 139, 149,
    157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293, 313, 337, 359, 383, 409, 439, 467, 503, 541, 577, 619,
    661, 709, 761, 823, 887, 953, 1031, 1109, 1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357, 2549,
    2753, 2971, 3209, 3469, 3739, 4027, 4349, 4703, 5087, 5503, 5953, 6427, 6949, 7517, 8123, 8783, 9497, 10273,
    11113, 12011, 12983, 14033, 15173, 16411, 17749, 19183, 20753, 22447, 24281, 26267, 28411, 30727, 33223, 35933,
    38873, 42043, 45481, 49201, 53201, 57557, 62233, 67307, 72817, 78779, 85229, 92203, 99733, 107897, 116731,
    126271, 136607, 147793, 159871, 172933, 187091, 202409, 218971, 236897, 256279, 277261, 299951, 324503, 351061,
    379787, 410857, 444487, 480881, 520241, 562841, 608903, 658753, 712697, 771049, 834181, 902483, 976369,
    1056323, 1142821, 1236397, 1337629, 1447153, 1565659, 1693859, 1832561, 1982627, 2144977, 2320627, 2510653,
    2716249, 2938679, 3179303, 3439651, 3721303, 4026031, 4355707, 4712381, 5098259, 5515729, 5967347, 6456007,
    6984629, 7556579, 8175383, 8844859, 9569143, 10352717, 11200489, 12117689, 13109983, 14183539, 15345007,
    16601593, 17961079,
)


def _next_bkt(n: int) -> int:
    """``_M_next_bkt``: the bucket count for at least ``n`` buckets."""
    if n < len(_FAST_BKT):
        return 1 if n == 0 else _FAST_BKT[n]
    for p in _PRIMES:
        if p >= n:
            return p
    raise ValueError(f"an n-gram cache part of more than {_PRIMES[-1]} different tokens")


class IntCounts:
    """``std::unordered_map<int32_t, int32_t>`` (token -> count) that walks in libstdc++'s order."""

    __slots__ = ("counts", "next", "head", "buckets", "n_bkt", "next_resize")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.next: dict[int, int | None] = {}
        self.head: int | None = None
        self.buckets: dict[int, int] = {}  # bucket -> the node before its first (a key, or _BB)
        self.n_bkt = 1
        self.next_resize = 0

    def __len__(self) -> int:
        return len(self.counts)

    def __iter__(self) -> Iterator[int]:
        """The keys, in the order a range-for over the C++ map visits them."""
        p = self.head
        while p is not None:
            yield p
            p = self.next[p]

    def items(self) -> Iterator[tuple[int, int]]:
        """(token, count) pairs in the C++ map's order."""
        for k in self:
            yield k, self.counts[k]

    def get(self, key: int, default: int = 0) -> int:
        """The count of ``key``, or ``default``."""
        return self.counts.get(key, default)

    def add(self, key: int, count: int) -> None:
        """``emplace(key, count)`` when ``key`` is new, else ``count`` more (``++`` / ``+=``)."""
        if key in self.counts:
            self.counts[key] += count
        else:
            self.emplace(key, count)

    def emplace(self, key: int, count: int) -> None:
        """``emplace``: insert ``key`` with ``count`` unless it is there (then nothing changes)."""
        if key in self.counts:
            return
        self._grow(len(self.counts) + 1)
        self.counts[key] = count
        bkt = self._bkt(key, self.n_bkt)
        before = self.buckets.get(bkt)
        if before is not None:
            self.next[key] = self._after(before)
            self._link(before, key)
            return
        self.next[key] = self.head
        self.head = key
        if self.next[key] is not None:
            self.buckets[self._bkt(self.next[key], self.n_bkt)] = key
        self.buckets[bkt] = _BB

    def copy(self) -> IntCounts:
        """The copy constructor: same order, same bucket count."""
        out = IntCounts()
        out.counts = dict(self.counts)
        out.next = dict(self.next)
        out.head = self.head
        out.buckets = dict(self.buckets)
        out.n_bkt = self.n_bkt
        out.next_resize = self.next_resize
        return out

    @staticmethod
    def _bkt(key: int, n_bkt: int) -> int:
        return (key & _U64) % n_bkt

    def _after(self, node: int) -> int | None:
        return self.head if node == _BB else self.next[node]

    def _link(self, node: int, key: int) -> None:
        if node == _BB:
            self.head = key
        else:
            self.next[node] = key

    def _grow(self, n_elt: int) -> None:
        """``_M_need_rehash`` (max load factor 1, growth factor 2) and, when it says so, ``_M_rehash``."""
        if n_elt <= self.next_resize:
            return
        min_bkts = max(n_elt, 0 if self.next_resize else 11)
        if min_bkts < self.n_bkt:
            self.next_resize = self.n_bkt
            return
        n = _next_bkt(max(min_bkts + 1, self.n_bkt * 2))
        self.next_resize = n
        self._rehash(n)

    def _rehash(self, n_bkt: int) -> None:
        p, self.head = self.head, None
        buckets: dict[int, int] = {}
        bbegin = 0
        while p is not None:
            nxt = self.next[p]
            bkt = self._bkt(p, n_bkt)
            if bkt not in buckets:
                self.next[p] = self.head
                self.head = p
                buckets[bkt] = _BB
                if self.next[p] is not None:
                    buckets[bbegin] = p
                bbegin = bkt
            else:
                before = buckets[bkt]
                self.next[p] = self._after(before)
                self._link(before, p)
            p = nxt
        self.buckets = buckets
        self.n_bkt = n_bkt

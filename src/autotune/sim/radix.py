"""The stand-in's prefix (radix) cache: which prompt prefixes still have their KV in the pool.

SGLang keeps the KV of finished requests in a radix tree keyed by token ids and evicts least
recently used leaves when the pool needs room. The stand-in keeps the same behaviour at block
granularity: a prompt is cut into blocks of ``BLOCK_TOKENS`` tokens (64 characters of text,
or 16 token ids), each block keyed by a hash chained over the blocks before it, so a key
stands for a whole prefix. A block in use by a running request is locked (not evictable);
eviction takes the least recently used unlocked block, and a chain's later blocks are always
more recent than its earlier ones, so leaves go first, as in a radix tree.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

BLOCK_TOKENS = 16
CHARS_PER_TOKEN = 4  # the stand-in's tokenizer: characters / 4, as the prompt-length estimate
BLOCK_CHARS = BLOCK_TOKENS * CHARS_PER_TOKEN


def block_keys(prompt: str | Sequence[int]) -> list[int]:
    """Chained keys of the prompt's complete blocks (a partial last block is never cached)."""
    keys: list[int] = []
    prev = 0
    if isinstance(prompt, str):
        for start in range(0, len(prompt) - BLOCK_CHARS + 1, BLOCK_CHARS):
            prev = hash((prev, prompt[start : start + BLOCK_CHARS]))
            keys.append(prev)
    else:
        ids = list(prompt)
        for start in range(0, len(ids) - BLOCK_TOKENS + 1, BLOCK_TOKENS):
            prev = hash((prev, tuple(ids[start : start + BLOCK_TOKENS])))
            keys.append(prev)
    return keys


class PrefixCache:
    """Block-level LRU of cached prefixes with locks for blocks running requests use.

    Args:
        enabled: False models ``--disable-radix-cache``: nothing matches, nothing is kept.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._evictable: OrderedDict[int, None] = OrderedDict()  # LRU first
        self._locks: dict[int, int] = {}  # key -> running requests holding it
        self.hit_tokens = 0
        self.total_tokens = 0

    @property
    def tokens(self) -> int:
        """Pool tokens the cache holds (locked and evictable)."""
        return (len(self._evictable) + len(self._locks)) * BLOCK_TOKENS

    @property
    def evictable_tokens(self) -> int:
        return len(self._evictable) * BLOCK_TOKENS

    def match(self, keys: Sequence[int]) -> int:
        """How many leading blocks of ``keys`` are cached (does not touch the LRU order)."""
        if not self.enabled:
            return 0
        n = 0
        for key in keys:
            if key not in self._evictable and key not in self._locks:
                break
            n += 1
        return n

    def lock(self, keys: Sequence[int]) -> None:
        """A request starts using these cached blocks: they cannot be evicted until unlocked."""
        for key in keys:
            if key in self._locks:
                self._locks[key] += 1
            else:
                self._evictable.pop(key, None)
                self._locks[key] = 1

    def unlock(self, keys: Sequence[int]) -> None:
        """A request is done with these blocks; they become evictable, most recent last.

        The chain is released from its end backwards, so a prefix's first block is the most
        recently used one and a later block is evicted before the block it extends.
        """
        for key in reversed(keys):
            held = self._locks.get(key)
            if held is None:
                continue
            if held > 1:
                self._locks[key] = held - 1
            else:
                del self._locks[key]
                self._evictable[key] = None
                self._evictable.move_to_end(key)

    def insert_locked(self, keys: Sequence[int]) -> None:
        """New blocks a request just computed, held by it (``unlock`` releases them)."""
        if self.enabled:
            self.lock(keys)

    def evict(self, tokens: int) -> int:
        """Free at least ``tokens`` pool tokens from unlocked blocks, LRU first; returns freed."""
        freed = 0
        while freed < tokens and self._evictable:
            self._evictable.popitem(last=False)
            freed += BLOCK_TOKENS
        return freed

    def record(self, hit: int, total: int) -> None:
        """Count one admitted prompt's cached and total tokens (the hit rate SGLang reports)."""
        self.hit_tokens += hit
        self.total_tokens += total

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.total_tokens if self.total_tokens else 0.0

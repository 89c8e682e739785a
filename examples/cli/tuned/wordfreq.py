"""Word frequencies of a generated corpus: the kind of script a `command:` benchmark runs.

Prints the five most common words and `PROFOPT_METRIC checksum=…` (a digest of all counts), which
profopt reads from stdout, so a faster version must count exactly the same words.
"""
from __future__ import annotations

import hashlib
import random
import sys
from collections import Counter

PUNCT = ".,;:!?\"'()"


def corpus(words: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    vocab = [f"{rng.choice(['', 'The ', 'a '])}w{i}{rng.choice(['', ',', '.', '!'])}" for i in range(5000)]
    return " ".join(rng.choices(vocab, k=words))


def count_words(text: str) -> dict[str, int]:
    table = str.maketrans("", "", PUNCT)
    return dict(Counter(w for w in text.lower().translate(table).split() if w))


def main() -> None:
    words = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    counts = count_words(corpus(words))
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    print(" ".join(f"{w}={n}" for w, n in top))
    digest = hashlib.sha256(repr(sorted(counts.items())).encode()).hexdigest()[:16]
    print(f"PROFOPT_METRIC checksum={digest}")


if __name__ == "__main__":
    main()

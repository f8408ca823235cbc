"""The sentences of a corpus that may hold a gendered word, cached on disk under the cache root.

Splitting every document into sentences and screening each with the gendered-word pattern is the
bulk of a masked-gender build on a real corpus (the blog corpus: 253,280 posts, 2.3 million
sentences), and the same screen serves every fine-tune and probe of an experiment, each in its own
process. :func:`all_candidates` therefore keeps its result in
``cache_root()/gender-candidates/<key>.json``, keyed by a hash of the documents' texts, the pattern
and the code of :mod:`textcause.gender.sentences` and :mod:`textcause.gender.masking` (a change to
either reads anew). The file starts with the SHA-256 of its body; a damaged file is a miss.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections.abc import Sequence
from pathlib import Path

from textcause.gender.masking import might_be_gendered
from textcause.gender.sentences import Document, split_sentences
from textcause.io import content_key, read_checked, write_checked
from textcause.paths import cache_root

__all__ = ["Candidates", "all_candidates", "candidates_file"]

#: (document index of each candidate, candidate sentences, sentences per document).
Candidates = tuple[list[int], list[str], list[int]]

_HERE = Path(__file__).resolve().parent


def candidates_file(docs: Sequence[Document], pattern: re.Pattern[str]) -> Path:
    """Where the candidates of ``docs`` under ``pattern`` are cached (the key reads every text)."""
    texts = hashlib.sha256()
    for d in docs:
        data = d.text.encode("utf-8", "surrogatepass")
        texts.update(len(data).to_bytes(8, "little"))
        texts.update(data)
    code = [(_HERE / name).read_bytes() for name in ("sentences.py", "masking.py")]
    key = content_key("gender-candidates", pattern.pattern, pattern.flags, len(docs), texts.hexdigest(), *code)
    return cache_root() / "gender-candidates" / f"{key}.json"


def _compute(docs: Sequence[Document], pattern: re.Pattern[str]) -> Candidates:
    index, sentences, counts = [], [], []
    for i, doc in enumerate(docs):
        n = 0
        for sentence in split_sentences(doc.text):
            n += 1
            if might_be_gendered(sentence, pattern):
                index.append(i)
                sentences.append(sentence)
        counts.append(n)
    return index, sentences, counts


def _read(file: Path, n_docs: int) -> Candidates | None:
    def parse(body: bytes) -> Candidates:
        data = json.loads(body)
        index, sentences, counts = data["index"], data["sentences"], data["counts"]
        if len(index) != len(sentences) or len(counts) != n_docs:
            raise ValueError("its lengths do not match the documents")
        return index, sentences, counts

    return read_checked(file, parse, what="candidate cache", redo="screening the corpus", stacklevel=3)


def all_candidates(docs: Sequence[Document], pattern: re.Pattern[str], *, cache: bool = True) -> Candidates:
    """Every sentence of ``docs`` that may hold a gendered word (``pattern``), in document order.

    Args:
        docs: the documents (:func:`textcause.gender.sentences.read_documents`).
        pattern: the candidate pattern (:func:`textcause.gender.masking.candidate_pattern`).
        cache: read and write the on-disk cache (False: compute only).

    Returns:
        ``(index, sentences, counts)``: the document of each candidate, the candidate sentences, and
        every document's sentence count (candidates or not).

    Examples:
        >>> import re
        >>> from textcause.gender.sentences import Document
        >>> docs = [Document("a", "She came. It rained.", {}), Document("b", "Nothing here.", {})]
        >>> all_candidates(docs, re.compile(r"\\bshe\\b", re.I), cache=False)
        ([0], ['She came.'], [2, 1])
    """
    if not cache:
        return _compute(docs, pattern)
    file = candidates_file(docs, pattern)
    found = _read(file, len(docs))
    if found is not None:
        return found
    index, sentences, counts = _compute(docs, pattern)
    body = json.dumps({"index": index, "sentences": sentences, "counts": counts}, separators=(",", ":")).encode("ascii")
    try:
        write_checked(file, body)
    except OSError as err:  # a read-only cache root: compute each time
        warnings.warn(f"Could not write the candidate cache '{file}' ({err}).", stacklevel=2)
    return index, sentences, counts

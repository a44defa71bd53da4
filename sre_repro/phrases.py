"""The phrases PaSeR masks (methods/paser.py, Sec. 3.1.1): RAKE via rake-nltk (NLTK's English stopwords; a
phrase's score is the sum of its words' deg/freq, counted in the sentence or over the training corpus), or the
syntactic variant: one random NP and/or VP chunk found by a stand-in for the paper's unnamed parser, NLTK's
averaged perceptron tagger trained on CoNLL-2000 + Treebank and a bigram IOB chunker trained on CoNLL-2000
(trained once and pickled under work/cache). Words are rake-nltk's (wordpunct_tokenize), original case.
"""
from __future__ import annotations

import random
import re
from functools import lru_cache

from .data import corpora
from .settings import work_dir

# wordpunct_tokenize's pattern (what rake-nltk splits words with), kept with character offsets
WORD = re.compile(r"\w+|[^\w\s]+")
# The syntax models' pickle cache is keyed on this version and on the training inputs (`syntax_cache_key`),
# not on the source: bump it whenever a change to Syntax would train or chunk differently.
SYNTAX_VERSION = 1
TAGGER_ITERATIONS = 5   # the perceptron's passes over its training sentences
TAGGER_SEED = 0         # of the perceptron's shuffles between passes


def words(sentence: str) -> list[str]:
    """The sentence's words as rake-nltk sees them (wordpunct_tokenize), original case."""
    return WORD.findall(sentence)


def occurrences(tokens: list[str], phrase: str) -> list[tuple[int, int]]:
    """Every (start, end) token span of `tokens` that spells the phrase (case-insensitive)."""
    target, lowered = phrase.lower().split(), [t.lower() for t in tokens]
    n = len(target)
    return [(i, i + n) for i in range(len(lowered) - n + 1) if lowered[i:i + n] == target]


# ----- RAKE ----------------------------------------------------------------------------------------------

def rake(data_dir=None):
    """A rake-nltk Rake with its defaults (NLTK's English stopwords, punctuation, deg/freq ranking)."""
    from rake_nltk import Rake

    with corpora.nltk_data(data_dir):
        return Rake()


def rake_phrases(sentence: str, top_k: int, extractor) -> list[str]:
    """The top-k RAKE phrases of one sentence (lowercased, words joined by spaces), best first; ties in
    rake-nltk's order (score, then phrase, descending)."""
    extractor.extract_keywords_from_sentences([sentence])
    return extractor.get_ranked_phrases()[:top_k]


class CorpusRake:
    """RAKE with word scores deg(w)/freq(w) counted over a whole corpus (`rake_scope=corpus`): a sentence's
    candidate phrases are ranked by those scores."""

    def __init__(self, sentences: list[str], data_dir=None):
        self.rake = rake(data_dir)
        self.rake.extract_keywords_from_sentences(sentences)
        degree, frequency = self.rake.degree, self.rake.frequency_dist
        self.score = {w: degree[w] / frequency[w] for w in frequency}

    def phrases(self, sentence: str, top_k: int) -> list[str]:
        candidates = dict.fromkeys(" ".join(p) for p in self.rake._generate_phrases([sentence]))
        ranked = sorted(((sum(self.score.get(w, 0.0) for w in p.split()), p) for p in candidates), reverse=True)
        return [p for _, p in ranked[:top_k]]


# ----- the syntactic stand-in --------------------------------------------------------------------------------

class Syntax:
    """The syntactic stand-in: NLTK's averaged perceptron POS tagger trained on CoNLL-2000 + Treebank and a
    bigram IOB chunker (NLTK book, ch. 7) trained on CoNLL-2000's NP and VP chunks."""

    def __init__(self, data_dir=None, limit: int = 0):
        import nltk
        import nltk.tag.perceptron as perceptron

        with corpora.nltk_data(data_dir):
            conll = nltk.corpus.conll2000
            tagged = list(conll.tagged_sents("train.txt")) + list(nltk.corpus.treebank.tagged_sents())
            chunked = conll.chunked_sents("train.txt", chunk_types=["NP", "VP"])
            if limit:
                tagged, chunked = tagged[:limit], chunked[:limit]
            self.tagger = perceptron.PerceptronTagger(load=False)
            # the perceptron shuffles its data with its module's `random`: for the duration of training that
            # name is a local Random(TAGGER_SEED), the very stream `random.seed(TAGGER_SEED)` gave it before,
            # so the tagger is the same and the global random state is left alone
            shared, perceptron.random = perceptron.random, random.Random(TAGGER_SEED)
            try:
                self.tagger.train(tagged, nr_iter=TAGGER_ITERATIONS)
            finally:
                perceptron.random = shared
            iob = [[(pos, chunk) for _, pos, chunk in nltk.chunk.tree2conlltags(tree)] for tree in chunked]
            self.chunker = nltk.BigramTagger(iob, backoff=nltk.UnigramTagger(iob))

    def chunks(self, tokens: list[str]) -> dict[str, list[tuple[int, int]]]:
        """Chunk type -> its (start, end) token spans."""
        tags = [pos for _, pos in self.tagger.tag(tokens)]
        spans: dict[str, list[tuple[int, int]]] = {"NP": [], "VP": []}
        current = None
        for i, (_, iob) in enumerate(self.chunker.tag(tags)):
            iob = iob or "O"
            if iob.startswith("B-") or (iob.startswith("I-") and (current is None or current[0] != iob[2:])):
                current = [iob[2:], i, i + 1]
                spans.setdefault(current[0], []).append(current)
            elif iob.startswith("I-"):
                current[2] = i + 1
            else:
                current = None
        return {kind: [(s, e) for _, s, e in found] for kind, found in spans.items()}


def syntax_cache_key(limit: int) -> str:
    """The pickle cache's key: SYNTAX_VERSION and what training reads (corpora, sentence limit, passes, seed,
    NLTK's version), not the source code."""
    import hashlib
    import json

    import nltk

    inputs = {"version": SYNTAX_VERSION, "tagger": ["conll2000/train.txt", "treebank"], "chunker": "conll2000/train.txt",
              "chunk_types": ["NP", "VP"], "limit": limit, "iterations": TAGGER_ITERATIONS, "seed": TAGGER_SEED,
              "nltk": nltk.__version__}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:12]


@lru_cache(maxsize=2)
def syntax(data_dir=None, limit: int = 0) -> Syntax:
    """The trained tagger and chunker, pickled under work/cache (training takes ~2 minutes on 2 cores)."""
    import pickle

    path = work_dir() / "cache" / f"paser-syntax-{syntax_cache_key(limit)}.pickle"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    model = Syntax(data_dir, limit)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(model))
    tmp.replace(path)
    return model


# ----- choosing the phrases of a sentence ----------------------------------------------------------------------

class PhraseChooser:
    """The phrases to mask in a sentence: the top-k RAKE phrases, each at every occurrence (`extractor=rake`),
    or one random chunk of each of `types` ("NP", "VP", "NP+VP"; `extractor=syntactic`)."""

    def __init__(self, extractor: str = "rake", top_k: int = 5, types: str = "NP+VP", syntax_limit: int = 0):
        self.extractor, self.top_k, self.types, self.syntax_limit = extractor, top_k, types, syntax_limit
        self.rake = None  # rake-nltk's per-sentence Rake (made at first use) or a fitted CorpusRake

    def fit(self, sentences: list[str], data_dir=None) -> None:
        """RAKE scored over the corpus (`rake_scope=corpus`)."""
        self.rake = CorpusRake(sentences, data_dir)

    def __call__(self, tokens: list[str], sentence: str, rng: random.Random,
                 data_dir=None) -> list[tuple[str, list[tuple[int, int]]]]:
        """The chosen phrases in rank order: (text as in the sentence, the token spans to mask)."""
        if self.extractor == "syntactic":
            chunks = syntax(data_dir, self.syntax_limit).chunks(tokens)
            chosen = [rng.choice(chunks[kind]) for kind in self.types.split("+") if chunks[kind]]
            chosen = list(dict.fromkeys(chosen))
            return [(" ".join(tokens[s:e]), [(s, e)]) for s, e in chosen]
        if self.rake is None:
            self.rake = rake(data_dir)
        ranked = (self.rake.phrases(sentence, self.top_k) if isinstance(self.rake, CorpusRake)
                  else rake_phrases(sentence, self.top_k, self.rake))
        out = []
        for phrase in ranked:
            spans = occurrences(tokens, phrase)
            if spans:
                out.append((" ".join(tokens[spans[0][0]:spans[0][1]]), spans))
        return out

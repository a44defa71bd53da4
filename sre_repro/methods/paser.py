"""PaSeR (Wu & Zhao, "Sentence Representation Learning with Generative Objective rather than Contrastive
Objective"): encode a sentence s and a copy s~ whose most important phrases are masked; a transformer decoder
reconstructs the masked phrases from the two sentence embeddings alone; plus MLM on s. No contrastive term.

  phrases   RAKE (rake-nltk with NLTK's stopwords, per sentence: a phrase's score is the sum of its words'
            deg/freq) top-k, k = `mask_top_k` (Sec. 3.1.1, Table 5); or the syntactic variant: one random NP
            and/or VP chunk (`phrase_extractor=syntactic`). The paper's parser is unnamed and not offline: the
            stand-in is NLTK's perceptron tagger trained on CoNLL-2000 + Treebank and a bigram IOB chunker
            trained on CoNLL-2000 (cached under work/cache). Every occurrence of a chosen phrase is masked.
  masking   one [MASK] per wordpiece (length kept; `mask_unit` word | phrase: one per word | per phrase).
  EDA       (Sec. 3.1.3, Table 4) on both views, drawn independently: synonym replacement from WordNet
            (alpha_sr = 0.5, the official README), random swap and random deletion (0.1, EDA's defaults; the
            paper's "token reordering" is RS). Masked words are never replaced, swapped or deleted; the
            decoder's target is the phrase as it stands in the raw s.
  encoder   both views in one forward (2*bs rows); `pooler` cls = the raw last-layer [CLS] (the paper and
            code), no MLP.
  signal    `signal=code` (official models.py): 4 memory vectors [n (z1*Wz2), m (z1 - Wz2), z1, Wz2], W a
            Linear(d, d) on the masked view, signed difference. `signal=paper` (Eq. 2/6): [z1, z2,
            m |z1 - z2|, n |z1*z2|], no W. The paper does not say how the decoder reads the concatenation;
            both readings give the decoder's cross-attention the four vectors as its memory.
  decoder   HF BartDecoder, `decoder_layers` (6), d_model = the PLM's hidden size, FFN = d (the code's 768 for
            BERT-base, not 4d), 16 heads, dropout 0.1, random init; its input embeddings are the encoder's
            whole embedding module (shared, not copied: decoder gradients reach it) plus BART's own positions;
            its output head is the PLM's pretrained MLM head as an untied copy, shared with the MLM term.
  target    "[CLS] p1 [SEP] p2 [SEP] ..." (phrases in rank order, joined by [SEP]: unspecified, our choice);
            decoder input = target shifted right with [CLS] as the start token, labels drop [CLS]. No decoder
            loss for a sentence without a phrase, or when a view has >= max_len tokens (the code's rule).
  loss      L = L_generative + mlm_weight * L_MLM (Eq. 4), MLM on view 1 only (a separate forward, 15% with
            80/10/10); `contrastive_weight` > 0 adds SimCSE's InfoNCE between the two views (not in PaSeR).
Supervised PaSeR (Sec. 3.3, Eq. 5) is `train_data=snli`: supervised SimCSE's InfoNCE over (premise,
entailment, contradiction) + alpha * L_generative on the premise, no MLM, starting from the kept checkpoint of
the unsupervised PaSeR run of the same scale, PLM, seed and PaSeR knobs (`init_from_unsup`; `reuse_decoder`
also takes its decoder). The official code releases neither RAKE, masking nor EDA (notes/official_code.md 1.1).
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import nn

from ..data import corpora
from ..errors import SreError
from ..masked_lm import mlm_loss, pretrained_mlm_head
from .common import Method, info_nce, require_choice, require_positive, training_sentences

EXTRACTORS = ["rake", "syntactic"]
SYNTACTIC_TYPES = ["NP", "VP", "NP+VP"]
MASK_UNITS = ["wordpiece", "word", "phrase"]
AUGMENTS = ["none", "sr", "rs", "rd", "sr+rd", "sr+rs"]
SIGNALS = ["code", "paper"]
POOLERS = ["cls", "avg"]
# wordpunct_tokenize's pattern (what rake-nltk splits words with), kept with character offsets
WORD = re.compile(r"\w+|[^\w\s]+")
# Table 7's sentences with the phrase the paper masked in each (Sec. 5.2)
TABLE7 = [("Work with a tool.", "Work"), ("At least 89 dead in china earthquakes", "least 89 dead"),
          ("Do I need a transit visa for a stop in London?", "London"), ("There are two options for you", "two options")]


@dataclass
class Params:
    phrase_extractor: str = "rake"   # rake | syntactic (NLTK tagger + chunker, a stand-in for the paper's parser)
    mask_top_k: int = 5              # RAKE: how many top phrases to mask (Table 5: 1-5)
    rake_scope: str = "sentence"     # sentence: word scores within the sentence | corpus: over the training corpus
    syntactic_types: str = "NP+VP"   # syntactic: NP | VP | NP+VP (one random chunk of each type)
    syntax_train_sentences: int = 0  # sentences of each corpus the tagger/chunker train on (0: all)
    mask_unit: str = "wordpiece"     # one [MASK] per wordpiece | word | phrase
    augment: str = "sr"              # none | sr | rs | rd | sr+rd | sr+rs (EDA, Table 4)
    alpha_sr: float = 0.5            # share of words replaced by synonyms
    alpha_rs: float = 0.1            # share of words swapped
    p_rd: float = 0.1                # probability of deleting each word
    signal: str = "code"             # code: [n z1*Wz2, m (z1-Wz2), z1, Wz2] | paper: [z1, z2, m|z1-z2|, n|z1*z2|]
    m: float = 10.0                  # weight of the difference feature (the code's k)
    n: float = 10.0                  # weight of the product feature (the code's t)
    decoder_layers: int = 6
    decoder_heads: int = 16
    decoder_ffn: int = 0             # 0: the hidden size (the code's FFN = d)
    decoder_dropout: float = 0.1
    mlm_weight: float = 1.0          # unsupervised: weight of MLM on view 1
    mlm_probability: float = 0.15
    contrastive_weight: float = 0.0  # > 0 adds InfoNCE between the two views (not PaSeR: a what-if)
    temperature: float = 0.05        # of the InfoNCE terms (the contrastive what-if, supervised PaSeR)
    pooler: str = "cls"              # training pooler: cls (raw [CLS], no MLP) | avg
    alpha: float = 1.0               # supervised: weight of the generative loss (never reported; Eq. 5)
    init_from_unsup: bool = True     # supervised: start from the unsupervised PaSeR run's kept checkpoint
    reuse_decoder: bool = False      # supervised: take that run's decoder (and W, head) too
    recon_dev_sentences: int = 256   # STS-B dev sentences whose held-out reconstruction is measured


# ----- phrases -------------------------------------------------------------------------------------------

def words(sentence: str) -> list[str]:
    """The sentence's words as rake-nltk sees them (wordpunct_tokenize), original case."""
    return WORD.findall(sentence)


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


def occurrences(tokens: list[str], phrase: str) -> list[tuple[int, int]]:
    """Every (start, end) token span of `tokens` that spells the phrase (case-insensitive)."""
    target, lowered = phrase.lower().split(), [t.lower() for t in tokens]
    n = len(target)
    return [(i, i + n) for i in range(len(lowered) - n + 1) if lowered[i:i + n] == target]


class Syntax:
    """The syntactic stand-in: NLTK's averaged perceptron POS tagger trained on CoNLL-2000 + Treebank and a
    bigram IOB chunker (NLTK book, ch. 7) trained on CoNLL-2000's NP and VP chunks."""

    def __init__(self, data_dir=None, limit: int = 0):
        import nltk
        from nltk.tag.perceptron import PerceptronTagger

        with corpora.nltk_data(data_dir):
            conll = nltk.corpus.conll2000
            tagged = list(conll.tagged_sents("train.txt")) + list(nltk.corpus.treebank.tagged_sents())
            chunked = conll.chunked_sents("train.txt", chunk_types=["NP", "VP"])
            if limit:
                tagged, chunked = tagged[:limit], chunked[:limit]
            self.tagger = PerceptronTagger(load=False)
            random.seed(0)  # the perceptron shuffles its data with the global random module
            self.tagger.train(tagged, nr_iter=5)
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


@lru_cache(maxsize=2)
def syntax(data_dir=None, limit: int = 0) -> Syntax:
    """The trained tagger and chunker, pickled under work/cache (training takes ~2 minutes on 2 cores)."""
    import hashlib
    import inspect
    import pickle

    from ..runs import work_dir

    key = hashlib.sha256((inspect.getsource(Syntax) + str(limit)).encode()).hexdigest()[:12]
    path = work_dir() / "cache" / f"paser-syntax-{key}.pickle"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    model = Syntax(data_dir, limit)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(model))
    tmp.replace(path)
    return model


# ----- EDA ------------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def synonyms(word: str) -> tuple[str, ...]:
    """EDA's WordNet synonyms of a word: every lemma of every synset, '_' and '-' to spaces, letters only,
    the word itself left out; sorted so that a seeded draw is the same in every process."""
    from nltk.corpus import wordnet

    found = set()
    for synset in wordnet.synsets(word):
        for lemma in synset.lemmas():
            text = lemma.name().replace("_", " ").replace("-", " ").lower()
            text = "".join(c for c in text if c in " qwertyuiopasdfghjklzxcvbnm")
            if text.strip():
                found.add(" ".join(text.split()))
    found.discard(word.lower())
    return tuple(sorted(found))


@lru_cache(maxsize=1)
def stopwords() -> frozenset:
    from nltk.corpus import stopwords as nltk_stopwords

    return frozenset(nltk_stopwords.words("english"))


def synonym_replacement(units: list[list], alpha: float, rng: random.Random) -> list[list]:
    """EDA's SR on [text, locked] units: n = max(1, int(alpha * #units)) distinct alphabetic non-stopwords,
    in random order, each replaced (every unlocked occurrence) by a random WordNet synonym."""
    n = max(1, int(alpha * len(units)))
    candidates = list(dict.fromkeys(t.lower() for t, locked in units
                                    if not locked and t.isalpha() and t.lower() not in stopwords()))
    rng.shuffle(candidates)
    replaced = 0
    for word in candidates:
        options = synonyms(word)
        if options:
            choice = rng.choice(options)
            units = [[choice, False] if not locked and t.lower() == word else [t, locked] for t, locked in units]
            replaced += 1
        if replaced >= n:
            break
    return units


def random_swap(units: list[list], alpha: float, rng: random.Random) -> list[list]:
    """EDA's RS: n = max(1, int(alpha * #units)) swaps of two random unlocked units (masks stay in place)."""
    units = [list(u) for u in units]
    free = [i for i, (_, locked) in enumerate(units) if not locked]
    if len(free) < 2:
        return units
    for _ in range(max(1, int(alpha * len(units)))):
        i, j = rng.sample(free, 2)
        units[i], units[j] = units[j], units[i]
    return units


def random_deletion(units: list[list], p: float, rng: random.Random) -> list[list]:
    """EDA's RD: each unlocked unit deleted with probability p; one unlocked unit survives at least."""
    free = [i for i, (_, locked) in enumerate(units) if not locked]
    if len(free) <= 1:
        return units
    gone = {i for i in free if rng.random() < p}
    if len(gone) == len(free):
        gone.discard(rng.choice(free))
    return [u for i, u in enumerate(units) if i not in gone]


def augment(units: list[list], how: str, cfg: dict, rng: random.Random) -> list[list]:
    for op in ([] if how == "none" else how.split("+")):
        if op == "sr":
            units = synonym_replacement(units, cfg["alpha_sr"], rng)
        elif op == "rs":
            units = random_swap(units, cfg["alpha_rs"], rng)
        elif op == "rd":
            units = random_deletion(units, cfg["p_rd"], rng)
    return units


def mask_units(tokens: list[str], spans: list[tuple[int, int]], unit: str, tokenizer) -> list[list]:
    """[text, locked] units of the masked copy: each masked word (or phrase occurrence, `unit=phrase`)
    becomes one locked unit of [MASK]s (as many as its wordpieces, `unit=wordpiece`; one, `word`/`phrase`)."""
    masked = [False] * len(tokens)
    for start, end in spans:
        masked[start:end] = [True] * (end - start)
    mask = tokenizer.mask_token
    units, i = [], 0
    while i < len(tokens):
        if not masked[i]:
            units.append([tokens[i], False])
            i += 1
        elif unit == "phrase":
            j = i
            while j < len(tokens) and masked[j]:
                j += 1
            units.append([mask, True])
            i = j
        else:
            count = len(tokenizer.tokenize(tokens[i])) if unit == "wordpiece" else 1
            units.append([" ".join([mask] * count), True])
            i += 1
    return units


def text_of(units: list[list]) -> str:
    return " ".join(t for t, _ in units)


# ----- decoding signal and decoder ---------------------------------------------------------------------------

def decoding_signal(z1: torch.Tensor, z2: torch.Tensor, reading: str, m: float, n: float,
                    projection: nn.Module | None = None) -> torch.Tensor:
    """The decoder's memory (bs, 4, d) from the raw view's z1 and the masked view's z2 (see the module doc)."""
    if reading == "code":
        z2 = projection(z2)
        return torch.stack([n * (z1 * z2), m * (z1 - z2), z1, z2], dim=1)
    return torch.stack([z1, z2, m * (z1 - z2).abs(), n * (z1 * z2).abs()], dim=1)


def decoder_inputs(target_ids: torch.Tensor, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(decoder input, labels) of padded targets "[CLS] ... [SEP] [PAD]...": labels = target[1:] with padding
    -100; input = the labels shifted right with target[0] (the start token [CLS]), -100 back to padding
    (the official code's shift_tokens_right)."""
    labels = target_ids[:, 1:].masked_fill(target_ids[:, 1:] == pad_id, -100)
    shifted = torch.cat([target_ids[:, :1], labels[:, :-1]], dim=1)
    return shifted.masked_fill(shifted == -100, pad_id), labels


def build_decoder(hidden: int, cfg: dict, tokenizer) -> nn.Module:
    from transformers import BartConfig
    from transformers.models.bart.modeling_bart import BartDecoder

    config = BartConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.cls_token_id,
                        eos_token_id=tokenizer.sep_token_id, decoder_start_token_id=tokenizer.cls_token_id,
                        forced_eos_token_id=None, d_model=hidden, decoder_layers=cfg["decoder_layers"],
                        decoder_ffn_dim=cfg["decoder_ffn"] or hidden, decoder_attention_heads=cfg["decoder_heads"],
                        max_position_embeddings=512, activation_function="gelu", dropout=cfg["decoder_dropout"],
                        decoder_layerdrop=0.0, scale_embedding=False)
    decoder = BartDecoder(config)
    decoder.embed_tokens = None  # its inputs are the encoder's embeddings (shared), given as inputs_embeds
    return decoder


# ----- the method -------------------------------------------------------------------------------------------

class PaSeR(Method):
    Params = Params
    contrastive = False
    PROBE_OVERRIDES = {"recon_dev_sentences": 8, "syntax_train_sentences": 300}  # 300: the smoke chunker's
    SCALE_PRESETS = {
        "smoke": dict(train_data="sts_unlabeled", max_len=32, decoder_layers=2, decoder_heads=2, syntax_train_sentences=300,
                      recon_dev_sentences=16),
        # the stand-in PLM's raw [CLS] was never trained (no next-sentence objective): the cpu edition pools
        # by averaging in training and at test, as its SimCSE does; Table 9 compares the poolers
        # head_lr: the decoder's rate, chosen on STS-B dev by the appendix "The cpu recipe"
        "cpu": dict(train_data="sts_unlabeled", pooler="avg", eval_pooler="avg", head_lr=1e-3),
        "paper": dict(train_data="sts_unlabeled", epochs=5, precision="fp32"),
    }

    def __init__(self, cfg, encoder):
        super().__init__(cfg, encoder)
        hidden = encoder.hidden_size
        self.supervised = cfg["train_data"] == "snli"
        if hidden % cfg["decoder_heads"]:
            raise SreError(f"decoder_heads {cfg['decoder_heads']} does not divide the PLM's hidden size {hidden}: "
                           "choose a divisor, e.g. decoder_heads=4")
        self.decoder = build_decoder(hidden, cfg, encoder.tokenizer)
        self.projection = nn.Linear(hidden, hidden) if cfg["signal"] == "code" else None
        self.lm_head, self.lm_head_pretrained = pretrained_mlm_head(encoder)
        self._extractor = None

    @classmethod
    def dependencies(cls, cfg):
        return {"unsupervised": unsupervised_run(cfg)} if cfg["train_data"] == "snli" and cfg["init_from_unsup"] else {}

    @classmethod
    def build(cls, cfg, device, data_dir=None, dependencies=None):
        method = super().build(cfg, device, data_dir)
        if "unsupervised" in (dependencies or {}):
            state = dependencies["unsupervised"].state_dict()
            keep = ("encoder.",) + (("decoder.", "projection.", "lm_head.") if cfg["reuse_decoder"] else ())
            method.load_state_dict({k: v for k, v in state.items() if k.startswith(keep)}, strict=False)
        return method

    def added_modules(self):
        """The randomly initialised modules: the decoder and W (the MLM head is the PLM's own, at `lr`)."""
        return {"decoder": self.decoder, **({"projection": self.projection} if self.projection is not None else {})}

    def term_weights(self):
        if self.supervised:
            return {"loss_generative": self.cfg["alpha"], "loss_contrastive": 1.0}
        return {"loss_generative": 1.0, "loss_mlm": self.cfg["mlm_weight"], "loss_contrastive": self.cfg["contrastive_weight"]}

    @classmethod
    def validate(cls, cfg):
        require_choice(cfg, "phrase_extractor", EXTRACTORS)
        require_choice(cfg, "rake_scope", ["sentence", "corpus"])
        require_choice(cfg, "syntactic_types", SYNTACTIC_TYPES)
        require_choice(cfg, "mask_unit", MASK_UNITS)
        require_choice(cfg, "augment", AUGMENTS)
        require_choice(cfg, "signal", SIGNALS)
        require_choice(cfg, "pooler", POOLERS)
        if cfg["mask_top_k"] <= 0:
            raise SreError(f"mask_top_k must be at least 1 (how many RAKE phrases to mask), got {cfg['mask_top_k']}")
        if cfg["decoder_layers"] <= 0:
            raise SreError(f"decoder_layers must be at least 1 (PaSeR needs its decoder), got {cfg['decoder_layers']}")
        require_positive(cfg, "decoder_heads", "temperature")
        for key in ("alpha_sr", "alpha_rs", "p_rd", "mlm_probability"):
            if not 0 <= cfg[key] <= 1:
                raise SreError(f"{key} must lie in [0, 1], got {cfg[key]}")
        for key in ("m", "n", "mlm_weight", "contrastive_weight", "alpha", "decoder_ffn", "syntax_train_sentences",
                    "recon_dev_sentences", "decoder_dropout"):
            if cfg[key] < 0:
                raise SreError(f"{key} must be >= 0, got {cfg[key]}")
        if cfg["train_data"] == "snli" and cfg["batch_size"] < 2:
            raise SreError("supervised PaSeR is contrastive: use batch_size >= 2")
        if cfg["contrastive_weight"] > 0 and cfg["batch_size"] < 2:
            raise SreError("contrastive_weight > 0 needs in-batch negatives: use batch_size >= 2")
        if cfg["eval_pooler"] not in ("cls", "avg", "avg_top2", "avg_first_last", "avg_first_last_emb"):
            raise SreError(f"PaSeR tests without an MLP: set eval_pooler=cls or avg, not {cfg['eval_pooler']!r}")

    def corpus(self, data_dir=None):
        if self.supervised:
            return corpora.snli_triplets(data_dir)
        sentences = training_sentences(self.cfg, data_dir)
        if self.cfg["phrase_extractor"] == "rake" and self.cfg["rake_scope"] == "corpus":
            self._extractor = CorpusRake(sentences, data_dir)
        return sentences

    # -- data -------------------------------------------------------------------------------------------------
    def phrases(self, tokens: list[str], sentence: str, rng: random.Random) -> list[tuple[str, list[tuple[int, int]]]]:
        """The chosen phrases in rank order: (text as in the sentence, the token spans to mask)."""
        cfg = self.cfg
        if cfg["phrase_extractor"] == "syntactic":
            chunks = syntax(self.data_dir, cfg["syntax_train_sentences"]).chunks(tokens)
            chosen = [rng.choice(chunks[kind]) for kind in cfg["syntactic_types"].split("+") if chunks[kind]]
            chosen = list(dict.fromkeys(chosen))
            return [(" ".join(tokens[s:e]), [(s, e)]) for s, e in chosen]
        if self._extractor is None:
            self._extractor = rake(self.data_dir)
        ranked = (self._extractor.phrases(sentence, cfg["mask_top_k"]) if isinstance(self._extractor, CorpusRake)
                  else rake_phrases(sentence, cfg["mask_top_k"], self._extractor))
        out = []
        for phrase in ranked:
            spans = occurrences(tokens, phrase)
            if spans:
                out.append((" ".join(tokens[spans[0][0]:spans[0][1]]), spans))
        return out

    def views(self, sentence: str, rng: random.Random, how: str | None = None, phrases=None) -> tuple[str, str, str | None]:
        """(s after EDA, s~ = s with its phrases masked, after EDA drawn independently, the decoder's target
        text or None when nothing was masked). `phrases`: (text, spans) given instead of extracted."""
        how = self.cfg["augment"] if how is None else how
        tokens = words(sentence)
        chosen = self.phrases(tokens, sentence, rng) if phrases is None else phrases
        spans = [span for _, found in chosen for span in found]
        with corpora.nltk_data(self.data_dir):
            raw = augment([[t, False] for t in tokens], how, self.cfg, rng)
            masked = augment(mask_units(tokens, spans, self.cfg["mask_unit"], self.encoder.tokenizer), how, self.cfg, rng)
        target = f" {self.encoder.tokenizer.sep_token} ".join(text for text, _ in chosen) if chosen else None
        return text_of(raw), text_of(masked), target

    def collate(self, examples):
        rng = random.Random(int(torch.randint(2 ** 31, (1,))))  # from the torch RNG the trainer checkpoints
        sentences = [e[0] for e in examples] if self.supervised else list(examples)
        prepared = [self.views(s, rng) for s in sentences]
        view1, view2, targets = (list(x) for x in zip(*prepared))
        return self.tensors(view1, view2, targets, [e[1:] for e in examples] if self.supervised else None,
                            anchors=sentences if self.supervised and self.cfg["augment"] != "none" else None)

    def tensors(self, view1, view2, targets, pairs=None, anchors=None) -> dict:
        """Tokenised views (rows: view 1, view 2 [, entailment, contradiction, raw premise]) and decoder
        inputs/labels; labels are -100 for a sentence without target or with a view of >= max_len tokens."""
        tok, max_len = self.encoder.tokenizer, self.cfg["max_len"]
        rows = view1 + view2
        if pairs is not None:
            rows += [p for p, _ in pairs] + [n for _, n in pairs] + (anchors or [])
        batch = self.encoder.tokenize(rows, max_len)
        lengths = [len(ids) for ids in tok(view1 + view2)["input_ids"]]
        bs = len(view1)
        usable = [t is not None and lengths[i] < max_len and lengths[bs + i] < max_len for i, t in enumerate(targets)]
        target = tok([t or "" for t in targets], padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        decoder_input, labels = decoder_inputs(target["input_ids"], tok.pad_token_id)
        labels[~torch.tensor(usable)] = -100
        batch["decoder_input_ids"], batch["labels"] = decoder_input.to(self.encoder.device_type), labels.to(self.encoder.device_type)
        return batch

    # -- model ------------------------------------------------------------------------------------------------
    def memory(self, z1, z2):
        return decoding_signal(z1, z2, self.cfg["signal"], self.cfg["m"], self.cfg["n"], self.projection)

    def decode(self, memory: torch.Tensor, decoder_input_ids: torch.Tensor) -> torch.Tensor:
        """Next-token logits (bs, T, vocab): the shared embedding module feeds the decoder, the MLM head reads it."""
        embeds = self.encoder.model.embeddings(input_ids=decoder_input_ids)
        out = self.decoder(inputs_embeds=embeds, encoder_hidden_states=memory, use_cache=False).last_hidden_state
        return self.lm_head(out)

    def generative_loss(self, memory, batch) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean cross-entropy over the target tokens of the batch (0 if none), number of correct tokens)."""
        logits = self.decode(memory, batch["decoder_input_ids"]).float()
        labels = batch["labels"]
        chosen = labels != -100
        if not chosen.any():
            return logits.sum() * 0.0, torch.zeros(())
        correct = (logits[chosen].argmax(-1) == labels[chosen]).sum()
        return F.cross_entropy(logits[chosen], labels[chosen]), correct

    def loss(self, batch):
        bs = len(batch["labels"])
        enc = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in batch}
        z = self.encoder.embed(enc, pooler=self.cfg["pooler"])
        z1, z2 = z[:bs], z[bs:2 * bs]
        generative, _ = self.generative_loss(self.memory(z1, z2), batch)
        terms = {"loss_generative": generative}
        if self.supervised:
            anchor = z[4 * bs:5 * bs] if len(z) == 5 * bs else z1
            terms["loss_contrastive"] = info_nce(anchor, z[2 * bs:3 * bs], self.cfg["temperature"],
                                                 extra_negatives=z[3 * bs:4 * bs])
            terms["loss"] = terms["loss_contrastive"] + self.cfg["alpha"] * generative
            return terms
        total = generative
        if self.cfg["mlm_weight"]:
            view1 = {k: v[:bs] for k, v in enc.items()}
            terms["loss_mlm"] = mlm_loss(self.encoder, self.lm_head, view1, self.cfg["mlm_probability"])
            total = total + self.cfg["mlm_weight"] * terms["loss_mlm"]
        if self.cfg["contrastive_weight"]:
            terms["loss_contrastive"] = info_nce(z1, z2, self.cfg["temperature"])
            total = total + self.cfg["contrastive_weight"] * terms["loss_contrastive"]
        terms["loss"] = total
        return terms

    # -- evaluation ---------------------------------------------------------------------------------------------
    @torch.no_grad()
    def reconstruction_metrics(self) -> dict:
        """Held-out reconstruction: the first `recon_dev_sentences` distinct STS-B dev sentences, phrases
        masked with a fixed seed and no augmentation; teacher-forced decoder loss and token accuracy."""
        from ..data.sts import load_split

        if not hasattr(self, "_recon_batch"):
            pairs = load_split("STSBenchmark", "dev", self.data_dir)
            sentences = list(dict.fromkeys(pairs.sent1))[: self.cfg["recon_dev_sentences"]]
            rng = random.Random(0)
            view1, view2, targets = (list(x) for x in zip(*[self.views(s, rng, how="none") for s in sentences]))
            self._recon_batch = self.tensors(view1, view2, targets)
        was_training = self.training
        self.eval()
        batch, bs = self._recon_batch, len(self._recon_batch["labels"])
        z = self.encoder.embed({k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in batch},
                               pooler=self.cfg["pooler"])
        loss, correct = self.generative_loss(self.memory(z[:bs], z[bs:2 * bs]), batch)
        self.train(was_training)
        tokens = int((batch["labels"] != -100).sum())
        return {"recon_loss": float(loss), "recon_accuracy": 100 * float(correct) / max(tokens, 1), "recon_tokens": tokens}

    def dev_metrics(self):
        return {**super().dev_metrics(), **self.reconstruction_metrics()}

    @torch.no_grad()
    def reconstruct(self, sentence: str, phrase: str, max_tokens: int = 12) -> dict:
        """Table 7: greedy decoding of the masked phrase from the sentence and its masked copy."""
        tokens = words(sentence)
        spans = occurrences(tokens, " ".join(words(phrase)))
        raw, masked, _ = self.views(sentence, random.Random(0), how="none", phrases=[(phrase, spans)])
        batch = self.encoder.tokenize([raw, masked])
        z = self.encoder.embed(batch, pooler=self.cfg["pooler"])
        memory = self.memory(z[:1], z[1:])
        tok = self.encoder.tokenizer
        ids = torch.tensor([[tok.cls_token_id]], device=z.device)
        for _ in range(max_tokens):
            next_id = self.decode(memory, ids)[0, -1].argmax()
            if int(next_id) == tok.sep_token_id:
                break
            ids = torch.cat([ids, next_id.view(1, 1)], dim=1)
        return {"sentence": sentence, "masked": masked, "phrase": phrase, "generated": tok.decode(ids[0, 1:].tolist())}

    def finish(self):
        final = super().finish()
        was_training = self.training
        self.eval()
        final["reconstructions"] = [self.reconstruct(s, p) for s, p in TABLE7]
        final["reconstruction"] = self.reconstruction_metrics()
        final["mlm_head_pretrained"] = self.lm_head_pretrained
        self.train(was_training)
        return final


def unsupervised_run(cfg: dict) -> dict:
    """The overrides of the unsupervised PaSeR run a supervised one starts from: same scale, PLM, seed,
    precision and PaSeR knobs (the supervised-only ones aside)."""
    own = {k: cfg[k] for k in Params.__dataclass_fields__ if k not in ("alpha", "init_from_unsup", "reuse_decoder")}
    return {"method": "paser", "scale": cfg["scale"], "model_name": cfg["model_name"], "seed": cfg["seed"],
            "precision": cfg["precision"], "device": cfg["device"], **own}


METHOD = PaSeR

#!/usr/bin/env bash
# Pack what a device call needs to fill the missing `cpu` records on a GPU (scripts/fill_records.py), into devrun/
# (ignored by git through .git/info/exclude, never committed): the plan of missing runs, written here where the
# committed records are, and every data file the runs and their kept-weight evaluations read (STS, SICK, SNLI,
# the wiki sample, BookCorpus counts, Quora, NLTK's wordnet/stopwords/treebank/conll2000/punkt). Then, in the call,
# carry devrun/ (a device call copies the tracked tree, 64 MiB at most, so the record folders it does not need are
# moved aside here first: `mkdir -p ../aside && mv results/<kind> ../aside/` for all but fingerprints/):
#
#   tar -xJf devrun/data.tar.xz -C devrun && SRE_REPRO_DATA=devrun/data HF_HUB_OFFLINE=1 \
#     python scripts/fill_records.py run --workers 14 --jobs devrun/jobs.json --launch-until 420 --pack $OUT
#
# and untar $OUT/records.tar here afterwards (each record names its hardware; `records adopt` names them).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${SRE_REPRO_DATA:-data}
mkdir -p devrun
grep -qx "/devrun/" .git/info/exclude 2>/dev/null || echo "/devrun/" >> .git/info/exclude
.venv/bin/python scripts/fill_records.py plan --out devrun/jobs.json
base=$(basename "$DATA")
tar -cJf devrun/data.tar.xz --transform "s,^$base/,data/," -C "$(dirname "$DATA")" \
    "$base/senteval/downstream/STS" "$base/senteval/downstream/SICK" "$base/senteval/downstream/SNLI" "$base/wiki" \
    "$base/bookcorpus_token_counts" "$base/quora" "$base/nltk_data/corpora/wordnet" "$base/nltk_data/corpora/stopwords" \
    "$base/nltk_data/corpora/treebank" "$base/nltk_data/corpora/conll2000" "$base/nltk_data/tokenizers"
du -h devrun/*

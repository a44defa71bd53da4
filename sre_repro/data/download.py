"""Fetch the canonical data files for users with internet (never needed on the offline build machines).

Refuses at once, with a clear error, when downloads are off (HF_HUB_OFFLINE=1, the default) or the
network is unreachable. Every fetched file that `SHA256SUMS` lists is verified after download.
"""
from __future__ import annotations

import os
import tarfile
import tempfile
import urllib.request
from pathlib import Path

from ..errors import SreError
from ..settings import readable_mode
from .paths import check, manifest

URLS = {
    "senteval": "https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main/senteval.tar",
    "wiki": "https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt",
    "bookcorpus": "https://raw.githubusercontent.com/wangbing1416/SLT-FAI/fd06c109/data/labels/bookcorpus/{name}",
}
NLTK_PACKAGES = ["wordnet", "stopwords", "punkt_tab", "brown", "abc", "webtext", "state_union", "inaugural",
                 "conll2000", "treebank", "movie_reviews"]


def _fetch(url: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, suffix=".part")
    os.close(fd)
    try:
        urllib.request.urlretrieve(url, tmp)
        os.chmod(tmp, readable_mode())  # mkstemp makes it 0600
        os.replace(tmp, dest)
    except OSError as exc:
        raise SreError(f"download of {url} failed ({exc}): check the network, or copy the files by hand "
                       "(see the data README)") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def download(data_dir, what: str = "all") -> None:
    if os.environ.get("HF_HUB_OFFLINE", "1") != "0":
        raise SreError("downloads are off (offline mode, HF_HUB_OFFLINE=1 by default): set HF_HUB_OFFLINE=0 to "
                       "download, or point --data-dir / SRE_REPRO_DATA at an existing copy of the data")
    root = Path(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    if what in ("all", "senteval"):
        tar = root / "senteval.tar"
        _fetch(URLS["senteval"], tar)
        with tarfile.open(tar) as t:
            t.extractall(root / "senteval" / "downstream", filter="data")
        tar.unlink()
    if what in ("all", "wiki"):
        _fetch(URLS["wiki"], root / "wiki" / "wiki1m_for_simcse.txt")
    if what in ("all", "bookcorpus"):
        for name in ("labels.json", "labels_sort.json"):
            _fetch(URLS["bookcorpus"].format(name=name), root / "bookcorpus_token_counts" / name)
    if what in ("all", "nltk"):
        import nltk
        for package in NLTK_PACKAGES:
            if not nltk.download(package, download_dir=str(root / "nltk_data"), quiet=True):
                raise SreError(f"nltk.download({package!r}) failed: check the network")
    _, corrupt, _ = check(root)
    if corrupt:
        raise SreError(f"{len(corrupt)} downloaded files differ from SHA256SUMS (first: {corrupt[0]}): "
                       "the source changed; report it")
    print(f"downloaded {what} into {root}; {len(manifest())} files known, run `sre-repro data check`")

"""sre_repro: faithful re-implementations of five unsupervised sentence-embedding papers on SimCSE."""
import importlib
import os
import sys
import warnings

# Offline by default: nothing downloads unless the user sets HF_HUB_OFFLINE=0 themselves.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("SRE_REPRO_PROGRESS") == "0":  # no bars at all: also transformers' "Loading weights" per model
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # read when huggingface_hub is first imported
    if "transformers" in sys.modules:  # imported first (a notebook's `from transformers import pipeline`)
        importlib.import_module("transformers.utils.logging").disable_progress_bar()
# tqdm.auto in a kernel without ipywidgets falls back to text bars; its warning about that is noise in the book.
warnings.filterwarnings("ignore", message="IProgress not found")

__version__ = "0.1.0"

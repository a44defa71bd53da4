# The two README commands: `make book` and `make test`. Everything else is what they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SCALE ?= cpu
# verdict_board last: it reads the verdicts the chapters write as they run
NOTEBOOKS := notation teaching 00_baselines 00b_stand_in_plm 01_simcse cpu_recipe sarcse byop pt_bert slt_fai paser 99_performance verdict_board
export HF_HUB_OFFLINE ?= 1
export SRE_REPRO_PROGRESS ?= 0

.PHONY: venv data book notebooks html test browser bench clean clean-all mathjax

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

venv: $(VENV)/.installed

# ./data -> ../shared/data when that exists and nothing else is at ./data
data:
	@if [ ! -e data ] && [ -d ../shared/data ]; then ln -s ../shared/data data; echo "linked data -> ../shared/data"; fi
	@if [ ! -e data ] && [ -z "$$SRE_REPRO_DATA" ]; then echo "no data dir: set SRE_REPRO_DATA or run '$(PY) -m sre_repro download --data-dir data'"; exit 1; fi

notebooks: venv data
	mkdir -p book/executed
	for nb in $(NOTEBOOKS); do \
	  $(VENV)/bin/papermill --cwd . -k python3 --no-progress-bar notebooks/$$nb.ipynb book/executed/$$nb.ipynb \
	    $$( [ $$nb = 99_performance ] || echo "-p scale $(SCALE)" ) || exit 1; \
	done

# MathJax from the npm registry into _vendor/ (not committed; the build copies it into the site), so the book's math renders without internet
MATHJAX_VERSION := 3.2.2
MATHJAX := _vendor/mathjax/es5/tex-mml-chtml.js
$(MATHJAX):
	rm -rf work/mathjax && mkdir -p work/mathjax _vendor/mathjax/es5/output _vendor/mathjax/es5/input/tex
	cd work/mathjax && npm pack --silent mathjax@$(MATHJAX_VERSION) >/dev/null && tar -xzf mathjax-$(MATHJAX_VERSION).tgz
	cp work/mathjax/package/LICENSE _vendor/mathjax/
	cp -r work/mathjax/package/es5/tex-mml-chtml.js work/mathjax/package/es5/ui work/mathjax/package/es5/a11y _vendor/mathjax/es5/
	cp -r work/mathjax/package/es5/output/chtml _vendor/mathjax/es5/output/
	cp -r work/mathjax/package/es5/input/tex/extensions _vendor/mathjax/es5/input/tex/

mathjax: $(MATHJAX)

html: venv mathjax
	$(VENV)/bin/jupyter-book build . --quiet

book: notebooks html
	@echo "book: $(CURDIR)/_build/html/index.html"

browser:
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

test: venv data browser mathjax
	$(PY) -m sre_repro records check
	$(PY) -m pytest -q

bench: venv data
	$(PY) -m sre_repro bench --out results/benchmark.json

# clean keeps work/'s training checkpoints and kept weights (hours of CPU at `cpu`); clean-all removes them too
clean:
	rm -rf _build book/executed work/executed work/probes work/mathjax _vendor/mathjax

clean-all: clean
	rm -rf work

"""Every notebook runs at smoke scale, the book builds from the executed copies, and headless Chromium
renders each chapter's tables and figures."""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from sre_repro.book import QUICK_CHAPTERS, QUICK_SKIPPED
from sre_repro.book import notebook_parameters as book_parameters
from sre_repro.chapters import board
from sre_repro.encoder import REPO_ROOT

# the verdict board last: it reads the verdicts the chapters write as they run
NOTEBOOKS = sorted((p.stem for p in (REPO_ROOT / "notebooks").glob("*.ipynb")), key=lambda n: (n == "verdict_board", n))
# chapter -> (tables, figures) it must render at least
EXPECTED = {"00_baselines": (4, 1), "00b_stand_in_plm": (7, 2), "01_simcse": (3, 2), "sarcse": (12, 2), "byop": (14, 4), "pt_bert": (14, 3), "slt_fai": (14, 7), "paser": (16, 3), "cpu_recipe": (4, 2),
            "99_performance": (4, 0), "verdict_board": (1, 1), "notation": (1, 0), "teaching": (1, 0)}


def test_notebooks_are_thin_sources():
    for name in NOTEBOOKS:
        raw = json.loads((REPO_ROOT / "notebooks" / f"{name}.ipynb").read_text())
        assert all("id" in c for c in raw["cells"]), f"{name}: a cell without an id (nbformat 4.5 requires them)"
        nb = nbformat.read(REPO_ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert "parameters" in code[0].metadata.get("tags", []), name
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), f"{name} has outputs"
        assert not any(re.search(r"^\s*(def|class)\s|lambda\b", c.source, re.M) for c in code), f"{name} defines functions"
    assert set(NOTEBOOKS) == set(EXPECTED)



def test_every_notation_entry_is_linked_from_a_chapter_and_every_link_has_an_entry():
    def markdown(name):
        nb = nbformat.read(REPO_ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")

    entries = re.findall(r"^\((notation-[\w-]+)\)=$", markdown("notation"), re.M)
    assert len(entries) >= 9  # encoder, InfoNCE, STS, dev, rule, engagement, geometry, effects, verdicts, scales
    chapters = {name: markdown(name) for name in NOTEBOOKS if name != "notation"}
    for entry in entries:
        assert any(f"<{entry}>" in text for text in chapters.values()), f"no chapter links {entry}"
    for name, text in chapters.items():
        for link in re.findall(r"<(notation-[\w-]+)>", text):
            assert link in entries, f"{name} links {link}, which the notation page does not define"


def _knobs(method: str | None = None) -> set[str]:
    """The `--set` keys a training command takes: of `method`, or (None) of any method."""
    from sre_repro.config import CommonConfig, field_types
    from sre_repro.methods import available, get_method

    return {k for m in ([method] if method else available()) for k in field_types(CommonConfig, get_method(m).Params)}


def test_every_parameter_and_notebook_an_exercise_names_exists():
    from sre_repro import book

    with_exercises = set()
    for name in NOTEBOOKS:
        nb = nbformat.read(REPO_ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        if "## Exercises" not in text:
            continue
        with_exercises.add(name)
        exercises = text.split("## Exercises", 1)[1]
        named = set(re.findall(r"-p (\w+)", exercises)) | set(re.findall(r'-y "(\w+):', exercises))
        unknown = named - set(book.notebook_parameters(name))
        assert not unknown, f"{name}'s exercises name parameters it does not declare: {sorted(unknown)}"
        for command in re.findall(r"`([^`]*--set [^`]*)`", exercises):  # a training command's knobs
            method = re.search(r"--method (\w+)", command)
            unknown = set(re.findall(r"--set (\w+)=", command)) - _knobs(method and method.group(1))
            assert not unknown, f"{name}'s exercise command `{command}` sets unknown knobs {sorted(unknown)}"
        for notebook in re.findall(r"notebooks/(\w+)\.ipynb", exercises):
            assert notebook == name, f"{name}'s exercises run notebooks/{notebook}.ipynb"
    assert with_exercises == set(QUICK_CHAPTERS), "every chapter (and only a chapter) ends with exercises"

# Seconds each chapter took at smoke scale, quick mode and then in full, in the two lanes below on the 2-core
# machine (to balance the lanes)
SMOKE_SECONDS = {"slt_fai": 154, "paser": 153, "sarcse": 128, "byop": 116, "cpu_recipe": 85, "pt_bert": 67, "01_simcse": 51,
                 "00b_stand_in_plm": 35, "00_baselines": 22, "notation": 10, "99_performance": 9, "teaching": 9}


def _lanes(names: list[str]) -> list[list[str]]:
    """Two lists of about equal work, longest first (a chapter not in SMOKE_SECONDS counts a minute)."""
    lanes, work = [[], []], [0, 0]
    for name in sorted(names, key=lambda n: -SMOKE_SECONDS.get(n, 60)):
        lane = work.index(min(work))
        lanes[lane].append(name)
        work[lane] += SMOKE_SECONDS.get(name, 60)
    return lanes


def _execute(names: list[str], root: Path, store: Path, threads: str | None = None) -> None:
    env = {**os.environ, "SRE_REPRO_RESULTS": str(store / "results"), "SRE_REPRO_WORK": str(store / "work"),
           **({"OMP_NUM_THREADS": threads} if threads else {})}
    bin_dir = Path(sys.executable).parent
    for name in names:
        params = [] if name == "99_performance" else ["-p", "scale", "smoke"]
        runs = [(root / "book/executed", params)]
        if name in QUICK_CHAPTERS:  # quick mode first, from an empty store; the full run then reads its runs
            runs.insert(0, (root / "quick", [*params, "-p", "quick", "True"]))
        for folder, given in runs:
            subprocess.run([bin_dir / "papermill", "--cwd", REPO_ROOT, "-k", "python3", "--no-progress-bar",
                            REPO_ROOT / "notebooks" / f"{name}.ipynb", folder / f"{name}.ipynb", *given],
                           check=True, capture_output=True, timeout=900, env=env)
            if folder.name == "quick":  # what reached the verdict board's folder in quick mode: nothing
                verdicts = sorted(p.name for p in (store / "results" / "verdicts").glob(f"{name}.*"))
                (folder / f"{name}.verdicts.json").write_text(json.dumps(verdicts))


@pytest.fixture(scope="module")
def built_book(tmp_path_factory):
    root = tmp_path_factory.mktemp("book")
    for rel in ("_config.yml", "_toc.yml", "book/intro.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / rel, root / rel)
    shutil.copytree(REPO_ROOT / "_static", root / "_static")  # the book's CSS and its table script
    if not (REPO_ROOT / "_vendor/mathjax").is_dir():
        pytest.fail("_vendor/mathjax is missing: `make mathjax` fetches it (make test does)")
    shutil.copytree(REPO_ROOT / "_vendor", root / "_vendor")
    (root / "book/executed").mkdir()
    (root / "quick").mkdir()
    # module-scoped: created before the per-test store fixture, so the notebooks get stores of their own. The
    # chapters run in two lanes at once, one thread each, each with its own store (no two processes ever train
    # the same run in one folder): small models gain little from a second thread, so two lanes nearly halve
    # the wall time. The verdict board then reads the verdicts of both.
    lanes = _lanes([n for n in NOTEBOOKS if n != "verdict_board"])
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(_execute, lanes, [root] * 2, [root / f"lane{i}" for i in range(2)], ["1"] * 2))
    for lane in range(2):
        shutil.copytree(root / f"lane{lane}" / "results", root / "store" / "results", dirs_exist_ok=True)
    _execute(["verdict_board"], root, root / "store")
    bin_dir = Path(sys.executable).parent
    subprocess.run([bin_dir / "jupyter-book", "build", root, "--quiet"], check=True, capture_output=True, timeout=900)
    return root


def test_executed_notebooks_have_results_and_no_errors(built_book):
    for name in NOTEBOOKS:
        nb = nbformat.read(built_book / "book/executed" / f"{name}.ipynb", as_version=4)
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        assert not [o for o in outputs if o.output_type == "error"], name
        html_tables = sum("<table" in o.get("data", {}).get("text/html", "") for o in outputs)
        images = sum("image/png" in o.get("data", {}) for o in outputs)
        tables, figures = EXPECTED[name]
        assert html_tables >= tables and images >= figures, (name, html_tables, images)
        if name != "99_performance":
            assert any("Scale: smoke" in o.get("text", "") for o in outputs), f"{name} prints no scale line"
        # absolute scores of different PLMs are never subtracted: effects are compared instead (report.paper_effect)
        shown = " ".join(o.get("text", "") + o.get("data", {}).get("text/html", "") + o.get("data", {}).get("text/plain", "")
                         for o in outputs)
        assert not re.search(r"\s[−-]\s+paper\b", shown), f"{name} prints an 'ours - paper' difference"


def test_every_chapter_runs_in_quick_mode_labelled_and_without_verdicts(built_book):
    assert set(QUICK_CHAPTERS) == {n for n in NOTEBOOKS if "quick" in book_parameters(n)}, "a chapter without quick"
    for name in QUICK_CHAPTERS:
        nb = nbformat.read(built_book / "quick" / f"{name}.ipynb", as_version=4)
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        texts = " ".join(o.get("text", "") for o in outputs)
        assert not [o for o in outputs if o.output_type == "error"], name
        assert "QUICK MODE" in texts and "seeds 42," not in texts, f"{name}: quick results unlabelled, or on two seeds"
        if name != "00_baselines":  # the chapters that judge claims skip their verdicts, and the others' sections
            assert texts.count(QUICK_SKIPPED) >= 3, name
        assert json.loads((built_book / "quick" / f"{name}.verdicts.json").read_text()) == [], f"{name} saved verdicts"


def _claims_in_verdict_tables(notebook: Path) -> list[tuple[str, str]]:
    """(claim, the row's HTML) of every row of every HTML table with a "claim" and a "verdict" column."""
    nb = nbformat.read(notebook, as_version=4)
    found = []
    for output in (o for c in nb.cells if c.cell_type == "code" for o in c.outputs):
        for table in re.findall(r"<table.*?</table>", output.get("data", {}).get("text/html", ""), re.S):
            head = [html.unescape(re.sub(r"<[^>]+>", "", h)).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", table.split("</thead>")[0], re.S)]
            if "claim" not in head or "verdict" not in head:
                continue
            for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S):
                index_cells = len(re.findall(r"<th", row))  # a DataFrame's index comes first, as <th>
                cells = [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
                found.append((cells[head.index("claim") - index_cells], row))
    return found


def test_verdict_board_lists_every_claim_the_chapters_judge(built_book):
    executed = built_book / "book/executed"
    on_board = [(claim, re.search(r'href="(\w+)\.html#', row)[1] if "href" in row else "pending")
                for claim, row in _claims_in_verdict_tables(executed / "verdict_board.ipynb")]
    judging = {name for name in NOTEBOOKS if name != "verdict_board" and _claims_in_verdict_tables(executed / f"{name}.ipynb")}
    assert judging == set(board.CHAPTERS), "a chapter with a verdict table is missing from chapters/board.py"
    for name in judging:
        claims = {claim for claim, _ in _claims_in_verdict_tables(executed / f"{name}.ipynb")}
        listed = [claim for claim, chapter in on_board if chapter == name]
        assert sorted(listed) == sorted(claims), name
    # every chapter that declares its claims wrote a row for each, and each row passes the audit (a type, the
    # detectable effect, a word of the board's, a headline verdict only on enough seeds)
    for name in (n for n in board.CHAPTERS if board.declared(n)):
        rows = json.loads((built_book / "store/results/verdicts" / f"{name}.smoke.json").read_text())
        assert [row["id"] for row in rows] == list(board.declared(name)), name
        assert board.audit(rows) == [], name


def _chromium(*args):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed: `make test` installs Debian's chromium (make browser)")
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                               "--disable-component-update", "--disable-sync", "--no-first-run",
                               f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_browser_renders_tables_and_figures(built_book, name):
    page = built_book / "_build/html/book/executed" / f"{name}.html"
    dom = _chromium("--virtual-time-budget=3000", "--dump-dom", page.as_uri()).stdout
    tables, figures = EXPECTED[name]
    assert len(re.findall(r"<table", dom)) >= tables, name
    assert len(re.findall(r"<img[^>]+src=\"[^\"]+\.png\"", dom)) >= figures, name
    assert "Traceback" not in dom and "{glue" not in dom
    # math renders offline (MathJax is bundled, nothing comes from a CDN): every math span holds MathJax's
    # output, and no raw LaTeX is left in the text a reader sees
    visible = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", dom, flags=re.S)
    math = len(re.findall(r'class="math', dom))
    assert len(re.findall(r"<mjx-container", dom)) >= math, (name, math)
    assert not re.search(r"\\(frac|mathrm|tau|cos)\b", visible), name


# measures every output table as Chromium lays the page out: its width, its output area's, and the prose cells
# (over 24 characters) that stay on one line
_LAYOUT_SCRIPT = """<script>window.addEventListener("load", () => {
  const tables = Array.from(document.querySelectorAll(".cell_output table")).map(t => ({
    cls: t.className, width: t.scrollWidth, room: (t.closest(".output") || t.parentElement).clientWidth,
    unwrapped: Array.from(t.querySelectorAll("td")).filter(
      d => d.textContent.trim().length > 24 && getComputedStyle(d).whiteSpace === "nowrap").length}));
  const out = document.createElement("pre"); out.id = "layout"; out.textContent = JSON.stringify(tables);
  document.body.appendChild(out);
});</script>"""


def _layout(page: Path, width: int) -> list[dict]:
    probe = page.with_name(f"_layout_{page.name}")  # beside the page, so its _static/ links resolve
    probe.write_text(page.read_text().replace("</body>", _LAYOUT_SCRIPT + "</body>"))
    try:
        dom = _chromium(f"--window-size={width},1000", "--virtual-time-budget=3000", "--dump-dom", probe.as_uri()).stdout
    finally:
        probe.unlink()
    return json.loads(html.unescape(re.search(r'<pre id="layout"[^>]*>(.*?)</pre>', dom, re.S).group(1)))


def test_verdict_tables_fit_the_page_and_prose_wraps(built_book):
    """At 1400 px the verdict board and every chapter's verdict table fit their column, so no verdict hides to the
    right; in every table a cell of prose wraps (_static/tables.js and book.css) while numbers keep one line."""
    for name in EXPECTED:
        tables = _layout(built_book / "_build/html/book/executed" / f"{name}.html", 1400)
        assert tables, name
        for table in tables:
            assert table["unwrapped"] == 0, (name, table)
            if {"verdicts", "verdict-board"} & set(table["cls"].split()):
                assert table["width"] <= table["room"], (name, table)
        # the fit is asserted on tables that are there: the board's, and a verdict table in every judging chapter
        if name == "verdict_board":
            assert "verdict-board" in tables[0]["cls"]
        if name in board.CHAPTERS:
            assert any("verdicts" in table["cls"].split() for table in tables), name


def test_browser_screenshot_of_the_front_page(built_book, tmp_path):
    shot = tmp_path / "index.png"
    _chromium(f"--screenshot={shot}", "--window-size=1280,1400", (built_book / "_build/html/book/intro.html").as_uri())
    assert shot.stat().st_size > 20_000
    dom = _chromium("--dump-dom", (built_book / "_build/html/book/intro.html").as_uri()).stdout
    for chapter in ("Verdicts: which claims hold?", "Baselines", "SimCSE", "Appendix: performance"):
        assert chapter in dom
    # the landing page's one line per paper, read from the board
    assert "headline “unsup SimCSE beats the PLM’s raw [CLS]”" in html.unescape(dom) or \
        'headline "unsup SimCSE beats the PLM\'s raw [CLS]"' in html.unescape(dom)

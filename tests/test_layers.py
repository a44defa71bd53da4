"""The library's layers (README, "Layout"): every import, also those inside functions, goes to the module's own
layer or below, the import graph has no circle, methods and chapters never import each other, and every method
file stays small enough to hold in one's head."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "sre_repro"
# bottom to top; a module not named here takes its folder's layer
LAYERS = [
    ["errors", "settings", "distributed", "packing", "protocol", "papers", "plots"],
    ["data"],
    ["encoder", "views", "masked_lm", "phrases", "eda", "generative", "evaluate"],
    ["methods"],
    ["config", "runs"],
    ["train"],
    ["evaluate.cached", "evaluate.discriminators", "fingerprints", "export", "bench", "report", "claims"],
    ["book", "chapters", "cli", "__main__", "__init__"],
]


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


def _layer(module: str) -> int:
    best = None
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > len(best[1])):
                best = (i, name)
    assert best is not None, f"sre_repro.{module} is in no layer: add it to LAYERS and the README"
    return best[0]


def _imports() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (relative, absolute, inside functions; get_method's importlib too)."""
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".") if package else []
                    base = base[: len(base) - node.level + 1]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                elif (node.module or "").startswith("sre_repro"):
                    target = node.module.removeprefix("sre_repro").lstrip(".")
                else:
                    continue
                for alias in node.names:
                    full = f"{target}.{alias.name}".lstrip(".")
                    found.add(full if full in modules else target)
            elif isinstance(node, ast.Import):
                found |= {a.name.removeprefix("sre_repro.") for a in node.names if a.name.startswith("sre_repro.")}
        graph[name] = {m for m in found if m in modules and m != name}
    graph["methods"] |= {m for m in modules if m.startswith("methods.") and m != "methods.common"}
    return graph


def test_every_import_goes_to_its_own_layer_or_below():
    upward = [f"{a} -> {b}" for a, targets in _imports().items() for b in targets if _layer(b) > _layer(a)]
    assert upward == []


def test_the_import_graph_has_no_circle():
    graph, state, circles = _imports(), {}, []

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                circles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert circles == []


def test_methods_and_chapters_never_import_their_siblings():
    graph = _imports()
    shared = {"methods.common", "chapters.board"}
    for folder in ("methods", "chapters"):
        crossing = [f"{a} -> {b}" for a, targets in graph.items() if a.startswith(folder + ".")
                    for b in targets if b.startswith(folder + ".") and b not in shared]
        assert crossing == [], folder


def test_every_method_file_is_at_most_300_lines():
    long = {p.name: n for p in (PACKAGE / "methods").glob("*.py")
            if p.stem not in ("common", "__init__") and (n := len(p.read_text().splitlines())) > 300}
    assert long == {}
